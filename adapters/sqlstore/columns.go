package sqlstore

import (
	"database/sql"
	"fmt"
	"time"

	"github.com/taskloom/taskloom/plugin"
)

// TaskColumns are the columns of tasks in the order ScanTask reads them
// and TaskArgs writes them. Both schemas have each of them.
var TaskColumns = []string{
	"number", "name", "goal", "status", "progress", "previous_progress",
	"stale_counter", "iteration", "max_iterations", "max_stale_iterations",
	"requestor_id", "platform", "room_id", "workspace_id", "parent_number",
	"last_processed_at", "created_at", "started_at", "completed_at",
	"summary", "error", "prompt_tokens", "completion_tokens",
	"lease_owner", "lease_expires_at", "fence", "event_seq",
	"waiting_on", "next_attempt_at", "max_tokens", "continues_number",
	"approval_action", "approval_params", "approval_granted",
	"strategy", "phase", "strategy_state", "ledger",
	"digest", "approval_role", "schedule_id",
}

// TimeArg is how a dialect passes a time to its database: NULL when zero.
type TimeArg func(time.Time) any

// TaskArgs lists t's values in the order of TaskColumns.
func TaskArgs(t plugin.Task, timeArg TimeArg) []any {
	nullNumber := func(n int64) any {
		if n == 0 {
			return nil
		}
		return n
	}
	return []any{
		t.Number, t.Name, t.Goal, string(t.Status), t.Progress, t.PreviousProgress,
		t.StaleCounter, t.Iteration, t.MaxIterations, t.MaxStaleIterations,
		t.RequestorID, t.Platform, t.RoomID, t.WorkspaceID, nullNumber(t.ParentNumber),
		timeArg(t.LastProcessedAt), timeArg(t.CreatedAt), timeArg(t.StartedAt), timeArg(t.CompletedAt),
		t.Summary, t.Error, t.PromptTokens, t.CompletionTokens,
		t.LeaseOwner, timeArg(t.LeaseExpiresAt), t.Fence, t.EventSeq,
		string(t.WaitingOn), timeArg(t.NextAttemptAt), t.MaxTokens, nullNumber(t.ContinuesNumber),
		t.ApprovalAction, t.ApprovalParams, t.ApprovalGranted,
		t.Strategy, t.Phase, t.State, t.Ledger,
		t.Digest, t.ApprovalRole, nullNumber(t.ScheduleID),
	}
}

// Row is what a driver's single-row result and its row cursor have in
// common.
type Row interface {
	Scan(dest ...any) error
}

// ScanTask reads the columns of TaskColumns, then any extra ones into
// extra.
func ScanTask(row Row, extra ...any) (plugin.Task, error) {
	var (
		t                                                   plugin.Task
		status, waitingOn                                   string
		parent, continues, schedule                         sql.NullInt64
		processed, created, started, completed, lease, next Time
	)
	dest := []any{
		&t.Number, &t.Name, &t.Goal, &status, &t.Progress, &t.PreviousProgress,
		&t.StaleCounter, &t.Iteration, &t.MaxIterations, &t.MaxStaleIterations,
		&t.RequestorID, &t.Platform, &t.RoomID, &t.WorkspaceID, &parent,
		&processed, &created, &started, &completed,
		&t.Summary, &t.Error, &t.PromptTokens, &t.CompletionTokens,
		&t.LeaseOwner, &lease, &t.Fence, &t.EventSeq,
		&waitingOn, &next, &t.MaxTokens, &continues,
		&t.ApprovalAction, &t.ApprovalParams, &t.ApprovalGranted,
		&t.Strategy, &t.Phase, &t.State, &t.Ledger,
		&t.Digest, &t.ApprovalRole, &schedule,
	}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return plugin.Task{}, err
	}
	t.Status = plugin.Status(status)
	t.ParentNumber = parent.Int64
	t.LastProcessedAt = processed.T
	t.CreatedAt = created.T
	t.StartedAt = started.T
	t.CompletedAt = completed.T
	t.LeaseExpiresAt = lease.T
	t.WaitingOn = plugin.WaitOn(waitingOn)
	t.NextAttemptAt = next.T
	t.ContinuesNumber = continues.Int64
	t.ScheduleID = schedule.Int64
	return t, nil
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
