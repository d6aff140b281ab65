package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// DB is how a store's statements outside a transaction reach its
// database: its reads, and single statements on its write path.
type DB interface {
	ReadDB
	// WriteRow runs q on the write path for at most one row.
	WriteRow(ctx context.Context, q string, args ...any) Row
	// Exec runs q on the write path and returns how many rows it changed.
	Exec(ctx context.Context, q string, args ...any) (int64, error)
}

// RecordSQL is a dialect's text of the statements of the chat memories and
// the outbox that run outside a transaction.
type RecordSQL struct {
	// InsertMemory: MemoryArgs, returning the row, none on a redelivery.
	// MemoryByMessage: $1 platform, $2 message ID. RecentMemories: $1
	// room, $2 Limit(limit), newest first. PruneMemories and PruneFacts:
	// $1 the time before which.
	InsertMemory, MemoryByMessage, RecentMemories, PruneMemories, PruneFacts string
	// PruneForgotten: $1 the time before which; the marks a Forget keeps
	// (the IDs of the messages forgotten, the people), older than
	// retention.
	PruneForgotten []string
	// Enqueue: NotificationArgs, returning the row. LastSent: $1 room, $2
	// List(tasks). ListNotifications: $1 status or "", $2 the ID after
	// which, $3 Limit(limit). Pending: none.
	Enqueue, LastSent, ListNotifications, Pending string
	// Limit is a LIMIT parameter: limit, or the dialect's "none" when
	// limit <= 0.
	Limit func(limit int) any
	// List is a list parameter of task numbers.
	List func([]int64) any
	// Time is how the dialect stores a time.
	Time TimeArg
}

// Records is the chat memories and the notification outbox of a SQL store
// outside its transactions, written once over its DB and RecordSQL. A
// store embeds it and gets SaveMemory, RecentMemories, PruneMemories,
// Enqueue, LastSent, ListNotifications and Pending.
type Records struct {
	DB  DB
	SQL RecordSQL
	// Wrote, when set, is told of each message stored (with
	// domain.RecallMessage): the MemoryStore's Wrote, so that recall
	// forgets which scopes held no message.
	Wrote func(kind string)
}

// SaveMemory stores a chat message once: a redelivery (same platform and
// message ID) returns the stored message and false. A message forgotten,
// or a reply to a message no longer stored, is not stored: a zero Memory
// and false.
func (r Records) SaveMemory(ctx context.Context, m domain.Memory) (domain.Memory, bool, error) {
	domain.CleanMemory(&m)
	m.CreatedAt = domain.UTC(m.CreatedAt)
	m.InReplyTo = max(m.InReplyTo, 0)
	stored, err := ScanMemory(r.DB.WriteRow(ctx, r.SQL.InsertMemory, MemoryArgs(m, r.SQL.Time)...))
	if r.Wrote != nil {
		r.Wrote(domain.RecallMessage) // even on an error: the insert may have been made
	}
	if err == nil {
		return stored, true, nil
	}
	if !r.DB.IsNoRows(err) {
		return domain.Memory{}, false, fmt.Errorf("save memory: %w", err)
	}
	if m.MessageID == "" {
		return domain.Memory{}, false, nil // a reply to a message forgotten
	}
	stored, err = ScanMemory(r.DB.QueryRow(ctx, r.SQL.MemoryByMessage, m.Platform, m.MessageID))
	if r.DB.IsNoRows(err) {
		return domain.Memory{}, false, nil // forgotten
	}
	if err != nil {
		return domain.Memory{}, false, fmt.Errorf("save memory: read the stored message %s/%s: %w", m.Platform, m.MessageID, err)
	}
	return stored, false, nil
}

// RecentMemories lists a room's latest limit messages (all of them when
// limit <= 0), oldest first.
func (r Records) RecentMemories(ctx context.Context, room string, limit int) ([]domain.Memory, error) {
	out, err := QueryAll(ctx, r.DB, r.SQL.RecentMemories, []any{room, r.SQL.Limit(limit)}, ScanMemory)
	if err != nil {
		return nil, fmt.Errorf("recent memories of %s: %w", room, err)
	}
	slices.Reverse(out)
	return out, nil
}

// PruneMemories deletes the memories and the facts created before before,
// and those with no time, and says how many of both it deleted. Each
// statement stands alone: one interrupted between the two is finished by
// the next prune.
func (r Records) PruneMemories(ctx context.Context, before time.Time) (int64, error) {
	var total int64
	for _, q := range []string{r.SQL.PruneMemories, r.SQL.PruneFacts} {
		n, err := r.DB.Exec(ctx, q, r.SQL.Time(domain.UTC(before)))
		if err != nil {
			return total, fmt.Errorf("prune memories before %s: %w", before.Format(time.RFC3339), err)
		}
		total += n
	}
	// A forget mark outlives no message: a retry comes within minutes.
	for _, q := range r.SQL.PruneForgotten {
		if _, err := r.DB.Exec(ctx, q, r.SQL.Time(domain.UTC(before))); err != nil {
			return total, fmt.Errorf("prune forget marks before %s: %w", before.Format(time.RFC3339), err)
		}
	}
	return total, nil
}

// Enqueue adds a notification to the outbox. One with no next attempt time
// is due when it was created.
func (r Records) Enqueue(ctx context.Context, n domain.Notification) (domain.Notification, error) {
	n, err := PrepareNotification(n)
	if err != nil {
		return domain.Notification{}, err
	}
	out, err := ScanNotification(r.DB.WriteRow(ctx, r.SQL.Enqueue, NotificationArgs(n, r.SQL.Time)...))
	if err != nil {
		return domain.Notification{}, fmt.Errorf("enqueue notification for %s: %w", n.Room, err)
	}
	return out, nil
}

// LastSent returns the progress last sent to room for each of tasks that
// has one.
func (r Records) LastSent(ctx context.Context, room string, tasks []int64) (map[int64]int, error) {
	out := map[int64]int{}
	if len(tasks) == 0 {
		return out, nil
	}
	type sent struct {
		task     int64
		progress int
	}
	rows, err := QueryAll(ctx, r.DB, r.SQL.LastSent, []any{room, r.SQL.List(tasks)}, func(row Row) (sent, error) {
		var s sent
		err := row.Scan(&s.task, &s.progress)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("last progress sent to %s: %w", room, err)
	}
	for _, s := range rows {
		out[s.task] = s.progress
	}
	return out, nil
}

// ListNotifications lists the notifications with status ("" for any) and
// an ID above after, by ID, at most limit of them (all when limit <= 0).
func (r Records) ListNotifications(ctx context.Context, status string, after int64, limit int) ([]domain.Notification, error) {
	if err := CheckNotificationStatus(status); err != nil {
		return nil, err
	}
	out, err := QueryAll(ctx, r.DB, r.SQL.ListNotifications, []any{status, after, r.SQL.Limit(limit)}, ScanNotification)
	if err != nil {
		return nil, fmt.Errorf("list notifications: %w", err)
	}
	return out, nil
}

// Pending counts the notifications not yet delivered and not given up on,
// claimed or not.
func (r Records) Pending(ctx context.Context) (int, error) {
	var n int
	if err := r.DB.QueryRow(ctx, r.SQL.Pending).Scan(&n); err != nil {
		return 0, fmt.Errorf("count pending notifications: %w", err)
	}
	return n, nil
}
