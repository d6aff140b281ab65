-- The request each task was made for, once (PostgreSQL's 0026 says why).
CREATE TABLE task_origins (
    origin      TEXT PRIMARY KEY,
    task_number INTEGER NOT NULL REFERENCES tasks (number) ON DELETE CASCADE
) STRICT;
CREATE INDEX task_origins_task ON task_origins (task_number);
