package sqlstore

import (
	"database/sql"
	"fmt"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// taskColumns is the one list of the columns of tasks: for each, the
// value TaskArgs writes and where ScanTask reads it. A new column of
// tasks is one entry here, its field on domain.Task and a migration per
// dialect (docs/architecture.md); both schemas have every column.
var taskColumns = []struct {
	name string
	arg  func(t *domain.Task, at TimeArg) any
	dest func(t *domain.Task) any
}{
	{"number", func(t *domain.Task, _ TimeArg) any { return t.Number }, func(t *domain.Task) any { return &t.Number }},
	{"name", func(t *domain.Task, _ TimeArg) any { return t.Name }, func(t *domain.Task) any { return &t.Name }},
	{"goal", func(t *domain.Task, _ TimeArg) any { return t.Goal }, func(t *domain.Task) any { return &t.Goal }},
	{"status", func(t *domain.Task, _ TimeArg) any { return string(t.Status) }, func(t *domain.Task) any { return textInto(&t.Status) }},
	{"progress", func(t *domain.Task, _ TimeArg) any { return t.Progress }, func(t *domain.Task) any { return &t.Progress }},
	{"previous_progress", func(t *domain.Task, _ TimeArg) any { return t.PreviousProgress }, func(t *domain.Task) any { return &t.PreviousProgress }},
	{"stale_counter", func(t *domain.Task, _ TimeArg) any { return t.StaleCounter }, func(t *domain.Task) any { return &t.StaleCounter }},
	{"iteration", func(t *domain.Task, _ TimeArg) any { return t.Iteration }, func(t *domain.Task) any { return &t.Iteration }},
	{"max_iterations", func(t *domain.Task, _ TimeArg) any { return t.MaxIterations }, func(t *domain.Task) any { return &t.MaxIterations }},
	{"max_stale_iterations", func(t *domain.Task, _ TimeArg) any { return t.MaxStaleIterations }, func(t *domain.Task) any { return &t.MaxStaleIterations }},
	{"requestor_id", func(t *domain.Task, _ TimeArg) any { return t.RequestorID }, func(t *domain.Task) any { return &t.RequestorID }},
	{"platform", func(t *domain.Task, _ TimeArg) any { return t.Platform }, func(t *domain.Task) any { return &t.Platform }},
	{"room_id", func(t *domain.Task, _ TimeArg) any { return t.RoomID }, func(t *domain.Task) any { return &t.RoomID }},
	{"workspace_id", func(t *domain.Task, _ TimeArg) any { return t.WorkspaceID }, func(t *domain.Task) any { return &t.WorkspaceID }},
	{"parent_number", func(t *domain.Task, _ TimeArg) any { return nullNumber(t.ParentNumber) }, func(t *domain.Task) any { return numberInto(&t.ParentNumber) }},
	{"last_processed_at", func(t *domain.Task, at TimeArg) any { return at(t.LastProcessedAt) }, func(t *domain.Task) any { return timeInto(&t.LastProcessedAt) }},
	{"created_at", func(t *domain.Task, at TimeArg) any { return at(t.CreatedAt) }, func(t *domain.Task) any { return timeInto(&t.CreatedAt) }},
	{"started_at", func(t *domain.Task, at TimeArg) any { return at(t.StartedAt) }, func(t *domain.Task) any { return timeInto(&t.StartedAt) }},
	{"completed_at", func(t *domain.Task, at TimeArg) any { return at(t.CompletedAt) }, func(t *domain.Task) any { return timeInto(&t.CompletedAt) }},
	{"summary", func(t *domain.Task, _ TimeArg) any { return t.Summary }, func(t *domain.Task) any { return &t.Summary }},
	{"error", func(t *domain.Task, _ TimeArg) any { return t.Error }, func(t *domain.Task) any { return &t.Error }},
	{"prompt_tokens", func(t *domain.Task, _ TimeArg) any { return t.PromptTokens }, func(t *domain.Task) any { return &t.PromptTokens }},
	{"completion_tokens", func(t *domain.Task, _ TimeArg) any { return t.CompletionTokens }, func(t *domain.Task) any { return &t.CompletionTokens }},
	{"lease_owner", func(t *domain.Task, _ TimeArg) any { return t.LeaseOwner }, func(t *domain.Task) any { return &t.LeaseOwner }},
	{"lease_expires_at", func(t *domain.Task, at TimeArg) any { return at(t.LeaseExpiresAt) }, func(t *domain.Task) any { return timeInto(&t.LeaseExpiresAt) }},
	{"fence", func(t *domain.Task, _ TimeArg) any { return t.Fence }, func(t *domain.Task) any { return &t.Fence }},
	{"event_seq", func(t *domain.Task, _ TimeArg) any { return t.EventSeq }, func(t *domain.Task) any { return &t.EventSeq }},
	{"waiting_on", func(t *domain.Task, _ TimeArg) any { return string(t.WaitingOn) }, func(t *domain.Task) any { return textInto(&t.WaitingOn) }},
	{"next_attempt_at", func(t *domain.Task, at TimeArg) any { return at(t.NextAttemptAt) }, func(t *domain.Task) any { return timeInto(&t.NextAttemptAt) }},
	{"max_tokens", func(t *domain.Task, _ TimeArg) any { return t.MaxTokens }, func(t *domain.Task) any { return &t.MaxTokens }},
	{"continues_number", func(t *domain.Task, _ TimeArg) any { return nullNumber(t.ContinuesNumber) }, func(t *domain.Task) any { return numberInto(&t.ContinuesNumber) }},
	{"approval_action", func(t *domain.Task, _ TimeArg) any { return t.ApprovalAction }, func(t *domain.Task) any { return &t.ApprovalAction }},
	{"approval_params", func(t *domain.Task, _ TimeArg) any { return t.ApprovalParams }, func(t *domain.Task) any { return &t.ApprovalParams }},
	{"approval_granted", func(t *domain.Task, _ TimeArg) any { return t.ApprovalGranted }, func(t *domain.Task) any { return &t.ApprovalGranted }},
	{"strategy", func(t *domain.Task, _ TimeArg) any { return t.Strategy }, func(t *domain.Task) any { return &t.Strategy }},
	{"phase", func(t *domain.Task, _ TimeArg) any { return t.Phase }, func(t *domain.Task) any { return &t.Phase }},
	{"strategy_state", func(t *domain.Task, _ TimeArg) any { return t.State }, func(t *domain.Task) any { return &t.State }},
	{"ledger", func(t *domain.Task, _ TimeArg) any { return t.Ledger }, func(t *domain.Task) any { return &t.Ledger }},
	{"digest", func(t *domain.Task, _ TimeArg) any { return t.Digest }, func(t *domain.Task) any { return &t.Digest }},
	{"approval_role", func(t *domain.Task, _ TimeArg) any { return t.ApprovalRole }, func(t *domain.Task) any { return &t.ApprovalRole }},
	{"schedule_id", func(t *domain.Task, _ TimeArg) any { return nullNumber(t.ScheduleID) }, func(t *domain.Task) any { return numberInto(&t.ScheduleID) }},
}

// TaskColumns are the names of the columns of tasks, in the order ScanTask
// reads them and TaskArgs writes them.
var TaskColumns = func() []string {
	names := make([]string, len(taskColumns))
	for i, c := range taskColumns {
		names[i] = c.name
	}
	return names
}()

// TimeArg is how a dialect passes a time to its database: NULL when zero.
type TimeArg func(time.Time) any

// TaskArgs lists t's values in the order of TaskColumns.
func TaskArgs(t domain.Task, timeArg TimeArg) []any {
	args := make([]any, len(taskColumns))
	for i, c := range taskColumns {
		args[i] = c.arg(&t, timeArg)
	}
	return args
}

// nullNumber is a task number as a column holds it: NULL for none.
func nullNumber(n int64) any {
	if n == 0 {
		return nil
	}
	return n
}

// Row is what a driver's single-row result and its row cursor have in
// common.
type Row interface {
	Scan(dest ...any) error
}

// ScanTask reads the columns of TaskColumns, then any extra ones into
// extra.
func ScanTask(row Row, extra ...any) (domain.Task, error) {
	var t domain.Task
	dest := make([]any, len(taskColumns), len(taskColumns)+len(extra))
	for i, c := range taskColumns {
		dest[i] = c.dest(&t)
	}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return domain.Task{}, err
	}
	return t, nil
}

// timeInto scans a nullable time (see Time) into *p.
func timeInto(p *time.Time) any { return timeDest{p} }

type timeDest struct{ p *time.Time }

func (d timeDest) Scan(v any) error {
	var t Time
	if err := t.Scan(v); err != nil {
		return err
	}
	*d.p = t.T
	return nil
}

// numberInto scans a nullable task number into *p: 0 for NULL.
func numberInto(p *int64) any { return numberDest{p} }

type numberDest struct{ p *int64 }

func (d numberDest) Scan(v any) error {
	var n sql.NullInt64
	if err := n.Scan(v); err != nil {
		return err
	}
	*d.p = n.Int64
	return nil
}

// textInto scans text into *p, a string type of the domain's (a status,
// what a task waits on).
func textInto[T ~string](p *T) any { return textDest[T]{p} }

type textDest[T ~string] struct{ p *T }

func (d textDest[T]) Scan(v any) error {
	var s sql.NullString
	if err := s.Scan(v); err != nil {
		return err
	}
	*d.p = T(s.String)
	return nil
}

// Time scans a nullable time from either database: a timestamptz (pgx
// hands a time.Time) or INTEGER unix microseconds (SQLite). NULL is the
// zero time; every time is read back in UTC.
type Time struct{ T time.Time }

// Scan implements sql.Scanner.
func (t *Time) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		t.T = time.Time{}
	case time.Time:
		t.T = x.UTC()
	case int64:
		t.T = time.UnixMicro(x).UTC()
	default:
		return fmt.Errorf("sqlstore: cannot read %T as a time", v)
	}
	return nil
}
