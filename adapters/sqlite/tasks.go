package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/taskloom/taskloom/adapters/sqlstore"
	"github.com/taskloom/taskloom/domain"
)

// Write implements sqlstore.Dialect: fn runs in one IMMEDIATE transaction
// on the single writer connection, so no other writer can interleave.
func (s *Store) Write(ctx context.Context, fn func(sqlstore.Tx) error) error {
	return s.inTx(ctx, func(tx txn) error { return fn(dialectTx{tx}) })
}

// dialectTx is a sqlstore.Tx on a write transaction.
type dialectTx struct{ tx txn }

var (
	_ sqlstore.Dialect = (*Store)(nil)
	_ sqlstore.Tx      = dialectTx{}
)

// Now is this machine's clock: one process serves an SQLite file.
func (t dialectTx) Now(context.Context) (time.Time, error) {
	return time.Now(), nil
}

// LockTask reads the task: the IMMEDIATE transaction already keeps every
// other writer out.
func (t dialectTx) LockTask(ctx context.Context, number int64) (domain.Task, error) {
	return noRows(sqlstore.ScanTask(t.tx.QueryRowContext(ctx, sqlGetTask, number)))
}

func (t dialectTx) Children(ctx context.Context, parent int64) ([]domain.Task, error) {
	rows, err := t.tx.QueryContext(ctx, sqlChildren, parent)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return sqlstore.Collect(rows, scanTask)
}

// LockRequestor has nothing to do: the IMMEDIATE transaction is the only
// writer.
func (t dialectTx) LockRequestor(context.Context, string) error { return nil }

func (t dialectTx) CountActive(ctx context.Context, requestor string) (int, error) {
	var n int
	err := t.tx.QueryRowContext(ctx, sqlCountActive, requestor).Scan(&n)
	return n, err
}

func (t dialectTx) InsertTask(ctx context.Context, row domain.Task) (int64, error) {
	var n int64
	err := t.tx.QueryRowContext(ctx, sqlInsertTask, sqlstore.TaskArgs(row, timeArg)[1:]...).Scan(&n)
	return n, err
}

func (t dialectTx) TaskByOrigin(ctx context.Context, origin string) (int64, error) {
	var n int64
	err := t.tx.QueryRowContext(ctx, sqlTaskByOrigin, origin).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return n, err
}

func (t dialectTx) InsertOrigin(ctx context.Context, origin string, number int64) (bool, error) {
	res, err := t.tx.ExecContext(ctx, sqlInsertOrigin, origin, number)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// ClaimsAlone is false: the claim shares its transaction, so a worker's
// commit and its next claim are one IMMEDIATE transaction, one sync.
func (s *Store) ClaimsAlone() bool { return false }

// ClaimHead reads the head of the queue (sqlClaimPick), then claims it
// (sqlClaimTask), in the same IMMEDIATE transaction: SQLite's RETURNING
// cannot give the values a row had before.
func (t dialectTx) ClaimHead(ctx context.Context, cl domain.Claim, except int64) (sqlstore.ClaimResult, error) {
	var r sqlstore.ClaimResult
	now, until := cl.Now, domain.UTC(cl.Now.Add(cl.Lease))
	before, err := noRows(sqlstore.ScanTask(t.tx.QueryRowContext(ctx, sqlClaimPick, timeArg(now), except)))
	if err != nil {
		return r, err
	}
	after := before
	var status string
	var expiry, started sqlstore.Time
	if err := t.tx.QueryRowContext(ctx, sqlClaimTask, timeArg(now), cl.Owner, timeArg(until), before.Number).Scan(
		&status, &after.LeaseOwner, &expiry, &after.Fence, &started, &after.EventSeq); err != nil {
		return r, fmt.Errorf("task #%d: %w", before.Number, err)
	}
	after.Status = domain.Status(status)
	after.LeaseExpiresAt = expiry.T
	after.StartedAt = started.T
	r.Before, r.After = before, after
	return r, nil
}

func (t dialectTx) UpdateTask(ctx context.Context, _, row domain.Task) error {
	args := sqlstore.TaskArgs(row, timeArg)
	// The number is the last parameter of sqlUpdateTask.
	args = append(args[1:len(args):len(args)], args[0])
	_, err := t.tx.ExecContext(ctx, sqlUpdateTask, args...)
	return err
}

func (t dialectTx) InsertEvent(ctx context.Context, e domain.TaskEvent) error {
	_, err := t.tx.ExecContext(ctx, sqlInsertEvent, sqlstore.EventArgs(e, timeArg)...)
	return err
}

func (t dialectTx) InsertStep(ctx context.Context, st domain.Step) error {
	_, err := t.tx.ExecContext(ctx, sqlInsertStep, sqlstore.StepArgs(st, timeArg)...)
	return err
}

func (t dialectTx) Enqueue(ctx context.Context, n domain.Notification) error {
	_, err := t.tx.ExecContext(ctx, sqlEnqueue, sqlstore.NotificationArgs(n, timeArg)...)
	return err
}

// RoomHeads implements sqlstore.Tx.
func (t dialectTx) RoomHeads(ctx context.Context, w sqlstore.RoomWalk) ([]sqlstore.RoomKey, error) {
	q := sqlWalkRooms
	if w.Urgent {
		q = sqlWalkUrgentRooms
	}
	at, id := w.After.At, w.After.ID
	if at == nil {
		at, id = int64(math.MinInt64), math.MinInt64 // before every head
	}
	rows, err := t.tx.QueryContext(ctx, q, timeArg(w.Now), at, id, w.After.Room, jsonList(w.Skip))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return sqlstore.Collect(rows, func(r sqlstore.Row) (sqlstore.RoomKey, error) {
		var k sqlstore.RoomKey
		var at int64
		err := r.Scan(&k.Room, &at, &k.ID)
		k.At = at
		return k, err
	})
}

// ClaimRoom claims the room's due rows when its rows say it is due as its
// head was walked, and writes its head as they then derive it: the
// IMMEDIATE transaction that walked to the room keeps every other sender
// and writer out until it commits.
func (t dialectTx) ClaimRoom(ctx context.Context, k sqlstore.RoomKey, c sqlstore.RoomTake) ([]domain.Notification, error) {
	var due bool
	if err := t.tx.QueryRowContext(ctx, sqlRoomState, timeArg(c.Now), k.Room, k.At, k.ID, c.Urgent,
		jsonList(c.Categories)).Scan(&due); err != nil {
		return nil, err
	}
	var claimed []domain.Notification
	if due {
		rows, err := t.tx.QueryContext(ctx, sqlClaimRoom, timeArg(c.Now), k.Room, c.Owner, timeArg(c.Until), c.Limit)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		if claimed, err = sqlstore.Collect(rows, sqlstore.ScanNotification); err != nil {
			return nil, err
		}
	}
	return claimed, t.writeRoomHead(ctx, k.Room)
}

// writeRoomHead writes room's head as its rows derive it.
func (t dialectTx) writeRoomHead(ctx context.Context, room string) error {
	if _, err := t.tx.ExecContext(ctx, sqlDropRoomHead, room); err != nil {
		return err
	}
	_, err := t.tx.ExecContext(ctx, sqlWriteRoomHead, room)
	return err
}

// DeleteSent deletes the rows sent and writes the heads of their rooms
// as the rows left derive them, so that a room's next claim finds its
// head exact.
func (t dialectTx) DeleteSent(ctx context.Context, owner string, ids []int64) (int64, error) {
	rows, err := t.tx.QueryContext(ctx, sqlMarkSentRooms, jsonList(ids), owner)
	if err != nil {
		return 0, err
	}
	rooms, err := sqlstore.Collect(rows, func(r sqlstore.Row) (string, error) {
		var s string
		return s, r.Scan(&s)
	})
	if err != nil {
		return 0, err
	}
	res, err := t.tx.ExecContext(ctx, sqlMarkSent, jsonList(ids), owner)
	if err != nil {
		return 0, err
	}
	for _, room := range rooms {
		if err := t.writeRoomHead(ctx, room); err != nil {
			return 0, err
		}
	}
	return res.RowsAffected()
}

func (t dialectTx) SettleUnclaimed(ctx context.Context, id int64, sent bool, due time.Time) (int64, error) {
	q, args := sqlDueUnclaimed, []any{id, timeArg(due)}
	if sent {
		q, args = sqlDropUnclaimed, []any{id}
	}
	res, err := t.tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (t dialectTx) GiveBackClaimed(ctx context.Context, owner string, ids []int64, due time.Time) (int64, error) {
	res, err := t.tx.ExecContext(ctx, sqlGiveBack, jsonList(ids), owner, timeArg(due))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (t dialectTx) ReleaseClaimed(ctx context.Context, owner string, ids []int64, retryAt time.Time, reason string) (int64, error) {
	res, err := t.tx.ExecContext(ctx, sqlRelease, jsonList(ids), owner, timeArg(retryAt), reason)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (t dialectTx) RenewClaimed(ctx context.Context, owner string, ids []int64, until time.Time) (int64, error) {
	return t.exec(ctx, sqlRenewClaim, jsonList(ids), owner, timeArg(until))
}

func (t dialectTx) MarkSending(ctx context.Context, owner string, ids []int64, key string, now time.Time, rendered string) (int64, error) {
	return t.exec(ctx, sqlMarkSending, jsonList(ids), owner, key, timeArg(now), rendered)
}

func (t dialectTx) FailClaimed(ctx context.Context, owner string, ids []int64, now time.Time, reason string) (int64, error) {
	return t.exec(ctx, sqlFail, jsonList(ids), owner, timeArg(now), reason)
}

func (t dialectTx) LockNotification(ctx context.Context, id int64) (domain.Notification, error) {
	return noRows(sqlstore.ScanNotification(t.tx.QueryRowContext(ctx, sqlLockNotification, id)))
}

func (t dialectTx) RetryFailed(ctx context.Context, id int64, now time.Time) (domain.Notification, error) {
	return sqlstore.ScanNotification(t.tx.QueryRowContext(ctx, sqlRetryNotification, id, timeArg(now)))
}

// exec runs a statement and says how many rows it changed.
func (t dialectTx) exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := t.tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (t dialectTx) SaveRoomProgress(ctx context.Context, p domain.RoomProgress) error {
	_, err := t.tx.ExecContext(ctx, sqlUpsertRoomProgress, p.Room, p.TaskNumber, p.Progress, p.From)
	return err
}
