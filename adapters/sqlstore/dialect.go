package sqlstore

import (
	"context"
	"errors"
	"time"

	"github.com/taskloom/taskloom/domain"
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
	// ClaimsAlone says how the dialect's claim (Tx.ClaimHead) runs. False:
	// it claims in the transaction it is part of and writes the row only;
	// the shared logic writes the claim's event beside it, and a worker's
	// commit and its next claim share one transaction. True: its
	// statement writes the claim's event too and commits, alone in its
	// transaction (one round trip); a worker's next claim then joins the
	// commit only through AheadClaimer, and otherwise follows it.
	ClaimsAlone() bool
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
	LockTask(ctx context.Context, number int64) (domain.Task, error)
	// LockRequestor keeps other creators of tasks for requestor waiting
	// until the transaction ends, so the count of their active tasks holds
	// until the insert commits.
	LockRequestor(ctx context.Context, requestor string) error
	// CountActive counts requestor's tasks that have not ended.
	CountActive(ctx context.Context, requestor string) (int, error)
	// Children lists the subtasks of parent, by number.
	Children(ctx context.Context, parent int64) ([]domain.Task, error)
	// InsertTask inserts t (its Number is ignored) and returns the number
	// the database assigned.
	InsertTask(ctx context.Context, t domain.Task) (int64, error)
	// TaskByOrigin is the number of the task made for origin
	// (domain.NewTask.Origin), 0 when none is.
	TaskByOrigin(ctx context.Context, origin string) (int64, error)
	// InsertOrigin records that task number was made for origin, and
	// reports false, recording nothing, when another task was: one
	// committed, or (PostgreSQL) one whose transaction commits while this
	// insert waits for it.
	InsertOrigin(ctx context.Context, origin string, number int64) (bool, error)
	// UpdateTask writes t, a row this transaction locked, whose columns
	// were before's: a dialect may write only the columns that differ
	// (with a zero before, every column).
	UpdateTask(ctx context.Context, before, t domain.Task) error
	InsertEvent(ctx context.Context, e domain.TaskEvent) error
	InsertStep(ctx context.Context, s domain.Step) error
	Enqueue(ctx context.Context, n domain.Notification) error
	// MoveNotifications moves the notifications of task waiting for room
	// from that no sender holds and no send has begun on (no delivery key)
	// to room to; it says how many it moved.
	MoveNotifications(ctx context.Context, task int64, from, to string) (int64, error)

	// RoomHeads lists the next heads of a room claim's walk (RoomWalk), at
	// most a few of them, in order, with the key each was found at.
	RoomHeads(ctx context.Context, w RoomWalk) ([]RoomKey, error)
	// ClaimRoom claims the due notifications of room k.Room that
	// ClaimRoomIDs picks (RoomTake), unless another sender holds the room
	// or is claiming it at this moment, the room is not due, its head was
	// later than k says (k.At set), or no ready row is of t.Categories:
	// then it claims nothing and returns none. Either way it writes the
	// room's head as its rows derive it, when nothing lowered it
	// meanwhile.
	ClaimRoom(ctx context.Context, k RoomKey, t RoomTake) ([]domain.Notification, error)
	// DeleteSent deletes the rows of ids that owner still holds and says
	// how many it deleted.
	DeleteSent(ctx context.Context, owner string, ids []int64) (int64, error)
	// SaveRoomProgress records p unless it would move the room back
	// (domain.RoomProgress): it replaces a lower progress, or any when
	// the one recorded is p.From.
	SaveRoomProgress(ctx context.Context, p domain.RoomProgress) error
	// SaveTaskCard records c as the card of its room and task, replacing
	// the one before.
	SaveTaskCard(ctx context.Context, c domain.TaskCard) error
	// ReleaseClaimed gives the rows of ids that owner still holds back,
	// due again at retryAt, counting a failed attempt with reason; it says
	// how many it released.
	ReleaseClaimed(ctx context.Context, owner string, ids []int64, retryAt time.Time, reason string) (int64, error)
	// GiveBackClaimed gives the rows of ids that owner still holds back,
	// due again at due, with their attempts and last error unchanged; it
	// says how many it gave back.
	GiveBackClaimed(ctx context.Context, owner string, ids []int64, due time.Time) (int64, error)
	// SettleUnclaimed deletes row id when sent, else makes it due at due,
	// when nobody holds it and no send of it has begun; it says how many
	// rows it touched.
	SettleUnclaimed(ctx context.Context, id int64, sent bool, due time.Time) (int64, error)
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
	LockNotification(ctx context.Context, id int64) (domain.Notification, error)
	// RetryFailed sets notification id pending, due at now, unclaimed, its
	// attempts, error and failure time cleared and its retry time now, and
	// returns it.
	RetryFailed(ctx context.Context, id int64, now time.Time) (domain.Notification, error)

	// TaskFiles lists the files of task, without their data, in any
	// order.
	TaskFiles(ctx context.Context, task int64) ([]domain.TaskFile, error)
	// PutFile writes one file of task, replacing the one at its path.
	PutFile(ctx context.Context, task int64, f domain.TaskFile, data []byte) error
	// DeleteFile deletes the file of task at path, if there is one.
	DeleteFile(ctx context.Context, task int64, path string) error
	// CopyFiles copies every file of task from into task to, in one
	// statement, keeping the files to already has.
	CopyFiles(ctx context.Context, from, to int64) error

	// ClaimHead claims the head of the fair queue for cl.Owner, passing
	// over task except (0 for none), and returns the row before and after
	// the claim; ErrNoRows when no task is ready. Every dialect claims, so
	// every Tx has it (docs/tasks.md has the queue's order).
	//
	// Unless the dialect ClaimsAlone, cl.Now is the claim's time (the
	// shared logic has read the database's clock for cl.StoreClock) and
	// the lease runs until cl.Now+cl.Lease; the result's Event is left
	// zero, for the shared logic writes it. When it ClaimsAlone, the
	// claim must be the only thing its transaction does and except is 0;
	// with cl.StoreClock its statement reads the database's clock (whole
	// microseconds), and the result carries the event it wrote and the
	// claim's time. Either way the shared logic checks row and event
	// against domain.Claimed.
	ClaimHead(ctx context.Context, cl domain.Claim, except int64) (ClaimResult, error)
}

// ClaimResult is what a claim took: the row before and after it and, when
// the dialect's statement wrote it, its event and time.
type ClaimResult struct {
	Before, After domain.Task
	Event         domain.TaskEvent
	Now           time.Time
}

// AheadClaimer is a Tx of a dialect that ClaimsAlone and can also claim
// in a transaction that writes (Core.UpdateTaskAndClaim): a worker's iteration and its next
// claim in one commit. ClaimAhead adds the claim to the transaction, as
// its first statement, if it can (nil when it cannot: the claim then
// follows the commit on its own). The function it returns tells, once
// Write has returned nil, what ClaimHead would have; a claim that
// failed fails the transaction, which the dialect's Write may run again,
// or else returns its error from Write, the update with it.
type AheadClaimer interface {
	ClaimAhead(ctx context.Context, cl domain.Claim) func() (ClaimResult, error)
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
	CachedTask(number int64) (domain.Task, bool)
}
