package postgres

import (
	"context"
	"log/slog"
	"time"
)

// readyChannel is the NOTIFY channel the tasks_ready trigger (migration
// 0002) signals on when a task enters the queue.
const readyChannel = "taskloom_tasks"

// ListenTasks signals, on the returned channel, every time some replica
// puts a task in the queue. It holds one connection of the pool for as long
// as ctx lives, reconnecting after errors; signals are coalesced, so a slow
// reader sees at least one after any number of notifications.
func (s *Store) ListenTasks(ctx context.Context) (<-chan struct{}, error) {
	// Fail fast when the database cannot be reached at all.
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	conn.Release()
	out := make(chan struct{}, 1)
	go func() {
		defer close(out)
		backoff := 100 * time.Millisecond
		for ctx.Err() == nil {
			if err := s.listenOnce(ctx, out); err != nil && ctx.Err() == nil {
				slog.Default().Warn("listening for new tasks failed; retrying", "err", err, "in", backoff)
				select {
				case <-ctx.Done():
				case <-time.After(backoff):
				}
				backoff = min(backoff*2, 10*time.Second)
				continue
			}
			backoff = 100 * time.Millisecond
		}
	}()
	return out, nil
}

func (s *Store) listenOnce(ctx context.Context, out chan<- struct{}) error {
	pooled, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// A connection that has LISTENed is not given back to the pool.
	conn := pooled.Hijack()
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+readyChannel); err != nil {
		return err
	}
	// Tasks queued while the listener was down are found by the first poll
	// after this signal.
	signal(out)
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		signal(out)
	}
}

func signal(out chan<- struct{}) {
	select {
	case out <- struct{}{}:
	default:
	}
}
