package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskloom/taskloom/adapters/sqlstore"
	"github.com/taskloom/taskloom/domain"
)

// poolDB is the pool as sqlstore.DB.
type poolDB struct{ pool *pgxpool.Pool }

func (r poolDB) QueryRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	return r.pool.QueryRow(ctx, q, args...)
}

func (r poolDB) Query(ctx context.Context, q string, args []any, read func(sqlstore.Rows) error) error {
	rows, err := r.pool.Query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return read(rows)
}

func (poolDB) IsNoRows(err error) bool { return isNoRows(err) }

func (r poolDB) WriteRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	return r.pool.QueryRow(ctx, q, args...)
}

func (r poolDB) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := r.pool.Exec(ctx, q, args...)
	return tag.RowsAffected(), err
}

// readSQL is this dialect's text of the shared reads.
var readSQL = sqlstore.ReadSQL{
	GetTask: sqlGetTask, Steps: sqlSteps, TaskEvents: sqlTaskEvents,
	RecentSteps: sqlRecentSteps, Step: sqlStep, StepCall: sqlStepCall, EventsAt: sqlEventsAt,
	CountSteps: sqlCountSteps, PageSteps: sqlPageSteps,
	TaskFiles: sqlTaskFiles, ReadFile: sqlReadFile,
	Query: sqlstore.QueryDialect{
		Param: func(n int) string { return "$" + strconv.Itoa(n) },
		AnyOf: func(col, p string) string { return col + " = ANY(" + p + "::text[])" },
		List:  func(s []string) any { return s },
		Lower: "lower", QueueOrder: "last_processed_at NULLS FIRST, number",
	},
	Sequences: func(seqs []int64) (any, error) { return seqs, nil },
}

// recordSQL is this dialect's text of the memories' and the outbox's
// statements.
var recordSQL = sqlstore.RecordSQL{
	InsertMemory: sqlInsertMemory, MemoryByMessage: sqlMemoryByMessage,
	RecentMemories: sqlRecentMemories, PruneMemories: sqlPruneMemories, PruneFacts: sqlPruneFacts,
	PruneForgotten: []string{
		`DELETE FROM forgotten_messages WHERE forgotten_at IS NULL OR forgotten_at < $1`,
		`DELETE FROM forgotten_people WHERE forgotten_at IS NULL OR forgotten_at < $1`,
	},
	Enqueue: sqlEnqueue, LastSent: sqlLastSent, ListNotifications: sqlListNotifications, Pending: sqlPending,
	// A NULL limit is none.
	Limit: func(limit int) any {
		if limit <= 0 {
			return nil
		}
		return limit
	},
	List: func(numbers []int64) any { return numbers },
	Time: timeArg,
}

// EventsSince lists every task's events with ID > after, oldest first, at
// most limit of them (all of them when limit <= 0). It stops short of the
// events that transactions in flight may still commit below the highest
// committed ID (see sqlEventBound), so a reader resuming after the last ID
// it was given misses none.
func (s *Store) EventsSince(ctx context.Context, after int64, limit int) ([]domain.TaskEvent, error) {
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

func scanTask(r sqlstore.Row) (domain.Task, error) { return sqlstore.ScanTask(r) }
