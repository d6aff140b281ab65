package sqlite

import (
	"context"
	"fmt"

	"github.com/taskloom/taskloom/adapters/sqlstore"
	"github.com/taskloom/taskloom/plugin"
)

// Enqueue adds a notification to the outbox. One with no next attempt time
// is due when it was created.
func (s *Store) Enqueue(ctx context.Context, n plugin.Notification) (plugin.Notification, error) {
	n, err := sqlstore.PrepareNotification(n)
	if err != nil {
		return plugin.Notification{}, err
	}
	out, err := sqlstore.ScanNotification(s.write.QueryRowContext(ctx, sqlEnqueue, sqlstore.NotificationArgs(n, timeArg)...))
	if err != nil {
		return plugin.Notification{}, fmt.Errorf("enqueue notification for %s: %w", n.Room, err)
	}
	return out, nil
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

// ListNotifications lists the notifications with status ("" for any) and
// an ID above after, by ID, at most limit of them (all when limit <= 0).
func (s *Store) ListNotifications(ctx context.Context, status string, after int64, limit int) ([]plugin.Notification, error) {
	if err := sqlstore.CheckNotificationStatus(status); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = -1 // SQLite's "no limit"
	}
	out, err := collect(ctx, s.read, sqlListNotifications, []any{status, after, limit}, sqlstore.ScanNotification)
	if err != nil {
		return nil, fmt.Errorf("list notifications: %w", err)
	}
	return out, nil
}

// Pending counts the notifications not yet delivered and not given up on,
// claimed or not.
func (s *Store) Pending(ctx context.Context) (int, error) {
	var n int
	if err := s.read.QueryRowContext(ctx, sqlPending).Scan(&n); err != nil {
		return 0, fmt.Errorf("count pending notifications: %w", err)
	}
	return n, nil
}
