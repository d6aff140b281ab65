package testkit

import (
	"context"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
)

// PacedDue is when the first pending notification that waits for time to
// pass — a reply or a message the pacer left to the outbox because its
// room's window was full — is due, when that is after now and at most
// within later; false when none is. Tests on a fake clock that say more
// in a room than a platform's window takes (Discord: five messages in any
// five seconds; Slack: four in 4.4 s) move the clock there while they
// wait, as time would pass for a real bot.
func PacedDue(ctx context.Context, st domain.Store, now time.Time, within time.Duration) (time.Time, bool) {
	ns, err := st.ListNotifications(ctx, domain.NotificationPending, 0, 0)
	if err != nil {
		return time.Time{}, false
	}
	var first time.Time
	for _, n := range ns {
		if !n.NextAttemptAt.After(now) || n.NextAttemptAt.Sub(now) > within {
			continue
		}
		if first.IsZero() || n.NextAttemptAt.Before(first) {
			first = n.NextAttemptAt
		}
	}
	return first, !first.IsZero()
}

// Tick moves clk on by step every few milliseconds of real time until the
// returned stop is called: for a shutdown on a fake clock, whose last
// flush sends what people wait for as each room's window allows.
func Tick(clk *clock.Fake, step time.Duration) (stop func()) {
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
				clk.Advance(step)
			}
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}
