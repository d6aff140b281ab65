// Package notify is the notification service: it turns task changes into
// rows of the durable outbox (in the same transaction as the change, via
// Outbox), and sends each room one batched message of what changed every
// flush interval — progress deltas since the last message sent to that
// room, the latest action, every error — while completions, failures,
// stalemates, cancellations and task posts go out at once.
//
// Sending claims a room's rows in the store, so two replicas never send the
// same update, and marks them sent only after the platform accepted the
// message; a failure or a rate limit leaves them pending, retried with
// backoff. The flush schedule is robfig/cron's constant-delay schedule,
// waited out on the injected clock.
//
// Delivery is exactly once (docs/security.md). Before a send, the rows get the
// key of their message (BeginSend); every later attempt at them, after a
// timeout, a crash or a lost claim, by any replica, sends the same message
// under the same key, and a platform that implements OnceSender
// recognises what an earlier attempt delivered: Discord by the nonce of
// each part, Slack by the metadata it finds in the room's history. While
// a send runs its claim is renewed every lease/3; a send whose claim
// cannot be renewed is canceled. Every send has a deadline (SendTimeout).
// A notification the platform says can never be delivered (the channel
// is gone or forbidden), or that has failed for GiveUpAfter (24 h), is
// marked failed with the reason, counted in
// taskloom_notifications_dead_total, and kept until someone retries it
// (domain.Outbox's ListNotifications and RetryNotification).
//
// Order: a room never sees a task's older state after a newer one. A
// message a send began on that failed and waits for its retry (its rows
// carry its delivery key, not due yet) holds every later row of its room,
// of any category — progress, posts, questions, approvals, terminal
// messages, cards, and categories added later — until it is delivered or
// given up on; the store's room claim takes nothing else of the room
// meanwhile (sqlstore.RoomWaits), and other rooms are not held. It is not
// superseded by a newer rendering even when it only carries progress: a
// 500 or a reset says nothing about whether it reached the room, and a
// message sent again under a new key would show twice (a second card,
// for StyleCard). Rows no send began on are rendered from the task as it
// is when they go, so they never show an older state. The progress
// recorded as the room's last seen (domain.RoomProgress) moves up, or down
// only when the message showing the drop started from the recorded value:
// a message rendered against an older record and marked sent late
// changes nothing. Nothing follows a task's terminal message, as its
// rows after it render nothing about an ended task.
//
// A room the pacer put off wakes the loop when it is due; that early wake
// flushes the rooms put off (and the platforms whose pacer was saturated)
// and no other, so no room gets two batches inside one interval. A sender
// waiting for its turn renews its claim as a send does, so a wait longer
// than the lease keeps the room.
//
// Replicas sending as one bot through one PostgreSQL (Options.Shares)
// share its pace: each gets a share of the bot's global window, split by a
// beat a second, and books each message in its room's window in the
// database, so that the bot keeps to its limits whichever replica sends
// (share.go, docs/deploy.md).
//
// With StyleCard (TASKLOOM_NOTIFY_STYLE=card, docs/discord.md, docs/slack.md) and a platform
// that implements Editor, a task's progress, actions and errors go to
// its card instead: one message per task and room, showing where the
// task is now, edited in place at every flush through the same outbox,
// claims and retries. The card's message ID is kept in the store
// (domain.TaskCards); its first post goes out under the rows' delivery
// key and is recorded in the transaction that marks them sent, so a
// crash in between makes no second card. A card someone deleted is
// posted again. Posts, questions, approvals and terminal messages go out
// at once as with StyleBatch, and an ended task's card gets its final
// state. A platform without Editor gets batched messages.
package notify
