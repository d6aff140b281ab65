package sqlstore

import (
	"context"
	"errors"
	"time"

	"github.com/taskloom/taskloom/plugin"
)

// ErrNoRows is what a Tx returns when the row it was asked for does not
// exist (or the queue is empty). Dialects translate their driver's own.
var ErrNoRows = errors.New("sqlstore: no rows")

// Dialect is what one database supplies to the shared logic.
type Dialect interface {
	// Write runs fn in a write transaction and commits if fn returns nil.
	// fn's error is returned unchanged, so errors.Is on a MutateFunc's
	// error still works.
	Write(ctx context.Context, fn func(Tx) error) error
}

// Tx is one write transaction, as small SQL-shaped operations. The write
// operations (UpdateTask, InsertEvent, InsertStep, Enqueue,
// SaveRoomProgress, PutFile, DeleteFile, CopyFiles) may be deferred and
// sent together before the commit; their errors then come from Write.
type Tx interface {
	// Now is the database's clock, which every replica shares: a claim
	// made without a time of its own is measured on it.
	Now(ctx context.Context) (time.Time, error)
	// LockTask reads a task and keeps other writers off it until the
	// transaction ends. ErrNoRows when it does not exist.
	LockTask(ctx context.Context, number int64) (plugin.Task, error)
	// LockRequestor keeps other creators of tasks for requestor waiting
	// until the transaction ends, so the count of their active tasks holds
	// until the insert commits.
	LockRequestor(ctx context.Context, requestor string) error
	// CountActive counts requestor's tasks that have not ended.
	CountActive(ctx context.Context, requestor string) (int, error)
	// Children lists the subtasks of parent, by number.
	Children(ctx context.Context, parent int64) ([]plugin.Task, error)
	// InsertTask inserts t (its Number is ignored) and returns the number
	// the database assigned.
	InsertTask(ctx context.Context, t plugin.Task) (int64, error)
	// UpdateTask writes t, a row this transaction locked, whose columns
	// were before's: a dialect may write only the columns that differ
	// (with a zero before, every column).
	UpdateTask(ctx context.Context, before, t plugin.Task) error
	InsertEvent(ctx context.Context, e plugin.TaskEvent) error
	InsertStep(ctx context.Context, s plugin.Step) error
	Enqueue(ctx context.Context, n plugin.Notification) error
	// MoveNotifications moves the notifications of task waiting for room
	// from that no sender holds and no send has begun on (no delivery key)
	// to room to; it says how many it moved.
	MoveNotifications(ctx context.Context, task int64, from, to string) (int64, error)

	// ReadyRooms lists rooms with a due notification that no sender
	// holds, the one waiting longest first: only room when it is set, only
	// rooms with one of categories when they are set.
	ReadyRooms(ctx context.Context, now time.Time, room string, categories []string) ([]string, error)
	// ClaimRoom claims the due notifications of room that ClaimRoomIDs
	// picks, with limit, for owner until until, unless another sender holds
	// the room or is claiming it at this moment (then it claims nothing
	// and returns none).
	ClaimRoom(ctx context.Context, room, owner string, now, until time.Time, limit int) ([]plugin.Notification, error)
	// DeleteSent deletes the rows of ids that owner still holds and says
	// how many it deleted.
	DeleteSent(ctx context.Context, owner string, ids []int64) (int64, error)
	SaveRoomProgress(ctx context.Context, p plugin.RoomProgress) error
	// SaveTaskCard records c as the card of its room and task, replacing
	// the one before.
	SaveTaskCard(ctx context.Context, c plugin.TaskCard) error
	// ReleaseClaimed gives the rows of ids that owner still holds back,
	// due again at retryAt, counting a failed attempt with reason; it says
	// how many it released.
	ReleaseClaimed(ctx context.Context, owner string, ids []int64, retryAt time.Time, reason string) (int64, error)
	// RenewClaimed moves the claim expiry of the pending rows of ids that
	// owner holds to until; it says how many it renewed.
	RenewClaimed(ctx context.Context, owner string, ids []int64, until time.Time) (int64, error)
	// MarkSending sets the delivery key of the pending rows of ids that
	// owner holds to key, and their sending time, where unset, to now;
	// rendered goes on the row of ids with the lowest id unless a row of
	// ids has a rendered message already. It says how many it marked.
	MarkSending(ctx context.Context, owner string, ids []int64, key string, now time.Time, rendered string) (int64, error)
	// FailClaimed makes the pending rows of ids that owner holds dead
	// letters, failed at now with reason, counting the attempt, and
	// releases them; it says how many it failed.
	FailClaimed(ctx context.Context, owner string, ids []int64, now time.Time, reason string) (int64, error)
	// LockNotification reads one notification and keeps other writers off
	// it until the transaction ends. ErrNoRows when it does not exist.
	LockNotification(ctx context.Context, id int64) (plugin.Notification, error)
	// RetryFailed sets notification id pending, due at now, unclaimed, its
	// attempts, error and failure time cleared and its retry time now, and
	// returns it.
	RetryFailed(ctx context.Context, id int64, now time.Time) (plugin.Notification, error)

	// TaskFiles lists the files of task, without their data, in any
	// order.
	TaskFiles(ctx context.Context, task int64) ([]plugin.TaskFile, error)
	// PutFile writes one file of task, replacing the one at its path.
	PutFile(ctx context.Context, task int64, f plugin.TaskFile, data []byte) error
	// DeleteFile deletes the file of task at path, if there is one.
	DeleteFile(ctx context.Context, task int64, path string) error
	// CopyFiles copies every file of task from into task to, in one
	// statement, keeping the files to already has.
	CopyFiles(ctx context.Context, from, to int64) error
}

// HeadClaimer is a Tx that claims with a statement of its own and leaves
// the claim's event to ClaimTask: a claim in the same transaction as its
// event, the claim statement's results checked before the commit. A Tx is
// a HeadClaimer or an EventClaimer.
type HeadClaimer interface {
	// ClaimHead claims the head of the fair queue for owner until until
	// (now is the claim's time) in the dialect's claim statement, passing
	// over task except (0 for none). It returns the row before and after
	// the claim; ErrNoRows when no task is ready.
	ClaimHead(ctx context.Context, owner string, now, until time.Time, except int64) (before, after plugin.Task, err error)
}

// EventClaimer is a Tx whose claim statement writes the claim's event
// itself and commits with it: a claim in one round trip, with nothing else
// in its transaction. ClaimTask then checks the row and the event against
// plugin.Claimed, as for a HeadClaimer; as the claim has committed by then, a
// disagreement (a defect of the statement) fails the claim and leaves the
// task leased to the claimer until its lease ends.
type EventClaimer interface {
	// ClaimWithEvent claims the head of the queue for cl.Owner, at cl.Now
	// or, with cl.StoreClock, at the database's clock (whole
	// microseconds), and writes the claim's event. It returns the row
	// before and after the claim, the event written and the claim's time;
	// ErrNoRows when no task is ready.
	ClaimWithEvent(ctx context.Context, cl plugin.Claim) (before, after plugin.Task, event plugin.TaskEvent, now time.Time, err error)
}

// AheadClaimer is an EventClaimer that can also claim in a transaction
// that writes (Core.UpdateTaskAndClaim): a worker's iteration and its next
// claim in one commit. ClaimAhead adds the claim to the transaction, as
// its first statement, if it can (nil when it cannot: the claim then
// follows the commit on its own). The function it returns tells, once
// Write has returned nil, what ClaimWithEvent would have; a claim that
// failed fails the transaction, which the dialect's Write may run again,
// or else returns its error from Write, the update with it.
type AheadClaimer interface {
	ClaimAhead(ctx context.Context, cl plugin.Claim) func() (ClaimResult, error)
}

// RowCache is a Tx that may know a task's row without reading it: the row
// as its dialect last claimed it. UpdateTask starts from that row rather
// than locking and reading it, one round trip fewer. The Tx then writes
// the row only if it has not changed since (its event_seq is the same, so
// no other change was written), and otherwise fails the transaction, which
// its dialect's Write runs again, with LockTask. The mutation written is
// therefore always computed from the current row; a MutateFunc may be
// called twice.
type RowCache interface {
	// CachedTask returns the row of number to write in this transaction,
	// if the Tx has one.
	CachedTask(number int64) (plugin.Task, bool)
}
