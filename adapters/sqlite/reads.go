package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/taskloom/taskloom/adapters/sqlstore"
	"github.com/taskloom/taskloom/plugin"
)

// GetTask reads one task.
func (s *Store) GetTask(ctx context.Context, number int64) (plugin.Task, error) {
	t, err := sqlstore.ScanTask(s.read.QueryRowContext(ctx, sqlGetTask, number))
	if isNoRows(err) {
		return plugin.Task{}, &plugin.TaskError{Op: "get", Number: number, Err: plugin.ErrNotFound}
	}
	if err != nil {
		return plugin.Task{}, fmt.Errorf("get task #%d: %w", number, err)
	}
	return t, nil
}

// ListTasks lists the tasks that match f, in f.Order.
func (s *Store) ListTasks(ctx context.Context, f plugin.TaskFilter) ([]plugin.Task, error) {
	q, args := taskQuery(f, false)
	out, err := collect(ctx, s.read, q, args, scanTask)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	return out, nil
}

// CountTasks counts the tasks that match f, ignoring its limit.
func (s *Store) CountTasks(ctx context.Context, f plugin.TaskFilter) (int, error) {
	q, args := taskQuery(f, true)
	var n int
	if err := s.read.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count tasks: %w", err)
	}
	return n, nil
}

// Steps lists a task's steps in order.
func (s *Store) Steps(ctx context.Context, number int64) ([]plugin.Step, error) {
	out, err := collect(ctx, s.read, sqlSteps, []any{number}, sqlstore.ScanStep)
	if err != nil {
		return nil, fmt.Errorf("steps of task #%d: %w", number, err)
	}
	return out, nil
}

// TaskEvents lists one task's events with sequence > after.
func (s *Store) TaskEvents(ctx context.Context, number int64, after int64) ([]plugin.TaskEvent, error) {
	out, err := collect(ctx, s.read, sqlTaskEvents, []any{number, after}, sqlstore.ScanEvent)
	if err != nil {
		return nil, fmt.Errorf("events of task #%d: %w", number, err)
	}
	return out, nil
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
