-- Task cards, as adapters/postgres/migrations/0012: the message that
-- shows a task in a room, edited in place at every flush. updated_at is
-- in Unix microseconds.
CREATE TABLE task_cards (
    room        TEXT NOT NULL,
    task_number INTEGER NOT NULL,
    message_id  TEXT NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (room, task_number)
) STRICT;
