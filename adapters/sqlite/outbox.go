package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/taskloom/taskloom/plugin"
)

// querier is what the database and a transaction have in common.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Enqueue adds a notification to the outbox. One with no next attempt time
// is due when it was created.
func (s *Store) Enqueue(ctx context.Context, n plugin.Notification) (plugin.Notification, error) {
	return enqueue(ctx, s.write, n)
}

func enqueue(ctx context.Context, q querier, n plugin.Notification) (plugin.Notification, error) {
	if err := plugin.CleanNotification(&n); err != nil {
		return plugin.Notification{}, fmt.Errorf("enqueue notification for %s: %w", n.Room, err)
	}
	if n.Room == "" || n.Category == "" {
		return plugin.Notification{}, fmt.Errorf("enqueue notification: %w: room and category are required", plugin.ErrInvalid)
	}
	n.CreatedAt = plugin.UTC(n.CreatedAt)
	n.NextAttemptAt = plugin.UTC(n.NextAttemptAt)
	if n.NextAttemptAt.IsZero() {
		n.NextAttemptAt = n.CreatedAt
	}
	out, err := scanNotification(q.QueryRowContext(ctx, sqlEnqueue, n.Room, n.TaskNumber, n.Category,
		string(n.Payload), timeArg(n.CreatedAt), n.Attempts, timeArg(n.NextAttemptAt), n.LastError))
	if err != nil {
		return plugin.Notification{}, fmt.Errorf("enqueue notification for %s: %w", n.Room, err)
	}
	return out, nil
}

// ClaimRoom claims every due notification of one room for c.Owner until
// c.Now+c.Lease. A room is claimed by one sender at a time: rooms where a
// live claim exists are skipped. The IMMEDIATE transaction makes the pick
// and the claim one step for every other writer.
func (s *Store) ClaimRoom(ctx context.Context, c plugin.RoomClaim) (string, []plugin.Notification, error) {
	if c.Owner == "" || c.Now.IsZero() {
		return "", nil, fmt.Errorf("claim room: %w: a claim needs an owner and a time", plugin.ErrInvalid)
	}
	now, until := timeArg(plugin.UTC(c.Now)), timeArg(plugin.UTC(c.Now.Add(c.Lease)))
	var room string
	var claimed []plugin.Notification
	err := s.inTx(ctx, func(tx txn) error {
		err := tx.QueryRowContext(ctx, sqlPickRoom, now, c.Room, jsonList(c.Categories)).Scan(&room)
		if isNoRows(err) {
			room = ""
			return nil
		}
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, sqlClaimRoom, now, room, c.Owner, until)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			n, err := scanNotification(rows)
			if err != nil {
				return err
			}
			claimed = append(claimed, n)
		}
		return rows.Err()
	})
	if err != nil {
		return "", nil, fmt.Errorf("claim room for %s: %w", c.Owner, err)
	}
	if len(claimed) == 0 {
		return "", nil, nil
	}
	sortNotifications(claimed)
	return room, claimed, nil
}

// MarkSent deletes the delivered rows still claimed by owner and records
// the progress sent. Rows no longer owner's (its claim expired and another
// sender took them) are left alone and reported with plugin.ErrStaleFence;
// when none is owner's, nothing is written.
func (s *Store) MarkSent(ctx context.Context, owner string, ids []int64, sent []plugin.RoomProgress) error {
	ids = uniqueIDs(ids)
	var deleted int64
	err := s.inTx(ctx, func(tx txn) error {
		if len(ids) > 0 {
			res, err := tx.ExecContext(ctx, sqlMarkSent, jsonList(ids), owner)
			if err != nil {
				return err
			}
			if deleted, err = res.RowsAffected(); err != nil {
				return err
			}
			if deleted == 0 {
				return fmt.Errorf("none of %d notifications is claimed by %s: %w", len(ids), owner, plugin.ErrStaleFence)
			}
		}
		for _, p := range sent {
			if _, err := tx.ExecContext(ctx, sqlUpsertRoomProgress, plugin.CleanText(p.Room), p.TaskNumber, p.Progress); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("mark notifications sent: %w", err)
	}
	if int(deleted) < len(ids) {
		return fmt.Errorf("mark notifications sent: %d of %d are no longer claimed by %s: %w",
			len(ids)-int(deleted), len(ids), owner, plugin.ErrStaleFence)
	}
	return nil
}

// Release gives owner's claimed rows back, to be retried at retryAt. Rows
// no longer owner's are left alone and reported with plugin.ErrStaleFence.
func (s *Store) Release(ctx context.Context, owner string, ids []int64, retryAt time.Time, reason string) error {
	ids = uniqueIDs(ids)
	if len(ids) == 0 {
		return nil
	}
	res, err := s.write.ExecContext(ctx, sqlRelease, jsonList(ids), owner, timeArg(plugin.UTC(retryAt)), plugin.CleanText(reason))
	if err != nil {
		return fmt.Errorf("release notifications: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("release notifications: %w", err)
	}
	if int(n) < len(ids) {
		return fmt.Errorf("release notifications: %d of %d are no longer claimed by %s: %w",
			len(ids)-int(n), len(ids), owner, plugin.ErrStaleFence)
	}
	return nil
}

// LastSent returns the progress last sent to room for each of tasks that
// has one.
func (s *Store) LastSent(ctx context.Context, room string, tasks []int64) (map[int64]int, error) {
	out := map[int64]int{}
	if len(tasks) == 0 {
		return out, nil
	}
	rows, err := s.read.QueryContext(ctx, sqlLastSent, room, jsonList(tasks))
	if err != nil {
		return nil, fmt.Errorf("last progress sent to %s: %w", room, err)
	}
	defer rows.Close()
	for rows.Next() {
		var task int64
		var progress int
		if err := rows.Scan(&task, &progress); err != nil {
			return nil, fmt.Errorf("last progress sent to %s: %w", room, err)
		}
		out[task] = progress
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("last progress sent to %s: %w", room, err)
	}
	return out, nil
}

// Pending counts the notifications not yet delivered, claimed or not.
func (s *Store) Pending(ctx context.Context) (int, error) {
	var n int
	if err := s.read.QueryRowContext(ctx, sqlPending).Scan(&n); err != nil {
		return 0, fmt.Errorf("count pending notifications: %w", err)
	}
	return n, nil
}

func scanNotification(row scanner) (plugin.Notification, error) {
	var n plugin.Notification
	var payload string
	var created, next sql.NullInt64
	err := row.Scan(&n.ID, &n.Room, &n.TaskNumber, &n.Category, &payload, &created, &n.Attempts, &next, &n.LastError)
	n.Payload = []byte(payload)
	n.CreatedAt = timeOf(created)
	n.NextAttemptAt = timeOf(next)
	return n, err
}

// sortNotifications puts a room's rows oldest first.
func sortNotifications(ns []plugin.Notification) {
	slices.SortFunc(ns, func(a, b plugin.Notification) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return int(a.ID - b.ID)
	})
}

func uniqueIDs(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}
