package postgres

import (
	"context"
	"fmt"
	"slices"

	"github.com/taskloom/taskloom/adapters/sqlstore"
	"github.com/taskloom/taskloom/plugin"
)

// The bounded reads of a task's history an iteration makes (PRODUCT §11),
// each an index range on a primary or unique key: (task_number,
// iteration) for steps, (task_number, sequence) for events.
const (
	// sqlRecentSteps reads newest first; the store reverses.
	sqlRecentSteps = `SELECT ` + sqlstore.StepColumns + ` FROM task_steps
WHERE task_number = $1 ORDER BY iteration DESC LIMIT $2`

	sqlStep = `SELECT ` + sqlstore.StepColumns + ` FROM task_steps WHERE task_number = $1 AND iteration = $2`

	sqlEventsAt = `SELECT ` + sqlstore.EventColumns + ` FROM task_events
WHERE task_number = $1 AND sequence = ANY($2::bigint[]) ORDER BY sequence`
)

// RecentSteps lists a task's last k steps, oldest first.
func (s *Store) RecentSteps(ctx context.Context, number int64, k int) ([]plugin.Step, error) {
	if k <= 0 {
		return nil, nil
	}
	if out, ok := s.steps.take(number, k); ok {
		return out, nil // read with the claim (prefetch.go)
	}
	out, err := collect(ctx, s.pool, sqlRecentSteps, []any{number, k}, sqlstore.ScanStep)
	if err != nil {
		return nil, fmt.Errorf("last %d steps of task #%d: %w", k, number, err)
	}
	slices.Reverse(out)
	return out, nil
}

// Step reads the step of one iteration of a task.
func (s *Store) Step(ctx context.Context, number int64, iteration int) (plugin.Step, error) {
	st, err := sqlstore.ScanStep(s.pool.QueryRow(ctx, sqlStep, number, iteration))
	if isNoRows(err) {
		return plugin.Step{}, fmt.Errorf("step %d of task #%d: %w", iteration, number, plugin.ErrNotFound)
	}
	if err != nil {
		return plugin.Step{}, fmt.Errorf("step %d of task #%d: %w", iteration, number, err)
	}
	return st, nil
}

// EventsAt lists the task's events with the given sequences, in order.
func (s *Store) EventsAt(ctx context.Context, number int64, sequences []int64) ([]plugin.TaskEvent, error) {
	if len(sequences) == 0 {
		return nil, nil
	}
	out, err := collect(ctx, s.pool, sqlEventsAt, []any{number, sequences}, sqlstore.ScanEvent)
	if err != nil {
		return nil, fmt.Errorf("events %v of task #%d: %w", sequences, number, err)
	}
	return out, nil
}
