package sqlite

import (
	"context"

	"github.com/taskloom/taskloom/adapters/sqlstore"
)

// The schedule statements (docs/schedules.md); the logic is
// adapters/sqlstore's. SQLite's one writer makes LockDue's read and the
// write after it one: no other replica can fire the same due time.
var scheduleSQL = sqlstore.ScheduleSQL{
	Insert: `INSERT INTO schedules (name, cron, goal, platform, room, workspace, requestor, strategy, overlap, catch_up,
    paused, next_run_at, last_run_at, last_task, failures, created_at, skips, resumed_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18) RETURNING id`,
	Get:  `SELECT ` + sqlstore.ScheduleColumns + ` FROM schedules WHERE id = ?1`,
	Lock: `SELECT ` + sqlstore.ScheduleColumns + ` FROM schedules WHERE id = ?1`,
	LockDue: `SELECT ` + sqlstore.ScheduleColumns + ` FROM schedules
WHERE paused = 0 AND next_run_at <= ?1
ORDER BY next_run_at, id LIMIT 1`,
	Update: `UPDATE schedules SET paused = ?2, next_run_at = ?3, last_run_at = ?4, last_task = ?5, failures = ?6,
    skips = ?7, resumed_at = ?8 WHERE id = ?1`,
	Delete: `DELETE FROM schedules WHERE id = ?1`,
	Count:  `SELECT count(*) FROM schedules WHERE requestor = ?1`,
	Runs:   `SELECT ` + taskCols + ` FROM tasks WHERE schedule_id = ?1 ORDER BY number DESC LIMIT ?2`,
	InsertEvent: `INSERT INTO schedule_events (schedule_id, type, task_number, detail, actor, time)
VALUES (?1, ?2, ?3, ?4, ?5, ?6)`,
	List: `SELECT ` + sqlstore.ScheduleColumns + ` FROM schedules
WHERE (?1 = '' OR requestor = ?1) AND (?2 = '' OR workspace = ?2) ORDER BY id`,
	Events:  `SELECT ` + sqlstore.ScheduleEventColumns + ` FROM schedule_events WHERE schedule_id = ?1 ORDER BY id DESC LIMIT ?2`,
	NextDue: `SELECT min(next_run_at) FROM schedules WHERE paused = 0`,
}

var _ sqlstore.ScheduleTx = dialectTx{}

func (t dialectTx) ScheduleRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	return t.tx.QueryRowContext(ctx, q, args...)
}

func (t dialectTx) ScheduleExec(ctx context.Context, q string, args ...any) (int64, error) {
	return t.exec(ctx, q, args...)
}

func (t dialectTx) ScheduleQuery(ctx context.Context, q string, args []any, read func(sqlstore.Rows) error) error {
	rows, err := t.tx.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if err := read(rows); err != nil {
		return err
	}
	return rows.Err()
}
