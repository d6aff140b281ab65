-- Task cards (docs/chat.md, TASKLOOM_NOTIFY_STYLE=card): the message that
-- shows a task in a room, posted once and edited in place at every flush.
-- message_id is the platform's (a Discord message ID, a Slack ts);
-- updated_at is when that message became the card.
CREATE TABLE task_cards (
    room        TEXT NOT NULL,
    task_number BIGINT NOT NULL,
    message_id  TEXT NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (room, task_number)
);
