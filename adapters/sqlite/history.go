package sqlite

import (
	"github.com/taskloom/taskloom/adapters/sqlstore"
)

// The bounded reads of a task's history an iteration makes (docs/PERFORMANCE.md),
// each an index range on a primary or unique key: (task_number,
// iteration, call) for steps, (task_number, sequence) for events.
const (
	// sqlRecentSteps reads newest first; the store reverses.
	sqlRecentSteps = `SELECT ` + sqlstore.StepColumns + ` FROM task_steps
WHERE task_number = ? ORDER BY iteration DESC, call DESC LIMIT ?`

	// sqlCountSteps counts from the task's step keys.
	sqlCountSteps = `SELECT count(*) FROM task_steps WHERE task_number = ?1`

	sqlStep = `SELECT ` + sqlstore.StepColumns + ` FROM task_steps WHERE task_number = ? AND iteration = ? AND call = 0`

	// sqlStepCall reads one step of an iteration of several.
	sqlStepCall = `SELECT ` + sqlstore.StepColumns + ` FROM task_steps WHERE task_number = ? AND iteration = ? AND call = ?`

	// sqlEventsAt: ?2 is a JSON array of sequences.
	sqlEventsAt = `SELECT ` + sqlstore.EventColumns + ` FROM task_events
WHERE task_number = ?1 AND sequence IN (SELECT value FROM json_each(?2)) ORDER BY sequence`
)

// sqlPageSteps reads newest first; the store reverses.
var sqlPageSteps = `SELECT ` + sqlstore.ClippedStepColumns("?3") + ` FROM task_steps
WHERE task_number = ?1 AND (iteration, call) < (?2, ?5) ORDER BY iteration DESC, call DESC LIMIT ?4`
