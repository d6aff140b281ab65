package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// PrepareNotification checks n and fills in its defaults: one with no
// next attempt time is due when it was created.
func PrepareNotification(n domain.Notification) (domain.Notification, error) {
	if err := domain.CleanNotification(&n); err != nil {
		return n, fmt.Errorf("enqueue notification for %s: %w", n.Room, err)
	}
	if n.Room == "" || n.Category == "" {
		return n, fmt.Errorf("enqueue notification: %w: room and category are required", domain.ErrInvalid)
	}
	n.CreatedAt = domain.UTC(n.CreatedAt)
	n.NextAttemptAt = domain.UTC(n.NextAttemptAt)
	if n.NextAttemptAt.IsZero() {
		n.NextAttemptAt = n.CreatedAt
	}
	return n, nil
}

// RoomWaits is the condition, in both dialects, that the room named by
// room has a message waiting for its retry: rows a send began on (they
// carry its delivery key), still pending, not due at now. Such a message
// may have reached the platform, and only a send under its key can tell,
// so it is never rendered again nor folded into another: it holds the
// room's later rows, of every category, until it goes (or is given up
// on), and the room sees its tasks' states in order.
func RoomWaits(now, room string) string {
	return `EXISTS (SELECT 1 FROM notifications w WHERE w.room = ` + room +
		` AND w.status = 'pending' AND w.delivery_key <> '' AND w.next_attempt_at > ` + now + `)`
}

// ClaimRoomIDs is the query of the rows a room claim takes, in both
// dialects: ready is the condition of a due, unclaimed row, now the
// parameter of the claim's time, room the one naming the room, limit the
// one of the most rows.
//
// When a message a send began on waits for its retry (RoomWaits), it is
// nothing: the room's later rows wait behind it. When a send began on
// some of the room's due rows (they carry its delivery key), it is the
// rows of one such message, the oldest, whole: its message is sent again
// exactly, never split across claims or merged with another (a platform
// recognises it by its key). That is at most a claim's worth, as the
// claim that began it took no more. Otherwise it is at most limit rows
// without a key: terminal rows, task posts and replies to people first,
// so an ended task or a reply is not held behind a backlog of progress,
// then the rest, each oldest
// first. What is left waits for the next claim.
func ClaimRoomIDs(ready, now, room, limit string) string {
	urgentList := "'" + strings.Join(UrgentCategories, "', '") + "'"
	return `WITH due AS (SELECT id, delivery_key, category FROM notifications WHERE room = ` + room + ` AND ` + ready +
		` AND NOT ` + RoomWaits(now, room) + `),
  begun AS (SELECT delivery_key FROM due WHERE delivery_key <> '' ORDER BY id LIMIT 1)
SELECT id FROM due WHERE delivery_key = (SELECT delivery_key FROM begun)
UNION ALL
SELECT id FROM (SELECT id FROM due WHERE delivery_key = '' AND NOT EXISTS (SELECT 1 FROM begun)
  ORDER BY category NOT IN (` + urgentList + `), id LIMIT ` + limit + `) fresh`
}

// UrgentCategories are the categories of rows that go out at once,
// whatever backlog their room has: a task's end, its posts and replies
// to people (ClaimRoomIDs takes them first; a room's head orders rooms by
// them too, notification_rooms.urgent_at).
var UrgentCategories = []string{domain.NotifyTerminal, domain.NotifyMessage, domain.NotifyReply}

// RoomKey is where a room claim's walk of the rooms' heads is: a room and
// the order key its head was found at (At in the dialect's own type; nil
// for a room claimed by name, which no order bounds).
type RoomKey struct {
	Room string
	At   any
	ID   int64
}

// RoomWalk asks a dialect for the next rooms' heads of a claim: those due
// at Now (no live claim or waiting message holds them, a row is ready),
// after After in order, oldest first (by their urgent rows when Urgent),
// of no platform of Skip.
type RoomWalk struct {
	Now    time.Time
	After  RoomKey
	Urgent bool
	Skip   []string
}

// RoomTake is what a dialect's claim of one room takes: for Owner from Now
// until Until, at most Limit new rows, only when a ready row is of one of
// Categories (any when empty); Urgent says which order key the room was
// walked by.
type RoomTake struct {
	Owner      string
	Now, Until time.Time
	Limit      int
	Categories []string
	Urgent     bool
}

// ClaimRoom claims the due notifications of one room for c.Owner until
// c.Now+c.Lease, those of ClaimRoomIDs with at most rc.Limit
// (domain.RoomClaimRows) new ones: the first ready room, oldest first,
// that no other sender holds or is claiming. Rooms go by their oldest
// pending row (a row waiting for its retry counts too), then their lowest
// ID; a claim of urgent categories only by their oldest urgent row; a
// claim of other categories walks every due room and takes the first
// with a ready row of one of them.
//
// It walks the rooms' heads (notification_rooms) in order rather than
// the pending rows, so it costs in proportion to the rooms it passes,
// not the rows waiting. A head is a lower bound of its room (every write
// of the outbox lowers it, none raises it), so the walk sees every room
// that is due; the dialect's claim derives the room it visits exactly
// from its rows and, when the head was stale (later than it said), writes
// it back raised and passes on: the room comes again further on in the
// walk if it is still due. A room is claimed only when its head was
// exact, so rooms go oldest first.
func (c Core) ClaimRoom(ctx context.Context, rc domain.RoomClaim) (string, []domain.Notification, error) {
	if rc.Owner == "" || (rc.Now.IsZero() && !rc.StoreClock) {
		return "", nil, fmt.Errorf("claim room: %w: a claim needs an owner and a time", domain.ErrInvalid)
	}
	var room string
	var claimed []domain.Notification
	err := c.D.Write(ctx, func(tx Tx) error {
		if err := onStoreClock(ctx, tx, rc.StoreClock, &rc.Now); err != nil {
			return err
		}
		take := RoomTake{Owner: rc.Owner, Now: domain.UTC(rc.Now), Until: domain.UTC(rc.Now.Add(rc.Lease)),
			Limit: rc.Limit, Categories: rc.Categories}
		if take.Limit <= 0 {
			take.Limit = domain.RoomClaimRows
		}
		if rc.Room != "" {
			ns, err := tx.ClaimRoom(ctx, RoomKey{Room: rc.Room}, take)
			if len(ns) > 0 {
				room, claimed = rc.Room, ns
			}
			return err
		}
		// Rooms with a due row of categories that are all urgent ones are
		// walked by their urgent rows; other categories (none of the
		// service's) by their oldest row, each room checked.
		take.Urgent = len(rc.Categories) > 0
		for _, cat := range rc.Categories {
			if !slices.Contains(UrgentCategories, cat) {
				take.Urgent = false
			}
		}
		walk := RoomWalk{Now: take.Now, Urgent: take.Urgent, Skip: rc.SkipPlatforms}
		for {
			keys, err := tx.RoomHeads(ctx, walk)
			if err != nil {
				return err
			}
			for _, k := range keys {
				ns, err := tx.ClaimRoom(ctx, k, take)
				if err != nil {
					return err
				}
				if len(ns) > 0 {
					room, claimed = k.Room, ns
					return nil
				}
				walk.After = k
			}
			if len(keys) == 0 {
				// A head written back raised may come again after the
				// last one read: the walk ends when none is left.
				return nil
			}
		}
	})
	if err != nil {
		return "", nil, fmt.Errorf("claim room for %s: %w", rc.Owner, err)
	}
	SortNotifications(claimed)
	return room, claimed, nil
}

// MarkSent deletes the delivered rows still claimed by owner and records
// the progress sent. Rows no longer owner's (its claim expired and another
// sender took them) are left alone and reported with domain.ErrStaleFence;
// when none is owner's, nothing is written.
func (c Core) MarkSent(ctx context.Context, owner string, ids []int64, sent []domain.RoomProgress) error {
	return c.markSent(ctx, owner, ids, sent, nil)
}

// markSent is MarkSent, recording card in the same transaction when it
// is set (MarkCardSent).
func (c Core) markSent(ctx context.Context, owner string, ids []int64, sent []domain.RoomProgress, card *domain.TaskCard) error {
	ids = UniqueIDs(ids)
	var deleted int64
	err := c.D.Write(ctx, func(tx Tx) error {
		if len(ids) > 0 {
			var err error
			if deleted, err = tx.DeleteSent(ctx, owner, ids); err != nil {
				return err
			}
			if deleted == 0 {
				return fmt.Errorf("none of %d notifications is claimed by %s: %w", len(ids), owner, domain.ErrStaleFence)
			}
		}
		for _, p := range sent {
			p.Room = domain.CleanText(p.Room)
			if err := tx.SaveRoomProgress(ctx, p); err != nil {
				return err
			}
		}
		if card != nil {
			return tx.SaveTaskCard(ctx, *card)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("mark notifications sent: %w", err)
	}
	if int(deleted) < len(ids) {
		return fmt.Errorf("mark notifications sent: %d of %d are no longer claimed by %s: %w",
			len(ids)-int(deleted), len(ids), owner, domain.ErrStaleFence)
	}
	return nil
}

// Release gives owner's claimed rows back, to be retried at retryAt. Rows
// no longer owner's are left alone and reported with domain.ErrStaleFence.
func (c Core) Release(ctx context.Context, owner string, ids []int64, retryAt time.Time, reason string) error {
	return c.someClaimed(ctx, "release", owner, ids, func(tx Tx, ids []int64) (int64, error) {
		return tx.ReleaseClaimed(ctx, owner, ids, domain.UTC(retryAt), domain.CleanText(reason))
	})
}

// GiveBack implements domain.Outbox.
func (c Core) GiveBack(ctx context.Context, owner string, ids []int64, due time.Time) error {
	return c.someClaimed(ctx, "give back", owner, ids, func(tx Tx, ids []int64) (int64, error) {
		return tx.GiveBackClaimed(ctx, owner, ids, domain.UTC(due))
	})
}

// SettleQueued implements domain.Outbox.
func (c Core) SettleQueued(ctx context.Context, id int64, sent bool, due time.Time) error {
	var n int64
	err := c.D.Write(ctx, func(tx Tx) error {
		var err error
		n, err = tx.SettleUnclaimed(ctx, id, sent, domain.UTC(due))
		return err
	})
	switch {
	case err != nil:
		return fmt.Errorf("settle queued notification %d: %w", id, err)
	case n == 0:
		return fmt.Errorf("settle queued notification %d: %w", id, domain.ErrNotFound)
	}
	return nil
}

// someClaimed runs an update of owner's claimed rows and commits what it
// touched; the rows of ids it did not touch (no longer owner's) are
// reported with domain.ErrStaleFence.
func (c Core) someClaimed(ctx context.Context, what, owner string, ids []int64, update func(Tx, []int64) (int64, error)) error {
	ids = UniqueIDs(ids)
	if len(ids) == 0 {
		return nil
	}
	var n int64
	err := c.D.Write(ctx, func(tx Tx) error {
		var err error
		n, err = update(tx, ids)
		return err
	})
	if err != nil {
		return fmt.Errorf("%s notifications: %w", what, err)
	}
	if int(n) < len(ids) {
		return fmt.Errorf("%s notifications: %d of %d are no longer claimed by %s: %w",
			what, len(ids)-int(n), len(ids), owner, domain.ErrStaleFence)
	}
	return nil
}

// RenewClaim extends owner's claim on the rows of ids to until, all or
// none: when one of them is no longer owner's (sent, given up on, or
// claimed by another sender after owner's claim expired), nothing is
// extended and the error is domain.ErrStaleFence.
func (c Core) RenewClaim(ctx context.Context, owner string, ids []int64, until time.Time) error {
	return c.allClaimed(ctx, "renew the claim on", owner, ids, func(tx Tx, ids []int64) (int64, error) {
		return tx.RenewClaimed(ctx, owner, ids, domain.UTC(until))
	})
}

// BeginSend records on owner's claimed rows that a send of their message,
// named key, begins at now: all or none, as RenewClaim.
func (c Core) BeginSend(ctx context.Context, owner string, ids []int64, key string, now time.Time, rendered string) error {
	key = domain.CleanText(key)
	if key == "" || now.IsZero() {
		return fmt.Errorf("begin sending notifications: %w: a send needs a key and a time", domain.ErrInvalid)
	}
	return c.allClaimed(ctx, "begin sending", owner, ids, func(tx Tx, ids []int64) (int64, error) {
		return tx.MarkSending(ctx, owner, ids, key, domain.UTC(now), rendered)
	})
}

// allClaimed runs an update of owner's claimed rows in one transaction
// and commits it only when it touched every row of ids.
func (c Core) allClaimed(ctx context.Context, what, owner string, ids []int64, update func(Tx, []int64) (int64, error)) error {
	ids = UniqueIDs(ids)
	if len(ids) == 0 {
		return nil
	}
	err := c.D.Write(ctx, func(tx Tx) error {
		n, err := update(tx, ids)
		if err != nil {
			return err
		}
		if int(n) < len(ids) {
			return fmt.Errorf("%d of %d are no longer claimed by %s: %w", len(ids)-int(n), len(ids), owner, domain.ErrStaleFence)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s notifications: %w", what, err)
	}
	return nil
}

// MarkFailed makes owner's claimed rows dead letters, failed at now with
// reason. Rows no longer owner's are left alone and reported with
// domain.ErrStaleFence.
func (c Core) MarkFailed(ctx context.Context, owner string, ids []int64, now time.Time, reason string) error {
	return c.someClaimed(ctx, "mark failed", owner, ids, func(tx Tx, ids []int64) (int64, error) {
		return tx.FailClaimed(ctx, owner, ids, domain.UTC(now), domain.CleanText(reason))
	})
}

// RetryNotification sends the dead letter id back to pending, due at now.
func (c Core) RetryNotification(ctx context.Context, id int64, now time.Time) (domain.Notification, error) {
	if now.IsZero() {
		return domain.Notification{}, fmt.Errorf("retry notification %d: %w: a retry needs a time", id, domain.ErrInvalid)
	}
	var out domain.Notification
	err := c.D.Write(ctx, func(tx Tx) error {
		n, err := tx.LockNotification(ctx, id)
		if errors.Is(err, ErrNoRows) {
			return &refusal{msg: fmt.Sprintf("retry notification %d: there is no such notification", id), err: domain.ErrNotFound}
		}
		if err != nil {
			return err
		}
		if n.Status != domain.NotificationFailed {
			return &refusal{msg: fmt.Sprintf("retry notification %d: it is %s, not failed", id, n.Status), err: domain.ErrInvalidState}
		}
		out, err = tx.RetryFailed(ctx, id, domain.UTC(now))
		return err
	})
	var r *refusal
	if errors.As(err, &r) {
		return domain.Notification{}, err
	}
	if err != nil {
		return domain.Notification{}, fmt.Errorf("retry notification %d: %w", id, err)
	}
	return out, nil
}

// SortNotifications puts a room's rows oldest first.
func SortNotifications(ns []domain.Notification) {
	slices.SortFunc(ns, func(a, b domain.Notification) int {
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
const NotificationColumns = `id, room, task_number, category, payload, created_at, attempts, next_attempt_at, last_error, ` +
	`status, failed_at, retried_at, delivery_key, sending_at, rendered`

// NotificationArgs lists the values an insert of n writes: room,
// task_number, category, payload, created_at, attempts, next_attempt_at,
// last_error. The delivery columns keep their defaults (pending, no send
// begun).
func NotificationArgs(n domain.Notification, timeArg TimeArg) []any {
	return []any{n.Room, n.TaskNumber, n.Category, string(n.Payload), timeArg(n.CreatedAt),
		n.Attempts, timeArg(n.NextAttemptAt), n.LastError}
}

// ScanNotification reads the columns of NotificationColumns.
func ScanNotification(row Row) (domain.Notification, error) {
	var n domain.Notification
	var payload []byte
	var created, next, failed, retried, sending Time
	err := row.Scan(&n.ID, &n.Room, &n.TaskNumber, &n.Category, &payload, &created, &n.Attempts, &next, &n.LastError,
		&n.Status, &failed, &retried, &n.DeliveryKey, &sending, &n.Rendered)
	n.Payload = payload
	n.CreatedAt = created.T
	n.NextAttemptAt = next.T
	n.FailedAt = failed.T
	n.RetriedAt = retried.T
	n.SendingAt = sending.T
	return n, err
}

// CheckNotificationStatus refuses a status filter of ListNotifications
// that names no status ("" is any).
func CheckNotificationStatus(status string) error {
	switch status {
	case "", domain.NotificationPending, domain.NotificationFailed:
		return nil
	}
	return fmt.Errorf("list notifications: %w: status %q is not %s or %s", domain.ErrInvalid, status,
		domain.NotificationPending, domain.NotificationFailed)
}

// refusal is an operation on a notification refused for a reason people
// read, with the plugin error errors.Is finds.
type refusal struct {
	msg string
	err error
}

func (r *refusal) Error() string { return r.msg }
func (r *refusal) Unwrap() error { return r.err }
