package sqlite

import (
	"context"
	"fmt"

	"github.com/taskloom/taskloom/adapters/sqlstore"
	"github.com/taskloom/taskloom/domain"
)

const (
	sqlTaskCard = `SELECT room, task_number, message_id, updated_at FROM task_cards WHERE room = ?1 AND task_number = ?2`

	sqlSaveTaskCard = `
INSERT INTO task_cards (room, task_number, message_id, updated_at) VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (room, task_number) DO UPDATE SET message_id = excluded.message_id, updated_at = excluded.updated_at`
)

// TaskCard returns the card of task in room (docs/discord.md, docs/slack.md).
func (s *Store) TaskCard(ctx context.Context, room string, task int64) (domain.TaskCard, error) {
	c, err := sqlstore.ScanTaskCard(s.read.QueryRowContext(ctx, sqlTaskCard, room, task))
	if isNoRows(err) {
		return domain.TaskCard{}, sqlstore.NoTaskCard(room, task)
	}
	if err != nil {
		return domain.TaskCard{}, fmt.Errorf("task card of #%d in %s: %w", task, room, err)
	}
	return c, nil
}

func (t dialectTx) SaveTaskCard(ctx context.Context, c domain.TaskCard) error {
	_, err := t.tx.ExecContext(ctx, sqlSaveTaskCard, c.Room, c.TaskNumber, c.MessageID, timeArg(c.UpdatedAt))
	return err
}
