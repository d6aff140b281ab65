-- The pace replicas sending as one bot share (PostgreSQL's 0025: the
-- tables pace_members and pace_rooms). A SQLite store is one process, one
-- replica: it paces alone and needs neither table. The migration is here
-- so that a number names one change on either store.
SELECT 1;
