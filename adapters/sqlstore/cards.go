package sqlstore

import (
	"context"
	"fmt"

	"github.com/taskloom/taskloom/domain"
)

// MarkCardSent deletes the delivered rows still claimed by owner, records
// the progress sent and records card as the card of its room and task,
// in one transaction; as MarkSent, nothing is written when none of the
// rows is owner's (domain.ErrStaleFence).
func (c Core) MarkCardSent(ctx context.Context, owner string, ids []int64, sent []domain.RoomProgress, card domain.TaskCard) error {
	card, err := PrepareTaskCard(card)
	if err != nil {
		return err
	}
	return c.markSent(ctx, owner, ids, sent, &card)
}

// PrepareTaskCard checks a card before it is recorded and puts its time
// in UTC.
func PrepareTaskCard(card domain.TaskCard) (domain.TaskCard, error) {
	card.Room, card.MessageID = domain.CleanText(card.Room), domain.CleanText(card.MessageID)
	if card.Room == "" || card.TaskNumber <= 0 || card.MessageID == "" || card.UpdatedAt.IsZero() {
		return card, fmt.Errorf("record task card: %w: a card needs a room, a task, a message ID and a time", domain.ErrInvalid)
	}
	card.UpdatedAt = domain.UTC(card.UpdatedAt)
	return card, nil
}

// NoTaskCard is TaskCard's answer when room has no card of task.
func NoTaskCard(room string, task int64) error {
	return fmt.Errorf("task card of #%d in %s: %w", task, room, domain.ErrNotFound)
}

// ScanTaskCard reads room, task_number, message_id, updated_at.
func ScanTaskCard(row Row) (domain.TaskCard, error) {
	var c domain.TaskCard
	var updated Time
	err := row.Scan(&c.Room, &c.TaskNumber, &c.MessageID, &updated)
	c.UpdatedAt = updated.T
	return c, err
}
