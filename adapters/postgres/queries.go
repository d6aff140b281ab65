package postgres

import (
	"fmt"
	"strings"

	"github.com/taskloom/taskloom/adapters/sqlstore"
)

// The SQL of the store, in one place. The schema is in migrations/.

// migrationLockKey serializes Migrate across processes
// (pg_advisory_xact_lock). Any constant works; this one is "taskloom".
const migrationLockKey = 0x7461736b6c6f6f6d

const sqlCreateMigrations = `
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
)`

const (
	sqlMigrationLock     = `SELECT pg_advisory_xact_lock($1)`
	sqlAppliedMigrations = `SELECT version FROM schema_migrations`
	sqlRecordMigration   = `INSERT INTO schema_migrations (version) VALUES ($1)`
	sqlMigrationsExist   = `SELECT to_regclass('schema_migrations') IS NOT NULL`
	sqlSchemaVersion     = `SELECT coalesce(max(version), 0) FROM schema_migrations`
)

// taskColumns are the columns of tasks, shared with adapters/sqlite.
var taskColumns = sqlstore.TaskColumns

var (
	taskCols = strings.Join(taskColumns, ", ")

	sqlGetTask  = `SELECT ` + taskCols + ` FROM tasks WHERE number = $1`
	sqlLockTask = sqlGetTask + ` FOR UPDATE`

	// sqlInsertTask inserts every column but number, which the identity
	// assigns.
	sqlInsertTask = `INSERT INTO tasks (` + strings.Join(taskColumns[1:], ", ") + `)
VALUES (` + placeholders(1, len(taskColumns)-1) + `) RETURNING number`

	// sqlUpdateTask writes every column of a locked row ($1 is its number).
	sqlUpdateTask = `UPDATE tasks SET ` + assignments(taskColumns[1:], 2) + ` WHERE number = $1`

	// sqlUpdateTaskIfUnchanged is sqlUpdateTask on a row whose event_seq
	// is still $N (the last argument). On a row that changed it changes
	// nothing, and the transaction fails at its event: every change of a
	// row writes the event of its new event_seq, so the sequence this one
	// takes is taken. (A data-modifying CTE that failed on zero rows
	// itself cost half as much again as the statement.)
	sqlUpdateTaskIfUnchanged = sqlUpdateTask + ` AND event_seq = $` + fmt.Sprint(len(taskColumns)+1)

	sqlChildren = `SELECT ` + taskCols + ` FROM tasks WHERE parent_number = $1 ORDER BY number`

	sqlNow = `SELECT statement_timestamp()`

	// sqlTaskByOrigin finds the task made for an origin; sqlInsertOrigin
	// records one, doing nothing when the origin has its task already.
	sqlTaskByOrigin = `SELECT task_number FROM task_origins WHERE origin = $1`
	sqlInsertOrigin = `INSERT INTO task_origins (origin, task_number) VALUES ($1, $2) ON CONFLICT (origin) DO NOTHING`

	sqlCountActive = `SELECT count(*) FROM tasks WHERE requestor_id = $1
  AND status IN ('queued', 'running', 'paused', 'waiting')`

	// sqlLockRequestor serialises the creators of one requestor's tasks
	// until commit.
	sqlLockRequestor = `SELECT pg_advisory_xact_lock(hashtextextended('taskloom.requestor:' || $1, 0))`
)

// sqlClaimPick is the queue: the head task that is queued or running with
// no live lease ($1 is now). Its ORDER BY is the partial index tasks_queue,
// so the scan reads active tasks only.
const sqlClaimPick = `
SELECT number, status, lease_owner, lease_expires_at, started_at
FROM tasks
WHERE status IN ('queued', 'running')
  AND (lease_expires_at IS NULL OR lease_expires_at <= $1)
  AND (next_attempt_at IS NULL OR next_attempt_at <= $1)
ORDER BY last_processed_at NULLS FIRST, number
LIMIT 1
FOR UPDATE SKIP LOCKED`

// sqlClaimTask claims the head of the queue in one statement: $1 now, $2
// owner, $3 lease expiry. It returns the row after the claim, then the
// pre-claim values of the columns the claim sets, from which the store
// rebuilds the row before it for the "claimed" event.
var sqlClaimTask = `
UPDATE tasks AS t
SET status = 'running',
    lease_owner = $2,
    lease_expires_at = $3,
    fence = t.fence + 1,
    started_at = COALESCE(t.started_at, $1),
    event_seq = t.event_seq + 1
FROM (` + sqlClaimPick + `) AS old
WHERE t.number = old.number
RETURNING ` + qualified("t", taskColumns) + `,
    old.status AS old_status, old.lease_owner AS old_owner,
    old.lease_expires_at AS old_expiry, old.started_at AS old_started`

// sqlClaimWithEvent claims the head of the queue and writes the claim's
// "claimed" event in one statement, so that a claim is one round trip,
// committed on its own: $1 now, $2 owner, $3 lease expiry, $4
// eventFloorSpace. The event's payload is what domain.Claimed writes: the
// columns the claim changed, as encoding/json writes them; the store
// checks the two agree (sqlstore.Dialect's ClaimsAlone). The event takes its floor
// lock before its ID is drawn, as sqlInsertFirstEvent does. It returns
// what sqlClaimTask returns, then the event's payload and the claim's
// time.
var sqlClaimWithEvent = `
WITH claimed AS (` + sqlClaimTask + `),
event AS (
    INSERT INTO task_events (task_number, sequence, type, payload, actor, fence, time)
    SELECT c.number, c.event_seq, 'claimed',
        jsonb_build_object('changes', jsonb_strip_nulls(jsonb_build_object(
            'status', NULLIF(c.status, c.old_status),
            'lease_owner', NULLIF(c.lease_owner, c.old_owner),
            'lease_expires_at', CASE WHEN c.lease_expires_at IS DISTINCT FROM c.old_expiry
                THEN taskloom_json_time(c.lease_expires_at) END,
            'fence', c.fence,
            'started_at', CASE WHEN c.old_started IS NULL
                THEN taskloom_json_time(c.started_at) END))),
        $2, c.fence, $1::timestamptz
    FROM claimed AS c,
        (SELECT pg_advisory_xact_lock_shared($4::bigint | COALESCE(pg_sequence_last_value('task_events_id_seq'), 0))) AS floor
    RETURNING payload)
SELECT ` + qualified("c", taskColumns) + `, c.old_status, c.old_owner, c.old_expiry, c.old_started, e.payload,
    $1::timestamptz
FROM claimed AS c, event AS e`

// sqlClaimWithEventOnStoreClock is sqlClaimWithEvent at the server's
// clock: $1 owner, $2 the lease (an interval), $3 eventFloorSpace.
var sqlClaimWithEventOnStoreClock = strings.NewReplacer(
	"$1", "statement_timestamp()",
	"$2", "$1",
	"$3", "(statement_timestamp() + $2::interval)",
	"$4", "$3",
).Replace(sqlClaimWithEvent)

// Event IDs come from a sequence, so a transaction may commit an event
// with a higher ID before another commits a lower one. A reader resuming
// after the last ID it saw (EventsSince, the SSE stream) must not pass
// over the lower one while it is in flight. Writers do not wait for one
// another for this; readers stop short of what may still be in flight:
//
//   - sqlInsertFirstEvent: before a transaction draws its first event ID,
//     it takes a shared advisory lock (held to its end; shared locks never wait
//     for each other) whose key carries the sequence's last value at that
//     moment, its floor: every ID it draws is above its floor.
//   - sqlEventBound: a reader first reads the sequence's last value L, then
//     the lowest floor F among the locks held, then (sqlEventsSince, in a
//     later statement, so a later snapshot) the events with IDs up to
//     min(L, F). An event with such an ID was drawn before L was read
//     (ID <= L), by a transaction that was not holding its lock when F was
//     read (ID <= F, and its floor is below its ID): it had ended, so it is
//     in the snapshot if it committed. Nothing at or below the bound can
//     appear later, and a reader that resumes after any ID it was given
//     misses nothing.
//
// A reader waits at most for the writes in flight when it reads: the lock
// is taken in the transaction's last batch, just before its commit.
// (Before this, every event write took one exclusive advisory lock to its
// commit, so that IDs committed in order: writers waited for each other's
// commits, and more workers meant fewer iterations a second.)

// eventFloorSpace is the advisory key space of the floor locks: the high
// 16 bits of the key ("te"), the floor in the low 48.
const eventFloorSpace = 0x7465 << 48

const (
	// sqlEventBound returns L and F ($1 is eventFloorSpace; F is NULL
	// when no writer is in flight). The subquery refers to l.last, so it
	// runs after L is read (a subquery with a volatile function is not
	// pulled up).
	sqlEventBound = `
SELECT l.last, (
    SELECT min(((k.classid::bigint << 32) | k.objid::bigint) & ((1::bigint << 48) - 1))
    FROM pg_locks k
    WHERE k.locktype = 'advisory' AND k.objsubid = 1 AND l.last >= 0
      AND k.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND ((k.classid::bigint << 32) | k.objid::bigint) >> 48 = $1::bigint >> 48)
FROM (SELECT COALESCE(pg_sequence_last_value('task_events_id_seq'), 0) AS last) AS l`

	sqlInsertEvent = `
INSERT INTO task_events (task_number, sequence, type, payload, actor, fence, time)
VALUES ($1, $2, $3, $4, $5, $6, $7)`

	// sqlInsertFirstEvent is sqlInsertEvent after the floor lock, in one
	// statement ($8 is eventFloorSpace): the lock is taken as the row
	// source is read, before the ID's default (nextval) is computed for the
	// row it yields. (A subquery with a volatile function is neither pulled
	// up nor left out.)
	sqlInsertFirstEvent = `
INSERT INTO task_events (task_number, sequence, type, payload, actor, fence, time)
SELECT $1::bigint, $2::bigint, $3::text, $4::jsonb, $5::text, $6::bigint, $7::timestamptz
FROM (SELECT pg_advisory_xact_lock_shared($8::bigint | COALESCE(pg_sequence_last_value('task_events_id_seq'), 0)) AS locked) AS floor`

	eventCols = sqlstore.EventColumns

	sqlTaskEvents = `SELECT ` + eventCols + ` FROM task_events
WHERE task_number = $1 AND sequence > $2 ORDER BY sequence`

	// sqlEventsSince: $3 is the bound of sqlEventBound.
	sqlEventsSince = `SELECT ` + eventCols + ` FROM task_events
WHERE id > $1 AND id <= $3 ORDER BY id LIMIT $2`

	sqlInsertStep = `
INSERT INTO task_steps (` + sqlstore.StepColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`

	sqlSteps = `SELECT ` + sqlstore.StepColumns + ` FROM task_steps WHERE task_number = $1 ORDER BY iteration, call`
)

const (
	memoryCols = sqlstore.MemoryColumns

	// sqlInsertMemory stores nothing for a message forgotten (its
	// platform's retry), nor for a reply to a message gone: the key share
	// lock makes a Forget deleting that message wait for this reply, which
	// it then deletes too (docs/memory.md, "Forgetting").
	sqlInsertMemory = `
INSERT INTO memories (platform, message_id, room, workspace_id, author_id, author_name, text, from_bot, created_at, in_reply_to, scope)
SELECT $1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8::boolean, $9::timestamptz, $10::bigint, $11::text
WHERE NOT EXISTS (SELECT 1 FROM forgotten_messages f WHERE f.platform = $1 AND f.message_id = $2)
  AND ($10::bigint = 0 OR EXISTS (SELECT 1 FROM memories a WHERE a.id = $10 FOR KEY SHARE))
ON CONFLICT (platform, message_id) WHERE message_id <> '' DO NOTHING
RETURNING ` + memoryCols

	sqlPruneMemories = `DELETE FROM memories WHERE created_at IS NULL OR created_at < $1`
	sqlPruneFacts    = `DELETE FROM facts WHERE created_at IS NULL OR created_at < $1`

	sqlMemoryByMessage = `SELECT ` + memoryCols + ` FROM memories WHERE platform = $1 AND message_id = $2`

	// sqlRecentMemories reads newest first; the store reverses. A NULL
	// limit is no limit.
	sqlRecentMemories = `SELECT ` + memoryCols + ` FROM memories
WHERE room = $1 ORDER BY created_at DESC NULLS LAST, id DESC LIMIT $2`
)

const (
	notificationCols = sqlstore.NotificationColumns

	sqlEnqueue = `
INSERT INTO notifications (room, task_number, category, payload, created_at, attempts, next_attempt_at, last_error)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
RETURNING ` + notificationCols

	// A notification is due when it is pending and its next attempt has
	// come, and claimable when nobody holds it or its claim has expired ($1
	// is now).
	notificationReady = `status = 'pending' AND (next_attempt_at IS NULL OR next_attempt_at <= $1)
  AND (claimed_by = '' OR claim_expires_at <= $1)`
)

// The walks of the rooms' heads of a room claim (sqlstore.RoomWalk): $1
// now, $2 $3 $4 the key after which, $5 platforms whose rooms are
// skipped; by the rooms' oldest rows, or by their urgent ones.
var (
	sqlWalkRooms = `
SELECT room, first_at, first_id FROM notification_rooms
WHERE hold_at <= $1 AND ready_at <= $1
  AND (first_at, first_id, room) > ($2::timestamptz, $3::bigint, $4::text)
  AND split_part(room, ':', 1) <> ALL($5::text[])
ORDER BY first_at, first_id, room
LIMIT 8`
	sqlWalkUrgentRooms = `
SELECT room, urgent_at, urgent_id FROM notification_rooms
WHERE urgent_at IS NOT NULL AND hold_at <= $1 AND ready_at <= $1
  AND (urgent_at, urgent_id, room) > ($2::timestamptz, $3::bigint, $4::text)
  AND split_part(room, ':', 1) <> ALL($5::text[])
ORDER BY urgent_at, urgent_id, room
LIMIT 8`
)

const (
	// sqlWriteRoomHead writes room $1's head as its rows derive it, or
	// deletes it when it has none pending, when this transaction holds the
	// room's lock (sqlLockRoom), unless a write lowered the head after
	// this statement's snapshot: its version, then, is no longer the one
	// the snapshot read (NULL: there was no head).
	sqlWriteRoomHead = `
WITH d AS (SELECT * FROM notification_rooms_derived WHERE room = $1 AND ` + roomLocked + `),
v AS (SELECT version FROM notification_rooms WHERE room = $1),
gone AS (DELETE FROM notification_rooms WHERE room = $1 AND version = (SELECT version FROM v)
  AND NOT EXISTS (SELECT 1 FROM d) AND ` + roomLocked + `)
INSERT INTO notification_rooms AS h (room, first_at, first_id, urgent_at, urgent_id, hold_at, ready_at)
SELECT room, first_at, first_id, urgent_at, urgent_id, hold_at, ready_at FROM d
ON CONFLICT (room) DO UPDATE SET first_at = EXCLUDED.first_at, first_id = EXCLUDED.first_id,
    urgent_at = EXCLUDED.urgent_at, urgent_id = EXCLUDED.urgent_id, hold_at = EXCLUDED.hold_at,
    ready_at = EXCLUDED.ready_at, version = h.version + 1
WHERE h.version = (SELECT version FROM v)`
)

const (
	// sqlLockRoom tries to take room $1 for this transaction (another
	// sender claiming it right now holds it; an enqueue into it that is
	// committing holds it shared, notification_rooms_insert) and records
	// whether it did for roomLocked.
	sqlLockRoom = `SELECT set_config('taskloom.outbox_room',
  CASE WHEN pg_try_advisory_xact_lock(hashtextextended('taskloom.outbox.room:' || $1, 0)) THEN $1 ELSE '' END, true)`

	// sqlMarkSent deletes the rows sent and lists their rooms, whose heads
	// the sender then writes as their rows are left (txn.DeleteSent).
	sqlMarkSent = `WITH d AS (DELETE FROM notifications WHERE id = ANY($1) AND claimed_by = $2 RETURNING room)
SELECT count(*), coalesce(array_agg(DISTINCT room), '{}') FROM d`

	// sqlUpsertRoomProgress records progress $3 of task $2 as shown in room
	// $1 by a message whose delta started from $4 (domain.RoomProgress).
	sqlUpsertRoomProgress = `
INSERT INTO room_progress (room, task_number, progress) VALUES ($1, $2, $3)
ON CONFLICT (room, task_number) DO UPDATE SET progress = EXCLUDED.progress
WHERE EXCLUDED.progress > room_progress.progress OR room_progress.progress = $4`

	sqlRelease = `
UPDATE notifications
SET claimed_by = '', claim_expires_at = NULL, attempts = attempts + 1,
    next_attempt_at = $3, last_error = $4
WHERE id = ANY($1) AND claimed_by = $2`

	sqlGiveBack = `
UPDATE notifications SET claimed_by = '', claim_expires_at = NULL, next_attempt_at = $3
WHERE id = ANY($1) AND claimed_by = $2`

	// The row $1 when nobody holds it and no send of it began.
	unclaimed = `id = $1 AND claimed_by = '' AND status = 'pending' AND delivery_key = ''`

	sqlDropUnclaimed = `DELETE FROM notifications WHERE ` + unclaimed

	sqlDueUnclaimed = `UPDATE notifications SET next_attempt_at = $2 WHERE ` + unclaimed

	// The rows of ids $1 that owner $2 holds and has not given up on.
	claimedBy = `id = ANY($1) AND claimed_by = $2 AND status = 'pending'`

	sqlRenewClaim = `UPDATE notifications SET claim_expires_at = $3 WHERE ` + claimedBy

	// sqlMarkSending keeps the first rendering of a message: one row of
	// it (the lowest id) holds it, set only while none does.
	sqlMarkSending = `
UPDATE notifications SET delivery_key = $3, sending_at = COALESCE(sending_at, $4),
    rendered = CASE WHEN id = (SELECT min(id) FROM notifications WHERE id = ANY($1))
        AND NOT EXISTS (SELECT 1 FROM notifications WHERE id = ANY($1) AND rendered <> '')
        THEN $5 ELSE rendered END
WHERE ` + claimedBy

	sqlFail = `
UPDATE notifications
SET status = 'failed', failed_at = $3, last_error = $4, attempts = attempts + 1,
    claimed_by = '', claim_expires_at = NULL
WHERE ` + claimedBy

	sqlLockNotification = `SELECT ` + notificationCols + ` FROM notifications WHERE id = $1 FOR UPDATE`

	sqlRetryNotification = `
UPDATE notifications
SET status = 'pending', attempts = 0, next_attempt_at = $2, last_error = '', failed_at = NULL,
    retried_at = $2, claimed_by = '', claim_expires_at = NULL
WHERE id = $1
RETURNING ` + notificationCols

	// sqlListNotifications: $1 a status or '' for any, $2 the ID to start
	// after, $3 the limit (NULL: none).
	sqlListNotifications = `SELECT ` + notificationCols + ` FROM notifications
WHERE ($1 = '' OR status = $1) AND id > $2 ORDER BY id LIMIT $3`

	sqlLastSent = `SELECT task_number, progress FROM room_progress WHERE room = $1 AND task_number = ANY($2)`

	sqlPending = `SELECT count(*) FROM notifications WHERE status = 'pending'`
)

func placeholders(from, to int) string {
	p := make([]string, 0, to-from+1)
	for i := from; i <= to; i++ {
		p = append(p, fmt.Sprintf("$%d", i))
	}
	return strings.Join(p, ", ")
}

func assignments(cols []string, from int) string {
	a := make([]string, len(cols))
	for i, c := range cols {
		a[i] = fmt.Sprintf("%s = $%d", c, from+i)
	}
	return strings.Join(a, ", ")
}

func qualified(table string, cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = table + "." + c
	}
	return strings.Join(q, ", ")
}

// sqlMendRoomHeads gives each room with pending rows and no head (the
// table emptied by hand, say) a head that says it is due at once, which
// its first claim makes exact; Migrate runs it at every start. A head is
// never missing otherwise: the triggers write it with the rows.
const sqlMendRoomHeads = `
INSERT INTO notification_rooms (room, first_at, first_id, urgent_at, urgent_id, hold_at, ready_at)
SELECT room, first_at, first_id, urgent_at, urgent_id, '-infinity', '-infinity' FROM notification_rooms_derived d
WHERE NOT EXISTS (SELECT 1 FROM notification_rooms h WHERE h.room = d.room)
ON CONFLICT (room) DO NOTHING`

// roomLocked is true when this transaction took the lock of room $1
// (sqlLockRoom).
const roomLocked = `current_setting('taskloom.outbox_room', true) = $1`

// sqlClaimRoom claims the ready notifications of room $2 that
// sqlstore.ClaimRoomIDs picks, at most $5 new ones, for owner $3 until
// $4 (now $1), when this transaction holds the room's lock
// (sqlLockRoom) and, as the room's rows say after it
// (notification_rooms_derived), no live claim nor message waiting for
// its retry holds the room, a row is due, its order key is the one its
// head was walked at ($8 urgent or not, $6 $7; NULL $6: any) and, when
// categories $9 are given, one of its ready rows is of them.
var sqlClaimRoom = `
UPDATE notifications SET claimed_by = $3, claim_expires_at = $4
WHERE id IN (` + sqlstore.ClaimRoomIDs(notificationReady, "$1", "$2", "$5") + `)
  AND current_setting('taskloom.outbox_room', true) = $2
  AND EXISTS (SELECT 1 FROM notification_rooms_derived d WHERE d.room = $2 AND d.hold_at <= $1 AND d.ready_at <= $1
    AND ($6::timestamptz IS NULL OR CASE WHEN $8::boolean THEN (d.urgent_at, d.urgent_id) = ($6, $7::bigint)
                                        ELSE (d.first_at, d.first_id) = ($6, $7::bigint) END))
  AND (cardinality($9::text[]) = 0 OR EXISTS (SELECT 1 FROM notifications c
    WHERE c.room = $2 AND c.category = ANY($9::text[]) AND ` + notificationReady + `))
RETURNING ` + notificationCols
