-- The heads of the outbox's rooms (docs/PERFORMANCE.md, "Claiming a
-- room at 50,000 pending rows"): one row per room with pending
-- notifications, so that a room claim walks rooms in order instead of
-- grouping every pending row.
--
-- A head holds lower bounds of what its room's pending rows say, as
-- notification_rooms_derived derives them exactly: first_at and first_id,
-- the oldest creation time and the lowest ID (the order rooms are claimed
-- in); urgent_at and urgent_id, the same of its terminal rows, posts and
-- replies (NULL: none); hold_at, until when a live claim or a message
-- waiting for its retry holds the room; ready_at, when its first row is
-- due. Writes to notifications only ever lower a head (the triggers
-- below), so a head is never later than its room; the claim that visits a
-- room derives it exactly and writes it, raised, back (version guards that
-- write against a lowering it did not see). '-infinity' is "at once".
CREATE TABLE notification_rooms (
    room      TEXT PRIMARY KEY,
    first_at  TIMESTAMPTZ NOT NULL,
    first_id  BIGINT NOT NULL,
    urgent_at TIMESTAMPTZ,
    urgent_id BIGINT,
    hold_at   TIMESTAMPTZ NOT NULL,
    ready_at  TIMESTAMPTZ NOT NULL,
    version   BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX notification_rooms_first ON notification_rooms (first_at, first_id, room);
CREATE INDEX notification_rooms_urgent ON notification_rooms (urgent_at, urgent_id, room) WHERE urgent_at IS NOT NULL;

-- What each room's pending rows say, exactly: the head the claim writes.
CREATE VIEW notification_rooms_derived AS
SELECT room,
       min(coalesce(created_at, '-infinity')) AS first_at,
       min(id) AS first_id,
       min(coalesce(created_at, '-infinity')) FILTER (WHERE category IN ('terminal', 'message', 'reply')) AS urgent_at,
       min(id) FILTER (WHERE category IN ('terminal', 'message', 'reply')) AS urgent_id,
       greatest('-infinity'::timestamptz,
                max(claim_expires_at) FILTER (WHERE claimed_by <> ''),
                max(coalesce(next_attempt_at, '-infinity')) FILTER (WHERE delivery_key <> '')) AS hold_at,
       min(greatest(coalesce(next_attempt_at, '-infinity'),
                    CASE WHEN claimed_by <> '' THEN claim_expires_at END)) AS ready_at
FROM notifications
WHERE status = 'pending'
GROUP BY room;

-- New rows lower their room's head. The shared lock on the room (the one
-- a claim takes exclusively, adapters/postgres sqlLockRoom) keeps a claim
-- from raising the head past rows it cannot see yet; the common insert,
-- into a room whose head is already no later, writes nothing, so tasks
-- enqueueing into one room do not wait on each other.
CREATE FUNCTION notification_rooms_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(hashtextextended('taskloom.outbox.room:' || r.room, 0))
    FROM (SELECT DISTINCT room FROM new_rows WHERE status = 'pending' ORDER BY room) r;
    INSERT INTO notification_rooms AS h (room, first_at, first_id, urgent_at, urgent_id, hold_at, ready_at)
    SELECT n.room, n.first_at, n.first_id, n.urgent_at, n.urgent_id, '-infinity', n.ready_at
    FROM (SELECT room,
                 min(coalesce(created_at, '-infinity')) AS first_at,
                 min(id) AS first_id,
                 min(coalesce(created_at, '-infinity')) FILTER (WHERE category IN ('terminal', 'message', 'reply')) AS urgent_at,
                 min(id) FILTER (WHERE category IN ('terminal', 'message', 'reply')) AS urgent_id,
                 min(coalesce(next_attempt_at, '-infinity')) AS ready_at
          FROM new_rows WHERE status = 'pending' GROUP BY room) n
    WHERE NOT EXISTS (SELECT 1 FROM notification_rooms o
                      WHERE o.room = n.room AND o.first_at <= n.first_at AND o.first_id <= n.first_id
                        AND o.ready_at <= n.ready_at
                        AND (n.urgent_at IS NULL OR (o.urgent_at <= n.urgent_at AND o.urgent_id <= n.urgent_id)))
    ORDER BY n.room
    ON CONFLICT (room) DO UPDATE SET
        first_at = least(h.first_at, EXCLUDED.first_at), first_id = least(h.first_id, EXCLUDED.first_id),
        urgent_at = least(h.urgent_at, EXCLUDED.urgent_at), urgent_id = least(h.urgent_id, EXCLUDED.urgent_id),
        ready_at = least(h.ready_at, EXCLUDED.ready_at), version = h.version + 1;
    RETURN NULL;
END $$;

-- A claim ended (released, given back, failed) frees its room; a row that
-- becomes pending again, moves room, or is due earlier lowers its room's
-- head. Both bump version, so a claim's write of a head it derived before
-- them does not undo them.
CREATE FUNCTION notification_rooms_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE notification_rooms h SET hold_at = '-infinity', version = h.version + 1
    WHERE h.room IN (SELECT o.room FROM old_rows o JOIN new_rows n USING (id)
                     WHERE o.claimed_by <> '' AND (n.claimed_by = '' OR n.status <> 'pending' OR n.room <> o.room));
    INSERT INTO notification_rooms AS h (room, first_at, first_id, urgent_at, urgent_id, hold_at, ready_at)
    SELECT n.room, min(coalesce(n.created_at, '-infinity')), min(n.id),
           min(coalesce(n.created_at, '-infinity')) FILTER (WHERE n.category IN ('terminal', 'message', 'reply')),
           min(n.id) FILTER (WHERE n.category IN ('terminal', 'message', 'reply')),
           '-infinity', min(coalesce(n.next_attempt_at, '-infinity'))
    FROM new_rows n JOIN old_rows o USING (id)
    WHERE n.status = 'pending' AND n.claimed_by = ''
      AND (o.status <> 'pending' OR o.room <> n.room OR o.claimed_by <> ''
           OR n.next_attempt_at IS DISTINCT FROM o.next_attempt_at OR n.created_at IS DISTINCT FROM o.created_at)
    GROUP BY n.room
    ORDER BY n.room
    ON CONFLICT (room) DO UPDATE SET
        first_at = least(h.first_at, EXCLUDED.first_at), first_id = least(h.first_id, EXCLUDED.first_id),
        urgent_at = least(h.urgent_at, EXCLUDED.urgent_at), urgent_id = least(h.urgent_id, EXCLUDED.urgent_id),
        ready_at = least(h.ready_at, EXCLUDED.ready_at), version = h.version + 1;
    RETURN NULL;
END $$;

-- Claimed rows sent (deleted) free their room.
CREATE FUNCTION notification_rooms_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE notification_rooms h SET hold_at = '-infinity', version = h.version + 1
    WHERE h.room IN (SELECT room FROM old_rows WHERE claimed_by <> '' AND status = 'pending');
    RETURN NULL;
END $$;

CREATE TRIGGER notification_rooms_insert AFTER INSERT ON notifications
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION notification_rooms_insert();
CREATE TRIGGER notification_rooms_update AFTER UPDATE ON notifications
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION notification_rooms_update();
CREATE TRIGGER notification_rooms_delete AFTER DELETE ON notifications
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION notification_rooms_delete();

INSERT INTO notification_rooms (room, first_at, first_id, urgent_at, urgent_id, hold_at, ready_at)
SELECT room, first_at, first_id, urgent_at, urgent_id, hold_at, ready_at FROM notification_rooms_derived;
