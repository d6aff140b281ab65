-- Dependable runs (docs/tasks.md), as adapters/postgres/migrations/0003.
ALTER TABLE tasks ADD COLUMN waiting_on TEXT NOT NULL DEFAULT ''
    CHECK (waiting_on IN ('', 'answer', 'subtasks', 'approval'));
ALTER TABLE tasks ADD COLUMN next_attempt_at INTEGER;
ALTER TABLE tasks ADD COLUMN max_tokens INTEGER NOT NULL DEFAULT 0 CHECK (max_tokens >= 0);
ALTER TABLE tasks ADD COLUMN continues_number INTEGER REFERENCES tasks (number);

UPDATE tasks SET waiting_on = CASE
    WHEN EXISTS (SELECT 1 FROM tasks c WHERE c.parent_number = tasks.number) THEN 'subtasks'
    ELSE 'answer' END
WHERE status = 'waiting';
