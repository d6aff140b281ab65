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

// TestRoomWindowHoldsAcrossReplicas: two replicas sending as one bot
// through one PostgreSQL take turns at a room; its window (2 messages in
// 10 s) holds across them: the third message within the window, claimed
// by the replica that sent only one of the two, is put off to the end of
// the window, not sent.
func TestRoomWindowHoldsAcrossReplicas(t *testing.T) {
	st := teststore.Postgres(t)
	clk := clock.NewFake(t0)
	lim := plugin.Limits{Room: plugin.Window{N: 2, Span: 10 * time.Second}, Bot: "bot-1"}
	shared := func(s *setup) {
		s.opts = func(o *notify.Options) { o.Shares = st.(domain.PaceShares) }
	}
	a, la := limitedFixture(t, st, clk, lim, shared)
	b, lb := limitedFixture(t, st, clk, lim, shared, func(s *setup) {
		prev := s.opts
		s.opts = func(o *notify.Options) { prev(o); o.Owner = "b" }
	})
	n := a.create("chat:R1", "Build auth").Number
	for i, f := range []*fixture{a, b, a} {
		a.iterate(n, 10*(i+1), domain.VerdictContinue, true)
		got := f.flush()
		if want := min(1, 2-i); got != want {
			t.Fatalf("flush %d delivered %d, want %d", i+1, got, want)
		}
		clk.Advance(time.Second)
	}
	if sent := len(la.messages()) + len(lb.messages()); sent != 2 {
		t.Fatalf("%d messages went out within the room's window of 2", sent)
	}
	pending := list(t, st, domain.NotificationPending)
	if len(pending) == 0 || !pending[0].NextAttemptAt.Equal(t0.Add(10*time.Second)) || pending[0].Attempts != 0 {
		t.Fatalf("the third message's rows: %+v; want due at the window's end (10 s), no attempt counted", pending)
	}
	clk.Set(t0.Add(10 * time.Second))
	if got := a.flush(); got != 1 {
		t.Fatalf("at the window's end the flush delivered %d", got)
	}
}
