package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/taskloom/taskloom/adapters/sqlstore"
	"github.com/taskloom/taskloom/plugin"
)

// dbReads is the read handle as sqlstore.ReadDB.
type dbReads struct{ db *sql.DB }

func (r dbReads) QueryRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	return r.db.QueryRowContext(ctx, q, args...)
}

func (r dbReads) Query(ctx context.Context, q string, args []any, read func(sqlstore.Rows) error) error {
	rows, err := r.db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return read(rows)
}

func (dbReads) IsNoRows(err error) bool { return isNoRows(err) }

// readSQL is this dialect's text of the shared reads.
var readSQL = sqlstore.ReadSQL{
	GetTask: sqlGetTask, Steps: sqlSteps, TaskEvents: sqlTaskEvents,
	RecentSteps: sqlRecentSteps, Step: sqlStep, EventsAt: sqlEventsAt,
	TaskQuery: taskQuery,
	// A JSON array, which sqlEventsAt reads with json_each.
	Sequences: func(seqs []int64) (any, error) {
		list, err := json.Marshal(seqs)
		return string(list), err
	},
}

// EventsSince lists every task's events with ID > after, oldest first, at
// most limit of them (all of them when limit <= 0).
func (s *Store) EventsSince(ctx context.Context, after int64, limit int) ([]plugin.TaskEvent, error) {
	if limit <= 0 {
		limit = -1
	}
	out, err := collect(ctx, s.read, sqlEventsSince, []any{after, limit}, sqlstore.ScanEvent)
	if err != nil {
		return nil, fmt.Errorf("events since %d: %w", after, err)
	}
	return out, nil
}

// querier is what the database and a transaction have in common.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// collect runs q and reads every row with scan.
func collect[T any](ctx context.Context, db querier, q string, args []any, scan func(sqlstore.Row) (T, error)) ([]T, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return sqlstore.Collect(rows, scan)
}

// noRows translates database/sql's "no rows" into sqlstore's.
func noRows[T any](v T, err error) (T, error) {
	if errors.Is(err, sql.ErrNoRows) {
		return v, sqlstore.ErrNoRows
	}
	return v, err
}

func scanTask(r sqlstore.Row) (plugin.Task, error) { return sqlstore.ScanTask(r) }
