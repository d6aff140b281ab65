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
package notify
