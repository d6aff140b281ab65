-- Notifications delivered exactly once (docs/security.md), as
-- adapters/postgres/migrations/0004.
ALTER TABLE notifications ADD COLUMN status TEXT NOT NULL DEFAULT 'pending'
    CHECK (status IN ('pending', 'failed'));
ALTER TABLE notifications ADD COLUMN failed_at INTEGER;
ALTER TABLE notifications ADD COLUMN retried_at INTEGER;
ALTER TABLE notifications ADD COLUMN delivery_key TEXT NOT NULL DEFAULT '';
ALTER TABLE notifications ADD COLUMN sending_at INTEGER;

DROP INDEX notifications_due;
CREATE INDEX notifications_due ON notifications (next_attempt_at, created_at, id) WHERE status = 'pending';
CREATE INDEX notifications_failed ON notifications (id) WHERE status = 'failed';
