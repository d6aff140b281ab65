-- A step per tool call, as adapters/postgres/migrations/0020: call is a
-- step's place among its iteration's steps, from 0, and part of its key.
-- SQLite cannot change a table's primary key, so the table is rebuilt.
CREATE TABLE task_steps_new (
    task_number INTEGER NOT NULL REFERENCES tasks (number),
    iteration   INTEGER NOT NULL,
    call        INTEGER NOT NULL DEFAULT 0 CHECK (call >= 0),
    thought     TEXT NOT NULL DEFAULT '',
    action      TEXT NOT NULL,
    params      TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(params)),
    result      TEXT NOT NULL DEFAULT '',
    success     INTEGER NOT NULL,
    error       TEXT NOT NULL DEFAULT '',
    progress    INTEGER NOT NULL,
    time        INTEGER,
    role        TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (task_number, iteration, call)
) STRICT;
INSERT INTO task_steps_new (task_number, iteration, call, thought, action, params, result, success, error, progress, time, role)
    SELECT task_number, iteration, 0, thought, action, params, result, success, error, progress, time, role FROM task_steps;
DROP TABLE task_steps;
ALTER TABLE task_steps_new RENAME TO task_steps;
