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
