-- The heads of the outbox's rooms, as
-- adapters/postgres/migrations/0024, which says what each column holds.
-- Times are unix microseconds; -9223372036854775807 is "at once" (PostgreSQL's
-- '-infinity'). One writer at a time: a head needs no locks here.
CREATE TABLE notification_rooms (
    room      TEXT PRIMARY KEY,
    first_at  INTEGER NOT NULL,
    first_id  INTEGER NOT NULL,
    urgent_at INTEGER,
    urgent_id INTEGER,
    hold_at   INTEGER NOT NULL,
    ready_at  INTEGER NOT NULL,
    version   INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX notification_rooms_first ON notification_rooms (first_at, first_id, room);
CREATE INDEX notification_rooms_urgent ON notification_rooms (urgent_at, urgent_id, room) WHERE urgent_at IS NOT NULL;

CREATE VIEW notification_rooms_derived AS
SELECT room,
       min(coalesce(created_at, -9223372036854775807)) AS first_at,
       min(id) AS first_id,
       min(coalesce(created_at, -9223372036854775807)) FILTER (WHERE category IN ('terminal', 'message', 'reply')) AS urgent_at,
       min(id) FILTER (WHERE category IN ('terminal', 'message', 'reply')) AS urgent_id,
       max(-9223372036854775807,
           coalesce(max(claim_expires_at) FILTER (WHERE claimed_by <> ''), -9223372036854775807),
           coalesce(max(coalesce(next_attempt_at, -9223372036854775807)) FILTER (WHERE delivery_key <> ''), -9223372036854775807)) AS hold_at,
       min(CASE WHEN claimed_by <> '' THEN max(coalesce(next_attempt_at, -9223372036854775807), coalesce(claim_expires_at, -9223372036854775807))
                ELSE coalesce(next_attempt_at, -9223372036854775807) END) AS ready_at
FROM notifications
WHERE status = 'pending'
GROUP BY room;

-- New rows lower their room's head.
CREATE TRIGGER notification_rooms_insert AFTER INSERT ON notifications WHEN NEW.status = 'pending'
BEGIN
    INSERT INTO notification_rooms (room, first_at, first_id, urgent_at, urgent_id, hold_at, ready_at)
    VALUES (NEW.room, coalesce(NEW.created_at, -9223372036854775807), NEW.id,
            CASE WHEN NEW.category IN ('terminal', 'message', 'reply') THEN coalesce(NEW.created_at, -9223372036854775807) END,
            CASE WHEN NEW.category IN ('terminal', 'message', 'reply') THEN NEW.id END,
            -9223372036854775807, coalesce(NEW.next_attempt_at, -9223372036854775807))
    ON CONFLICT (room) DO UPDATE SET
        first_at = min(first_at, excluded.first_at), first_id = min(first_id, excluded.first_id),
        urgent_at = coalesce(min(urgent_at, excluded.urgent_at), urgent_at, excluded.urgent_at),
        urgent_id = coalesce(min(urgent_id, excluded.urgent_id), urgent_id, excluded.urgent_id),
        ready_at = min(ready_at, excluded.ready_at), version = version + 1;
END;

-- A claim ended (released, given back, failed, moved) frees its room.
CREATE TRIGGER notification_rooms_free AFTER UPDATE ON notifications
WHEN OLD.claimed_by <> '' AND (NEW.claimed_by = '' OR NEW.status <> 'pending' OR NEW.room <> OLD.room)
BEGIN
    UPDATE notification_rooms SET hold_at = -9223372036854775807, version = version + 1 WHERE room = OLD.room;
END;

-- A row that becomes pending again, moves room or is due earlier lowers
-- its room's head.
CREATE TRIGGER notification_rooms_lower AFTER UPDATE ON notifications
WHEN NEW.status = 'pending' AND NEW.claimed_by = ''
 AND (OLD.status <> 'pending' OR OLD.room <> NEW.room OR OLD.claimed_by <> ''
      OR NEW.next_attempt_at IS NOT OLD.next_attempt_at OR NEW.created_at IS NOT OLD.created_at)
BEGIN
    INSERT INTO notification_rooms (room, first_at, first_id, urgent_at, urgent_id, hold_at, ready_at)
    VALUES (NEW.room, coalesce(NEW.created_at, -9223372036854775807), NEW.id,
            CASE WHEN NEW.category IN ('terminal', 'message', 'reply') THEN coalesce(NEW.created_at, -9223372036854775807) END,
            CASE WHEN NEW.category IN ('terminal', 'message', 'reply') THEN NEW.id END,
            -9223372036854775807, coalesce(NEW.next_attempt_at, -9223372036854775807))
    ON CONFLICT (room) DO UPDATE SET
        first_at = min(first_at, excluded.first_at), first_id = min(first_id, excluded.first_id),
        urgent_at = coalesce(min(urgent_at, excluded.urgent_at), urgent_at, excluded.urgent_at),
        urgent_id = coalesce(min(urgent_id, excluded.urgent_id), urgent_id, excluded.urgent_id),
        ready_at = min(ready_at, excluded.ready_at), version = version + 1;
END;

-- Claimed rows sent (deleted) free their room.
CREATE TRIGGER notification_rooms_delete AFTER DELETE ON notifications
WHEN OLD.claimed_by <> '' AND OLD.status = 'pending'
BEGIN
    UPDATE notification_rooms SET hold_at = -9223372036854775807, version = version + 1 WHERE room = OLD.room;
END;

INSERT INTO notification_rooms (room, first_at, first_id, urgent_at, urgent_id, hold_at, ready_at)
SELECT room, first_at, first_id, urgent_at, urgent_id, hold_at, ready_at FROM notification_rooms_derived WHERE true;
