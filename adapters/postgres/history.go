package postgres

import (
	"context"

	"github.com/taskloom/taskloom/adapters/sqlstore"
	"github.com/taskloom/taskloom/domain"
)

// The bounded reads of a task's history an iteration makes (docs/PERFORMANCE.md),
// each an index range on a primary or unique key: (task_number,
// iteration, call) for steps, (task_number, sequence) for events.
const (
	// sqlRecentSteps reads newest first; the store reverses.
	sqlRecentSteps = `SELECT ` + sqlstore.StepColumns + ` FROM task_steps
WHERE task_number = $1 ORDER BY iteration DESC, call DESC LIMIT $2`

	// sqlCountSteps counts from the task's step keys.
	sqlCountSteps = `SELECT count(*) FROM task_steps WHERE task_number = $1`

	sqlStep = `SELECT ` + sqlstore.StepColumns + ` FROM task_steps WHERE task_number = $1 AND iteration = $2 AND call = 0`

	// sqlStepCall reads one step of an iteration of several.
	sqlStepCall = `SELECT ` + sqlstore.StepColumns + ` FROM task_steps WHERE task_number = $1 AND iteration = $2 AND call = $3`

	sqlEventsAt = `SELECT ` + sqlstore.EventColumns + ` FROM task_events
WHERE task_number = $1 AND sequence = ANY($2::bigint[]) ORDER BY sequence`
)

// sqlPageSteps reads newest first; the store reverses.
var sqlPageSteps = `SELECT ` + sqlstore.ClippedStepColumns("$3") + ` FROM task_steps
WHERE task_number = $1 AND (iteration, call) < ($2, $5::integer) ORDER BY iteration DESC, call DESC LIMIT $4`

// RecentSteps lists a task's last k steps, oldest first: the steps this
// store kept from its writes, after a claim that found them current
// (stepcache.go), or else a read, which the store keeps when it follows a
// claim that found none.
func (s *Store) RecentSteps(ctx context.Context, number int64, k int) ([]domain.Step, error) {
	if k <= 0 {
		return nil, nil
	}
	if out, ok := s.steps.take(number, k); ok {
		return out, nil
	}
	seq, pending := s.steps.pendingAt(number)
	out, err := s.Reads.RecentSteps(ctx, number, k)
	if err == nil && pending {
		s.steps.fill(number, seq, out, len(out) < k)
	}
	return out, err
}
