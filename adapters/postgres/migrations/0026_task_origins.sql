-- The request each task was made for (domain.NewTask.Origin: the chat
-- message, as its platform and ID, or the interaction), once: a second
-- create for the same origin — a message handled twice, after a lost
-- answer or by two replicas — makes no second task but finds the first.
CREATE TABLE task_origins (
    origin      TEXT PRIMARY KEY,
    task_number BIGINT NOT NULL REFERENCES tasks (number) ON DELETE CASCADE
);
CREATE INDEX task_origins_task ON task_origins (task_number);
