-- Notifications delivered exactly once (docs/security.md). A notification is
-- pending or a dead letter (failed at failed_at, the reason in last_error)
-- until someone retries it (retried_at). Once a send of its message has
-- begun, the message has a name (delivery_key) that every later attempt,
-- by any replica, sends again, and sending_at says when the first attempt
-- began: the platform recognises a message an earlier attempt delivered.
ALTER TABLE notifications
    ADD COLUMN status       TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'failed')),
    ADD COLUMN failed_at    TIMESTAMPTZ,
    ADD COLUMN retried_at   TIMESTAMPTZ,
    ADD COLUMN delivery_key TEXT NOT NULL DEFAULT '',
    ADD COLUMN sending_at   TIMESTAMPTZ;

-- Only pending rows are ever due; dead letters are listed by ID.
DROP INDEX notifications_due;
CREATE INDEX notifications_due ON notifications (next_attempt_at, created_at, id) WHERE status = 'pending';
CREATE INDEX notifications_failed ON notifications (id) WHERE status = 'failed';
