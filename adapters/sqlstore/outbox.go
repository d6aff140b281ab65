package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/taskloom/taskloom/plugin"
)

// PrepareNotification checks n and fills in its defaults: one with no
// next attempt time is due when it was created.
func PrepareNotification(n plugin.Notification) (plugin.Notification, error) {
	if err := plugin.CleanNotification(&n); err != nil {
		return n, fmt.Errorf("enqueue notification for %s: %w", n.Room, err)
	}
	if n.Room == "" || n.Category == "" {
		return n, fmt.Errorf("enqueue notification: %w: room and category are required", plugin.ErrInvalid)
	}
	n.CreatedAt = plugin.UTC(n.CreatedAt)
	n.NextAttemptAt = plugin.UTC(n.NextAttemptAt)
	if n.NextAttemptAt.IsZero() {
		n.NextAttemptAt = n.CreatedAt
	}
	return n, nil
}

// ClaimRoom claims every due notification of one room for c.Owner until
// c.Now+c.Lease: the first ready room, oldest first, that no other sender
// holds or is claiming.
func (c Core) ClaimRoom(ctx context.Context, rc plugin.RoomClaim) (string, []plugin.Notification, error) {
	if rc.Owner == "" || rc.Now.IsZero() {
		return "", nil, fmt.Errorf("claim room: %w: a claim needs an owner and a time", plugin.ErrInvalid)
	}
	now, until := plugin.UTC(rc.Now), plugin.UTC(rc.Now.Add(rc.Lease))
	var room string
	var claimed []plugin.Notification
	err := c.D.Write(ctx, func(tx Tx) error {
		rooms, err := tx.ReadyRooms(ctx, now, rc.Room, rc.Categories)
		if err != nil {
			return err
		}
		for _, r := range rooms {
			ns, err := tx.ClaimRoom(ctx, r, rc.Owner, now, until)
			if err != nil {
				return err
			}
			if len(ns) > 0 {
				room, claimed = r, ns
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return "", nil, fmt.Errorf("claim room for %s: %w", rc.Owner, err)
	}
	SortNotifications(claimed)
	return room, claimed, nil
}

// MarkSent deletes the delivered rows still claimed by owner and records
// the progress sent. Rows no longer owner's (its claim expired and another
// sender took them) are left alone and reported with plugin.ErrStaleFence;
// when none is owner's, nothing is written.
func (c Core) MarkSent(ctx context.Context, owner string, ids []int64, sent []plugin.RoomProgress) error {
	ids = UniqueIDs(ids)
	var deleted int64
	err := c.D.Write(ctx, func(tx Tx) error {
		if len(ids) > 0 {
			var err error
			if deleted, err = tx.DeleteSent(ctx, owner, ids); err != nil {
				return err
			}
			if deleted == 0 {
				return fmt.Errorf("none of %d notifications is claimed by %s: %w", len(ids), owner, plugin.ErrStaleFence)
			}
		}
		for _, p := range sent {
			p.Room = plugin.CleanText(p.Room)
			if err := tx.SaveRoomProgress(ctx, p); err != nil {
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
func (c Core) Release(ctx context.Context, owner string, ids []int64, retryAt time.Time, reason string) error {
	ids = UniqueIDs(ids)
	if len(ids) == 0 {
		return nil
	}
	var n int64
	err := c.D.Write(ctx, func(tx Tx) error {
		var err error
		n, err = tx.ReleaseClaimed(ctx, owner, ids, plugin.UTC(retryAt), plugin.CleanText(reason))
		return err
	})
	if err != nil {
		return fmt.Errorf("release notifications: %w", err)
	}
	if int(n) < len(ids) {
		return fmt.Errorf("release notifications: %d of %d are no longer claimed by %s: %w",
			len(ids)-int(n), len(ids), owner, plugin.ErrStaleFence)
	}
	return nil
}

// SortNotifications puts a room's rows oldest first.
func SortNotifications(ns []plugin.Notification) {
	slices.SortFunc(ns, func(a, b plugin.Notification) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return int(a.ID - b.ID)
	})
}

// UniqueIDs returns ids sorted, without repeats.
func UniqueIDs(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}

// NotificationColumns are the columns of notifications in the order
// ScanNotification reads them.
const NotificationColumns = `id, room, task_number, category, payload, created_at, attempts, next_attempt_at, last_error`

// NotificationArgs lists the values an insert of n writes: room,
// task_number, category, payload, created_at, attempts, next_attempt_at,
// last_error.
func NotificationArgs(n plugin.Notification, timeArg TimeArg) []any {
	return []any{n.Room, n.TaskNumber, n.Category, string(n.Payload), timeArg(n.CreatedAt),
		n.Attempts, timeArg(n.NextAttemptAt), n.LastError}
}

// ScanNotification reads the columns of NotificationColumns.
func ScanNotification(row Row) (plugin.Notification, error) {
	var n plugin.Notification
	var payload []byte
	var created, next Time
	err := row.Scan(&n.ID, &n.Room, &n.TaskNumber, &n.Category, &payload, &created, &n.Attempts, &next, &n.LastError)
	n.Payload = payload
	n.CreatedAt = created.T
	n.NextAttemptAt = next.T
	return n, err
}
