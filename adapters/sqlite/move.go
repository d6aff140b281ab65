package sqlite

import "context"

// sqlMoveNotifications moves task ?1's notifications waiting for room ?2
// that no sender holds and no send has begun on to room ?3 (MoveTask).
const sqlMoveNotifications = `
UPDATE notifications SET room = ?3
WHERE task_number = ?1 AND room = ?2 AND status = 'pending' AND claimed_by = '' AND delivery_key = ''`

func (t dialectTx) MoveNotifications(ctx context.Context, task int64, from, to string) (int64, error) {
	return t.exec(ctx, sqlMoveNotifications, task, from, to)
}
