package sqlite

import (
	"encoding/json"
	"strings"

	"github.com/taskloom/taskloom/adapters/sqlstore"
)

// The SQL of the store, in one place. The schema is in migrations/. Lists
// (statuses, ids) are passed as one JSON array and read with json_each.

const sqlCreateMigrations = `
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
) STRICT`

const (
	sqlAppliedMigrations = `SELECT version FROM schema_migrations`
	sqlRecordMigration   = `INSERT INTO schema_migrations (version) VALUES (?)`
	sqlMigrationsExist   = `SELECT count(*) > 0 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'`
	sqlSchemaVersion     = `SELECT coalesce(max(version), 0) FROM schema_migrations`
)

// taskColumns are the columns of tasks, shared with adapters/postgres.
var taskColumns = sqlstore.TaskColumns

var (
	taskCols = strings.Join(taskColumns, ", ")

	sqlGetTask = `SELECT ` + taskCols + ` FROM tasks WHERE number = ?`

	// sqlInsertTask inserts every column but number, which SQLite assigns.
	sqlInsertTask = `INSERT INTO tasks (` + strings.Join(taskColumns[1:], ", ") + `)
VALUES (` + strings.TrimSuffix(strings.Repeat("?, ", len(taskColumns)-1), ", ") + `) RETURNING number`

	// sqlUpdateTask writes every column of a row; the number comes last.
	sqlUpdateTask = `UPDATE tasks SET ` + strings.Join(taskColumns[1:], " = ?, ") + ` = ? WHERE number = ?`

	sqlChildren = `SELECT ` + taskCols + ` FROM tasks WHERE parent_number = ? ORDER BY number`

	// sqlTaskByOrigin finds the task made for an origin; sqlInsertOrigin
	// records one, doing nothing when the origin has its task already.
	sqlTaskByOrigin = `SELECT task_number FROM task_origins WHERE origin = ?`
	sqlInsertOrigin = `INSERT INTO task_origins (origin, task_number) VALUES (?, ?) ON CONFLICT (origin) DO NOTHING`

	sqlCountActive = `SELECT count(*) FROM tasks WHERE requestor_id = ?
  AND status IN ('queued', 'running', 'paused', 'waiting')`

	// sqlClaimPick is the head of the queue: queued or running, no live
	// lease (?1 is now), never processed first, then by number, but for
	// task ?2 (0 for none: the task a claim with a commit commits). It reads
	// the partial index tasks_queue in order and stops at the first free
	// task. The planner would rather seek tasks_status and sort every
	// active task when few are active; INDEXED BY keeps the plan that
	// stays cheap when many are.
	sqlClaimPick = `SELECT ` + taskCols + ` FROM tasks INDEXED BY tasks_queue
WHERE status IN ('queued', 'running')
  AND (lease_expires_at IS NULL OR lease_expires_at <= ?1)
  AND (next_attempt_at IS NULL OR next_attempt_at <= ?1)
  AND number <> ?2
ORDER BY last_processed_at, number
LIMIT 1`

	// sqlClaimTask claims task ?4 for owner ?2 until ?3 (?1 is now),
	// taking a new fence token: the same statement as adapters/postgres,
	// keyed by number because the pick ran just before it in the same
	// IMMEDIATE transaction. It returns the columns it sets (the others
	// are as the pick read them).
	sqlClaimTask = `
UPDATE tasks
SET status = 'running',
    lease_owner = ?2,
    lease_expires_at = ?3,
    fence = fence + 1,
    started_at = COALESCE(started_at, ?1),
    event_seq = event_seq + 1
WHERE number = ?4 AND status IN ('queued', 'running')
  AND (lease_expires_at IS NULL OR lease_expires_at <= ?1)
  AND (next_attempt_at IS NULL OR next_attempt_at <= ?1)
RETURNING status, lease_owner, lease_expires_at, fence, started_at, event_seq`
)

const (
	sqlInsertEvent = `
INSERT INTO task_events (task_number, sequence, type, payload, actor, fence, time)
VALUES (?, ?, ?, ?, ?, ?, ?)`

	eventCols = sqlstore.EventColumns

	sqlTaskEvents = `SELECT ` + eventCols + ` FROM task_events
WHERE task_number = ? AND sequence > ? ORDER BY sequence`

	// A negative LIMIT is no limit.
	sqlEventsSince = `SELECT ` + eventCols + ` FROM task_events
WHERE id > ? ORDER BY id LIMIT ?`

	sqlInsertStep = `
INSERT INTO task_steps (` + sqlstore.StepColumns + `)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

	sqlSteps = `SELECT ` + sqlstore.StepColumns + ` FROM task_steps WHERE task_number = ? ORDER BY iteration, call`
)

const (
	memoryCols = sqlstore.MemoryColumns

	// sqlInsertMemory stores nothing for a message forgotten (its
	// platform's retry), nor for a reply to a message gone
	// (docs/memory.md, "Forgetting"). Writes are serial: no Forget runs
	// between the check and the insert.
	sqlInsertMemory = `
INSERT INTO memories (platform, message_id, room, workspace_id, author_id, author_name, text, from_bot, created_at, in_reply_to, scope)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11
WHERE NOT EXISTS (SELECT 1 FROM forgotten_messages f WHERE f.platform = ?1 AND f.message_id = ?2)
  AND (?10 = 0 OR EXISTS (SELECT 1 FROM memories a WHERE a.id = ?10))
ON CONFLICT (platform, message_id) WHERE message_id <> '' DO NOTHING
RETURNING ` + memoryCols

	sqlPruneMemories = `DELETE FROM memories WHERE created_at IS NULL OR created_at < ?`
	sqlPruneFacts    = `DELETE FROM facts WHERE created_at IS NULL OR created_at < ?`

	sqlMemoryByMessage = `SELECT ` + memoryCols + ` FROM memories WHERE platform = ? AND message_id = ?`

	// sqlRecentMemories reads newest first; the store reverses.
	sqlRecentMemories = `SELECT ` + memoryCols + ` FROM memories
WHERE room = ? ORDER BY created_at DESC NULLS LAST, id DESC LIMIT ?`
)

const (
	notificationCols = sqlstore.NotificationColumns

	sqlEnqueue = `
INSERT INTO notifications (room, task_number, category, payload, created_at, attempts, next_attempt_at, last_error)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
RETURNING ` + notificationCols

	// A notification is due when it is pending and its next attempt has
	// come, and claimable when nobody holds it or its claim has expired (?1
	// is now).
	notificationReady = `status = 'pending' AND (next_attempt_at IS NULL OR next_attempt_at <= ?1)
  AND (claimed_by = '' OR claim_expires_at <= ?1)`
)

// sqlMendRoomHeads gives each room with pending rows and no head a head
// due at once, as adapters/postgres's; Migrate runs it at every start.
const sqlMendRoomHeads = `
INSERT INTO notification_rooms (room, first_at, first_id, urgent_at, urgent_id, hold_at, ready_at)
SELECT room, first_at, first_id, urgent_at, urgent_id, -9223372036854775807, -9223372036854775807
FROM notification_rooms_derived d
WHERE NOT EXISTS (SELECT 1 FROM notification_rooms h WHERE h.room = d.room)
ON CONFLICT (room) DO NOTHING`

// The walks of the rooms' heads of a room claim (sqlstore.RoomWalk): ?1
// now, ?2 ?3 ?4 the key after which, ?5 a JSON array of platforms whose
// rooms are skipped; by the rooms' oldest rows, or by their urgent ones.
const (
	sqlWalkRooms = `
SELECT room, first_at, first_id FROM notification_rooms
WHERE hold_at <= ?1 AND ready_at <= ?1
  AND (first_at, first_id, room) > (?2, ?3, ?4)
  AND (?5 = '[]' OR substr(room, 1, instr(room || ':', ':') - 1) NOT IN (SELECT value FROM json_each(?5)))
ORDER BY first_at, first_id, room
LIMIT 8`
	sqlWalkUrgentRooms = `
SELECT room, urgent_at, urgent_id FROM notification_rooms
WHERE urgent_at IS NOT NULL AND hold_at <= ?1 AND ready_at <= ?1
  AND (urgent_at, urgent_id, room) > (?2, ?3, ?4)
  AND (?5 = '[]' OR substr(room, 1, instr(room || ':', ':') - 1) NOT IN (SELECT value FROM json_each(?5)))
ORDER BY urgent_at, urgent_id, room
LIMIT 8`

	// sqlRoomState reads whether room ?2 is to be claimed at now ?1, as
	// adapters/postgres's sqlClaimRoom: ?3 ?4 the key its head was walked
	// at (NULL ?3: any), ?5 whether by urgent rows, ?6 a JSON array of
	// categories, empty for any.
	sqlRoomState = `
SELECT coalesce((SELECT d.hold_at <= ?1 AND d.ready_at <= ?1
      AND (?3 IS NULL OR CASE WHEN ?5 THEN d.urgent_at = ?3 AND d.urgent_id = ?4
                             ELSE d.first_at = ?3 AND d.first_id = ?4 END)
    FROM notification_rooms_derived d WHERE d.room = ?2), 0)
  AND (?6 = '[]' OR EXISTS (SELECT 1 FROM notifications
    WHERE room = ?2 AND category IN (SELECT value FROM json_each(?6)) AND ` + notificationReady + `))`

	// sqlDropRoomHead and sqlWriteRoomHead write room ?1's head as its
	// rows derive it, or delete it when it has none pending. The writer is
	// alone: nothing lowers the head meanwhile.
	sqlDropRoomHead = `
DELETE FROM notification_rooms WHERE room = ?1
  AND NOT EXISTS (SELECT 1 FROM notifications WHERE room = ?1 AND status = 'pending')`
	sqlWriteRoomHead = `
INSERT INTO notification_rooms (room, first_at, first_id, urgent_at, urgent_id, hold_at, ready_at)
SELECT room, first_at, first_id, urgent_at, urgent_id, hold_at, ready_at FROM notification_rooms_derived WHERE room = ?1
ON CONFLICT (room) DO UPDATE SET first_at = excluded.first_at, first_id = excluded.first_id,
    urgent_at = excluded.urgent_at, urgent_id = excluded.urgent_id, hold_at = excluded.hold_at,
    ready_at = excluded.ready_at, version = version + 1`
)

const (
	sqlMarkSent      = `DELETE FROM notifications WHERE id IN (SELECT value FROM json_each(?1)) AND claimed_by = ?2`
	sqlMarkSentRooms = `SELECT DISTINCT room FROM notifications WHERE id IN (SELECT value FROM json_each(?1)) AND claimed_by = ?2`

	// sqlUpsertRoomProgress records progress ?3 of task ?2 as shown in room
	// ?1 by a message whose delta started from ?4 (domain.RoomProgress).
	sqlUpsertRoomProgress = `
INSERT INTO room_progress (room, task_number, progress) VALUES (?1, ?2, ?3)
ON CONFLICT (room, task_number) DO UPDATE SET progress = excluded.progress
WHERE excluded.progress > room_progress.progress OR room_progress.progress = ?4`

	sqlRelease = `
UPDATE notifications
SET claimed_by = '', claim_expires_at = NULL, attempts = attempts + 1,
    next_attempt_at = ?3, last_error = ?4
WHERE id IN (SELECT value FROM json_each(?1)) AND claimed_by = ?2`

	sqlGiveBack = `
UPDATE notifications SET claimed_by = '', claim_expires_at = NULL, next_attempt_at = ?3
WHERE id IN (SELECT value FROM json_each(?1)) AND claimed_by = ?2`

	// The row ?1 when nobody holds it and no send of it began.
	unclaimed = `id = ?1 AND claimed_by = '' AND status = 'pending' AND delivery_key = ''`

	sqlDropUnclaimed = `DELETE FROM notifications WHERE ` + unclaimed

	sqlDueUnclaimed = `UPDATE notifications SET next_attempt_at = ?2 WHERE ` + unclaimed

	// The rows of ids ?1 (a JSON array) that owner ?2 holds and has not
	// given up on.
	claimedBy = `id IN (SELECT value FROM json_each(?1)) AND claimed_by = ?2 AND status = 'pending'`

	sqlRenewClaim = `UPDATE notifications SET claim_expires_at = ?3 WHERE ` + claimedBy

	// sqlMarkSending keeps the first rendering of a message, as
	// adapters/postgres's does.
	sqlMarkSending = `
UPDATE notifications SET delivery_key = ?3, sending_at = coalesce(sending_at, ?4),
    rendered = CASE WHEN id = (SELECT min(value) FROM json_each(?1))
        AND NOT EXISTS (SELECT 1 FROM notifications WHERE id IN (SELECT value FROM json_each(?1)) AND rendered <> '')
        THEN ?5 ELSE rendered END
WHERE ` + claimedBy

	sqlFail = `
UPDATE notifications
SET status = 'failed', failed_at = ?3, last_error = ?4, attempts = attempts + 1,
    claimed_by = '', claim_expires_at = NULL
WHERE ` + claimedBy

	// sqlLockNotification reads a row: the IMMEDIATE transaction already
	// keeps every other writer out.
	sqlLockNotification = `SELECT ` + notificationCols + ` FROM notifications WHERE id = ?`

	sqlRetryNotification = `
UPDATE notifications
SET status = 'pending', attempts = 0, next_attempt_at = ?2, last_error = '', failed_at = NULL,
    retried_at = ?2, claimed_by = '', claim_expires_at = NULL
WHERE id = ?1
RETURNING ` + notificationCols

	// sqlListNotifications: ?1 a status or '' for any, ?2 the ID to start
	// after, ?3 the limit (-1: none).
	sqlListNotifications = `SELECT ` + notificationCols + ` FROM notifications
WHERE (?1 = '' OR status = ?1) AND id > ?2 ORDER BY id LIMIT ?3`

	sqlLastSent = `SELECT task_number, progress FROM room_progress
WHERE room = ? AND task_number IN (SELECT value FROM json_each(?))`

	sqlPending = `SELECT count(*) FROM notifications WHERE status = 'pending'`
)

// writeStatements are the statements the write transactions run, which
// the store prepares once.
var writeStatements = []string{
	sqlGetTask, sqlInsertTask, sqlUpdateTask, sqlCountActive, sqlChildren, sqlClaimPick, sqlClaimTask,
	sqlInsertEvent, sqlInsertStep, sqlEnqueue, sqlWalkRooms, sqlWalkUrgentRooms, sqlRoomState, sqlDropRoomHead, sqlWriteRoomHead, sqlClaimRoom, sqlMarkSent, sqlMarkSentRooms,
	sqlUpsertRoomProgress, sqlRelease, sqlGiveBack, sqlDropUnclaimed, sqlDueUnclaimed, sqlRenewClaim, sqlMarkSending, sqlFail,
	sqlLockNotification, sqlRetryNotification,
}

// jsonList encodes a list for json_each.
func jsonList[T any](v []T) string {
	if len(v) == 0 {
		return "[]"
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // strings and integers always encode
	}
	return string(b)
}

// sqlClaimRoom claims the ready notifications of room ?2 that
// sqlstore.ClaimRoomIDs picks, at most ?5 new ones, for owner ?3
// until ?4.
var sqlClaimRoom = `
UPDATE notifications SET claimed_by = ?3, claim_expires_at = ?4
WHERE id IN (` + sqlstore.ClaimRoomIDs(notificationReady, "?1", "?2", "?5") + `)
RETURNING ` + notificationCols
