package sqlstore

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/taskloom/taskloom/domain"
)

// ReadDB is how a store's reads reach its database: a pool, or a
// database/sql handle.
type ReadDB interface {
	// QueryRow runs q for at most one row.
	QueryRow(ctx context.Context, q string, args ...any) Row
	// Query runs q and hands its rows to read, closing them after.
	Query(ctx context.Context, q string, args []any, read func(Rows) error) error
	// IsNoRows says whether err is the driver's "no rows".
	IsNoRows(err error) bool
}

// ReadSQL is a dialect's text of each shared read.
type ReadSQL struct {
	// GetTask: $1 number. Steps: $1 number, in order. TaskEvents: $1
	// number, $2 the sequence after which. RecentSteps: $1 number, $2 k,
	// newest first. Step: $1 number, $2 iteration. EventsAt: $1 number, $2
	// Sequences(the sequences), in order.
	GetTask, Steps, TaskEvents, RecentSteps, Step, EventsAt string
	// StepCall: $1 number, $2 iteration, $3 call.
	StepCall string
	// CountSteps: $1 number. PageSteps: $1 number, $2 and $5 the
	// (iteration, call) below which, $3 how many characters of each
	// result, $4 how many steps, newest first; the columns of
	// ClippedStepColumns.
	CountSteps, PageSteps string
	// TaskFiles: $1 number, FileColumns. ReadFile: $1 number, $2 path,
	// FileColumns and data.
	TaskFiles, ReadFile string
	// Query is the dialect of ListTasks' and CountTasks' query.
	Query QueryDialect
	// Sequences is EventsAt's parameter for a list of sequences.
	Sequences func([]int64) (any, error)
}

// Reads is the read side of a SQL store, written once over its ReadDB
// and ReadSQL. A store embeds it and gets GetTask, ListTasks,
// CountTasks, Steps, TaskEvents, RecentSteps, Step, EventsAt, TaskFiles
// and ReadTaskFile.
type Reads struct {
	DB  ReadDB
	SQL ReadSQL
}

// QueryAll runs q on db and reads every row with scan.
func QueryAll[T any](ctx context.Context, db ReadDB, q string, args []any, scan func(Row) (T, error)) ([]T, error) {
	var out []T
	err := db.Query(ctx, q, args, func(rows Rows) error {
		var err error
		out, err = Collect(rows, scan)
		return err
	})
	return out, err
}

// GetTask reads one task.
func (r Reads) GetTask(ctx context.Context, number int64) (domain.Task, error) {
	t, err := ScanTask(r.DB.QueryRow(ctx, r.SQL.GetTask, number))
	if r.DB.IsNoRows(err) {
		return domain.Task{}, &domain.TaskError{Op: "get", Number: number, Err: domain.ErrNotFound}
	}
	if err != nil {
		return domain.Task{}, fmt.Errorf("get task #%d: %w", number, err)
	}
	return t, nil
}

// ListTasks lists the tasks that match f, in f.Order.
func (r Reads) ListTasks(ctx context.Context, f domain.TaskFilter) ([]domain.Task, error) {
	q, args := TaskQuery(r.SQL.Query, f, false)
	out, err := QueryAll(ctx, r.DB, q, args, scanTaskRow)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	return out, nil
}

// CountTasks counts the tasks that match f, ignoring its limit.
func (r Reads) CountTasks(ctx context.Context, f domain.TaskFilter) (int, error) {
	q, args := TaskQuery(r.SQL.Query, f, true)
	var n int
	if err := r.DB.QueryRow(ctx, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count tasks: %w", err)
	}
	return n, nil
}

// Steps lists a task's steps in order.
func (r Reads) Steps(ctx context.Context, number int64) ([]domain.Step, error) {
	out, err := QueryAll(ctx, r.DB, r.SQL.Steps, []any{number}, ScanStep)
	if err != nil {
		return nil, fmt.Errorf("steps of task #%d: %w", number, err)
	}
	return out, nil
}

// TaskEvents lists one task's events with sequence > after.
func (r Reads) TaskEvents(ctx context.Context, number int64, after int64) ([]domain.TaskEvent, error) {
	out, err := QueryAll(ctx, r.DB, r.SQL.TaskEvents, []any{number, after}, ScanEvent)
	if err != nil {
		return nil, fmt.Errorf("events of task #%d: %w", number, err)
	}
	return out, nil
}

// RecentSteps lists a task's last k steps, oldest first.
func (r Reads) RecentSteps(ctx context.Context, number int64, k int) ([]domain.Step, error) {
	if k <= 0 {
		return nil, nil
	}
	out, err := QueryAll(ctx, r.DB, r.SQL.RecentSteps, []any{number, k}, ScanStep)
	if err != nil {
		return nil, fmt.Errorf("last %d steps of task #%d: %w", k, number, err)
	}
	slices.Reverse(out)
	return out, nil
}

// PageSteps reads the page of a task's steps q asks for, oldest first,
// and counts all of them: two reads bounded by q, the count an index
// range of the task's step keys.
func (r Reads) PageSteps(ctx context.Context, number int64, q domain.StepQuery) (domain.StepPage, error) {
	var page domain.StepPage
	if q.Limit > 0 {
		before := q.Before
		if before <= 0 {
			before = math.MaxInt32 // iteration is a 32-bit column
		}
		var err error
		call := 0
		if q.Before > 0 {
			call = max(q.BeforeCall, 0)
		}
		page.Steps, err = QueryAll(ctx, r.DB, r.SQL.PageSteps, []any{number, before, max(q.ResultRunes, 0), q.Limit, call}, scanClippedStep)
		if err != nil {
			return domain.StepPage{}, fmt.Errorf("steps of task #%d before %d: %w", number, q.Before, err)
		}
		slices.Reverse(page.Steps)
	}
	// Counted after the page is read, so the count holds every step read.
	if err := r.DB.QueryRow(ctx, r.SQL.CountSteps, number).Scan(&page.Total); err != nil {
		return domain.StepPage{}, fmt.Errorf("count the steps of task #%d: %w", number, err)
	}
	return page, nil
}

// Step reads the step of one iteration of a task: its first, call 0.
func (r Reads) Step(ctx context.Context, number int64, iteration int) (domain.Step, error) {
	st, err := ScanStep(r.DB.QueryRow(ctx, r.SQL.Step, number, iteration))
	if r.DB.IsNoRows(err) {
		return domain.Step{}, fmt.Errorf("step %d of task #%d: %w", iteration, number, domain.ErrNotFound)
	}
	if err != nil {
		return domain.Step{}, fmt.Errorf("step %d of task #%d: %w", iteration, number, err)
	}
	return st, nil
}

// StepCall reads the step of a task's iteration whose Call is call.
func (r Reads) StepCall(ctx context.Context, number int64, iteration, call int) (domain.Step, error) {
	st, err := ScanStep(r.DB.QueryRow(ctx, r.SQL.StepCall, number, iteration, call))
	if r.DB.IsNoRows(err) {
		return domain.Step{}, fmt.Errorf("call %d of step %d of task #%d: %w", call, iteration, number, domain.ErrNotFound)
	}
	if err != nil {
		return domain.Step{}, fmt.Errorf("call %d of step %d of task #%d: %w", call, iteration, number, err)
	}
	return st, nil
}

// EventsAt lists the task's events with the given sequences, in order.
func (r Reads) EventsAt(ctx context.Context, number int64, sequences []int64) ([]domain.TaskEvent, error) {
	if len(sequences) == 0 {
		return nil, nil
	}
	list, err := r.SQL.Sequences(sequences)
	if err != nil {
		return nil, fmt.Errorf("events of task #%d: %w", number, err)
	}
	out, err := QueryAll(ctx, r.DB, r.SQL.EventsAt, []any{number, list}, ScanEvent)
	if err != nil {
		return nil, fmt.Errorf("events %v of task #%d: %w", sequences, number, err)
	}
	return out, nil
}

// TaskFiles lists a task's files, by path, without their data.
func (r Reads) TaskFiles(ctx context.Context, number int64) ([]domain.TaskFile, error) {
	files, err := QueryAll(ctx, r.DB, r.SQL.TaskFiles, []any{number}, scanFileRow)
	if err != nil {
		return nil, fmt.Errorf("files of task #%d: %w", number, err)
	}
	SortFiles(files)
	return files, nil
}

// ReadTaskFile returns one file of a task and its bytes.
func (r Reads) ReadTaskFile(ctx context.Context, number int64, path string) (domain.TaskFile, []byte, error) {
	clean, err := domain.CleanFilePath(path)
	if err != nil {
		return domain.TaskFile{}, nil, fmt.Errorf("read file of task #%d: %w", number, err)
	}
	var data []byte
	f, err := ScanFile(r.DB.QueryRow(ctx, r.SQL.ReadFile, number, clean), &data)
	if r.DB.IsNoRows(err) {
		return domain.TaskFile{}, nil, fmt.Errorf("read %s of task #%d: %w", clean, number, domain.ErrNoFile)
	}
	if err != nil {
		return domain.TaskFile{}, nil, fmt.Errorf("read %s of task #%d: %w", clean, number, err)
	}
	return f, data, nil
}

func scanFileRow(r Row) (domain.TaskFile, error) { return ScanFile(r) }

func scanTaskRow(r Row) (domain.Task, error) { return ScanTask(r) }

// sqlUnowned counts the steps and events whose task does not exist, in
// either dialect. The store writes none: each is written in the
// transaction that updates its task's row, and no task is deleted. But
// PostgreSQL does not check it on insert (no foreign key: docs/PERFORMANCE.md's
// cost), so taskloom check does.
const sqlUnowned = `SELECT
  (SELECT count(*) FROM task_steps s WHERE NOT EXISTS (SELECT 1 FROM tasks t WHERE t.number = s.task_number)),
  (SELECT count(*) FROM task_events e WHERE NOT EXISTS (SELECT 1 FROM tasks t WHERE t.number = e.task_number))`

// Unowned counts the steps and the events of tasks that do not exist.
func (r Reads) Unowned(ctx context.Context) (steps, events int64, err error) {
	if err := r.DB.QueryRow(ctx, sqlUnowned).Scan(&steps, &events); err != nil {
		return 0, 0, fmt.Errorf("count the steps and events of no task: %w", err)
	}
	return steps, events, nil
}
