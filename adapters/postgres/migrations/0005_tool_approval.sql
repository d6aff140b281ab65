-- Tool approval (docs/security.md): the tool call a task asked a person to
-- approve, kept exactly as asked, and whether it was approved.
ALTER TABLE tasks
    ADD COLUMN approval_action  TEXT NOT NULL DEFAULT '',
    ADD COLUMN approval_params  TEXT NOT NULL DEFAULT '',
    ADD COLUMN approval_granted BOOLEAN NOT NULL DEFAULT FALSE;
