-- Dependable runs (docs/tasks.md): what a waiting task waits on, when a task
-- the model could not serve may be tried again, its token budget, and the
-- ended task a retry continues.
ALTER TABLE tasks
    ADD COLUMN waiting_on       TEXT NOT NULL DEFAULT ''
        CHECK (waiting_on IN ('', 'answer', 'subtasks', 'approval')),
    ADD COLUMN next_attempt_at  TIMESTAMPTZ,
    ADD COLUMN max_tokens       BIGINT NOT NULL DEFAULT 0 CHECK (max_tokens >= 0),
    ADD COLUMN continues_number BIGINT REFERENCES tasks (number);

-- Tasks that were waiting before waiting_on existed waited on an answer
-- or on subtasks; those with children that have not ended wait on them.
UPDATE tasks p SET waiting_on = CASE
    WHEN EXISTS (SELECT 1 FROM tasks c WHERE c.parent_number = p.number) THEN 'subtasks'
    ELSE 'answer' END
WHERE p.status = 'waiting';
