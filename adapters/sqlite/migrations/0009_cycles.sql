-- As adapters/postgres/migrations/0010: a task's iterations may reach three
-- times max_iterations (react counts it in cycles of three claims).
--
-- SQLite cannot alter a CHECK constraint, so the table's definition is
-- edited in place, as SQLite's documentation allows for loosening one
-- (every row meets the looser check): RESET reloads this connection's
-- schema, and the table created and dropped after it bumps the schema
-- cookie so that every other connection reloads it too.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
   SET sql = replace(sql, 'CONSTRAINT tasks_iteration_within_limit CHECK (iteration <= max_iterations)',
                          'CONSTRAINT tasks_iteration_within_limit CHECK (iteration <= 3 * max_iterations)')
 WHERE type = 'table' AND name = 'tasks';
PRAGMA writable_schema = RESET;
CREATE TABLE schema_cookie_bump (x INTEGER);
DROP TABLE schema_cookie_bump;
