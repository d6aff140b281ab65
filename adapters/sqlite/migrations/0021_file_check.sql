-- Nothing changes in SQLite: adapters/postgres/migrations/0021 adds a
-- function that checks a task's files in the database, to spare
-- PostgreSQL's commits a read of them. SQLite reads them in process, where
-- a read costs no round trip. The number is kept so that migration 0021
-- means one change on either store.
SELECT 1;
