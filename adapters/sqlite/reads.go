package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/taskloom/taskloom/adapters/sqlstore"
	"github.com/taskloom/taskloom/domain"
)

// handles are the store's two handles as sqlstore.DB: reads on the read
// pool, writes on the one writer.
type handles struct{ read, write *sql.DB }

func (h handles) QueryRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	return h.read.QueryRowContext(ctx, q, args...)
}

func (h handles) Query(ctx context.Context, q string, args []any, read func(sqlstore.Rows) error) error {
	rows, err := h.read.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return read(rows)
}

func (handles) IsNoRows(err error) bool { return isNoRows(err) }

func (h handles) WriteRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	return h.write.QueryRowContext(ctx, q, args...)
}

func (h handles) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := h.write.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// readSQL is this dialect's text of the shared reads.
var readSQL = sqlstore.ReadSQL{
	GetTask: sqlGetTask, Steps: sqlSteps, TaskEvents: sqlTaskEvents,
	RecentSteps: sqlRecentSteps, Step: sqlStep, StepCall: sqlStepCall, EventsAt: sqlEventsAt,
	CountSteps: sqlCountSteps, PageSteps: sqlPageSteps,
	TaskFiles: sqlTaskFiles, ReadFile: sqlReadFile,
	Query: sqlstore.QueryDialect{
		Param: func(n int) string { return "?" + strconv.Itoa(n) },
		AnyOf: func(col, p string) string { return col + " IN (SELECT value FROM json_each(" + p + "))" },
		List:  func(s []string) any { return jsonList(s) },
		// taskloom_lower is Go's strings.ToLower: SQLite's lower() knows
		// only ASCII.
		Lower: "taskloom_lower", QueueOrder: "last_processed_at, number",
	},
	// A JSON array, which sqlEventsAt reads with json_each.
	Sequences: func(seqs []int64) (any, error) {
		list, err := json.Marshal(seqs)
		return string(list), err
	},
}

// recordSQL is this dialect's text of the memories' and the outbox's
// statements.
var recordSQL = sqlstore.RecordSQL{
	InsertMemory: sqlInsertMemory, MemoryByMessage: sqlMemoryByMessage,
	RecentMemories: sqlRecentMemories, PruneMemories: sqlPruneMemories, PruneFacts: sqlPruneFacts,
	PruneForgotten: []string{
		`DELETE FROM forgotten_messages WHERE forgotten_at IS NULL OR forgotten_at < ?`,
		`DELETE FROM forgotten_people WHERE forgotten_at IS NULL OR forgotten_at < ?`,
	},
	Enqueue: sqlEnqueue, LastSent: sqlLastSent, ListNotifications: sqlListNotifications, Pending: sqlPending,
	// A negative LIMIT is none.
	Limit: func(limit int) any {
		if limit <= 0 {
			return -1
		}
		return limit
	},
	// A JSON array, which sqlLastSent reads with json_each.
	List: func(numbers []int64) any { return jsonList(numbers) },
	Time: timeArg,
}

// EventsSince lists every task's events with ID > after, oldest first, at
// most limit of them (all of them when limit <= 0).
func (s *Store) EventsSince(ctx context.Context, after int64, limit int) ([]domain.TaskEvent, error) {
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

func scanTask(r sqlstore.Row) (domain.Task, error) { return sqlstore.ScanTask(r) }
