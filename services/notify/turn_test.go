package notify_test

import (
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/notify"
)

// TestSenderWaitingItsTurnKeepsItsClaim: a sender that waits for the
// platform's window longer than its 30 s lease renews its claim while it
// waits, so no other sender — of this replica or another — takes the room
// and sends its message a second time; it sends once its turn comes.
func TestSenderWaitingItsTurnKeepsItsClaim(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		st := open(t)
		clk := clock.NewFake(t0)
		f, lr := limitedFixture(t, st, clk, plugin.Limits{Global: plugin.Window{N: 1, Span: time.Minute}},
			func(s *setup) { s.opts = func(o *notify.Options) { o.MaxPaceWait = 2 * time.Minute } })
		for _, r := range []string{"chat:R1", "chat:R2"} {
			f.iterate(f.create(r, "Watch the build").Number, 10, domain.VerdictContinue, true)
		}
		done := make(chan error, 1)
		go func() {
			_, err := f.svc.Flush(f.ctx)
			done <- err
		}()
		// One room is sent to; the other's sender waits a minute for the
		// global window (its turn's timer and its claim's renewal).
		eventually(t, func() bool { return len(lr.messages()) == 1 && clk.Waiters() == 2 })
		for range 4 {
			clk.Advance(10 * time.Second)
			eventually(t, func() bool { return clk.Waiters() == 2 })
		}
		// 40 s on: past the lease the claim was taken with.
		if room, rows, err := st.ClaimRoom(t.Context(), domain.RoomClaim{Owner: "another", Now: clk.Now(), Lease: time.Minute}); err != nil || room != "" {
			t.Fatalf("another sender claimed %q (%d rows), %v, while this one waited its turn", room, len(rows), err)
		}
		clk.Advance(20 * time.Second)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := lr.messages(); len(got) != 2 {
			t.Errorf("the rooms got %q; want one message each", got)
		}
		noPending(t, st)
	})
}
