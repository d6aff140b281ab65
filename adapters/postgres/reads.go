package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskloom/taskloom/adapters/sqlstore"
	"github.com/taskloom/taskloom/plugin"
)

// poolReads is the pool as sqlstore.ReadDB.
type poolReads struct{ pool *pgxpool.Pool }

func (r poolReads) QueryRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	return r.pool.QueryRow(ctx, q, args...)
}

func (r poolReads) Query(ctx context.Context, q string, args []any, read func(sqlstore.Rows) error) error {
	rows, err := r.pool.Query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return read(rows)
}

func (poolReads) IsNoRows(err error) bool { return isNoRows(err) }

// readSQL is this dialect's text of the shared reads.
var readSQL = sqlstore.ReadSQL{
	GetTask: sqlGetTask, Steps: sqlSteps, TaskEvents: sqlTaskEvents,
	RecentSteps: sqlRecentSteps, Step: sqlStep, EventsAt: sqlEventsAt,
	TaskQuery: taskQuery,
	Sequences: func(seqs []int64) (any, error) { return seqs, nil },
}

// EventsSince lists every task's events with ID > after, oldest first, at
// most limit of them (all of them when limit <= 0). It stops short of the
// events that transactions in flight may still commit below the highest
// committed ID (see sqlEventBound), so a reader resuming after the last ID
// it was given misses none.
func (s *Store) EventsSince(ctx context.Context, after int64, limit int) ([]plugin.TaskEvent, error) {
	var lim any
	if limit > 0 {
		lim = limit
	}
	var last int64
	var floor *int64
	if err := s.pool.QueryRow(ctx, sqlEventBound, int64(eventFloorSpace)).Scan(&last, &floor); err != nil {
		return nil, fmt.Errorf("events since %d: %w", after, err)
	}
	bound := last
	if floor != nil {
		bound = min(bound, *floor)
	}
	if bound <= after {
		return nil, nil
	}
	out, err := collect(ctx, s.pool, sqlEventsSince, []any{after, lim, bound}, sqlstore.ScanEvent)
	if err != nil {
		return nil, fmt.Errorf("events since %d: %w", after, err)
	}
	return out, nil
}

// querier is what the pool and a transaction have in common.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// collect runs q and reads every row with scan.
func collect[T any](ctx context.Context, db querier, q string, args []any, scan func(sqlstore.Row) (T, error)) ([]T, error) {
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return sqlstore.Collect(rows, scan)
}

// noRows translates pgx's "no rows" into sqlstore's.
func noRows[T any](v T, err error) (T, error) {
	if errors.Is(err, pgx.ErrNoRows) {
		return v, sqlstore.ErrNoRows
	}
	return v, err
}

func scanTask(r sqlstore.Row) (plugin.Task, error) { return sqlstore.ScanTask(r) }
