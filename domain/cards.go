package domain

import (
	"context"
	"time"
)

// TaskCard is the message that shows one task in one room when
// notifications are task cards (TASKLOOM_NOTIFY_STYLE=card, docs/discord.md, docs/slack.md):
// it is posted once and edited in place at every flush.
type TaskCard struct {
	Room       string
	TaskNumber int64
	// MessageID is the platform's ID of the card's message (a Discord
	// message ID, a Slack ts).
	MessageID string
	// UpdatedAt is when this message became the card.
	UpdatedAt time.Time
}

// TaskCards keeps, per room and task, which message is the task's card,
// so that a restart or another replica edits the same message.
type TaskCards interface {
	// TaskCard returns the card of task in room; ErrNotFound when it has
	// none.
	TaskCard(ctx context.Context, room string, task int64) (TaskCard, error)
	// MarkCardSent is MarkSent for the rows whose message was a task's
	// card, posted (or posted again): in the same transaction it records
	// card as the card of its room and task, replacing the one before.
	// Nothing is recorded when none of the rows is owner's any more
	// (ErrStaleFence): the sender holding them now finds the message by
	// its delivery key and records it.
	MarkCardSent(ctx context.Context, owner string, ids []int64, sent []RoomProgress, card TaskCard) error
}
