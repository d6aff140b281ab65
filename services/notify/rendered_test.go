package notify_test

import (
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
)

// outage is longer than Discord keeps a nonce: a retry after it can find
// what an earlier attempt posted only by its text in the channel's history.
const outage = 10 * time.Minute

// TestRetryAfterTheTaskMovedOnSendsTheFirstRendering: the platform took
// "Progress: 0% → 10%" and the process died before marking it sent; the
// task moved on to 40%; ten minutes later (past Discord's nonce window)
// another process retries. It sends the message as first rendered, which
// the platform recognises, and the 40% goes out in a message of its own:
// the room shows the first batch once.
func TestRetryAfterTheTaskMovedOnSendsTheFirstRendering(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		clk := clock.NewFake(t0)
		for _, c := range fakeChats(t, clk) {
			t.Run(c.name, func(t *testing.T) {
				st := open(t)
				old, crash := c.crashing(t, st, clk)
				n := old.create(c.room, "Build auth").Number
				old.iterate(n, 10, domain.VerdictContinue, true)
				crashFlush(t, old.svc, crash.sent, "the first progress message")
				first := c.messages()
				if len(first) != 1 || !strings.Contains(first[0], "Progress: 0% → 10%") {
					t.Fatalf("before the restart the room has %q", first)
				}

				clk.Advance(time.Second)
				old.iterate(n, 40, domain.VerdictContinue, true) // the task moves on
				clk.Advance(outage)
				restarted := c.fixture(t, st, "new", clk)
				if _, err := restarted.svc.Flush(ctxFor(t)); err != nil {
					t.Fatal(err)
				}
				got := c.messages()
				if len(got) != 2 || got[0] != first[0] || !strings.Contains(got[1], "Progress: 10% → 40%") {
					t.Fatalf("after the restart the room has %q; want the first batch once, then 10%% → 40%%", got)
				}
				noPending(t, st)
			})
		}
	})
}

// TestCardRetryAfterTheTaskMovedOn is the same for a task's card: the card
// posted before the crash is found by its first rendering and recorded,
// and the task's new state is an edit of it — one card, never a stale
// second one.
func TestCardRetryAfterTheTaskMovedOn(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		clk := clock.NewFake(t0)
		for _, c := range cardChats(t, clk) {
			t.Run(c.name, func(t *testing.T) {
				st := open(t)
				old, n := crashedCardPost(t, st, clk, c)

				clk.Advance(time.Second)
				old.iterate(n, 40, domain.VerdictContinue, true)
				clk.Advance(outage)
				restarted := cardFixture(t, st, "new", clk, func(rt *plugin.Runtime) plugin.Platform { return c.adapter(t, rt) })
				for range 2 {
					if _, err := restarted.svc.Flush(ctxFor(t)); err != nil {
						t.Fatal(err)
					}
				}
				ps := c.posts()
				if len(ps) != 1 {
					t.Fatalf("after the restart the room has %d cards: %+v; want the one", len(ps), ps)
				}
				if got := cardOf(t, st, c.room, n); got.MessageID != ps[0].id {
					t.Fatalf("the store names %s; the card is %s", got.MessageID, ps[0].id)
				}
				restarted.iterate(n, 60, domain.VerdictContinue, true)
				if _, err := restarted.svc.Flush(ctxFor(t)); err != nil {
					t.Fatal(err)
				}
				if ps := c.posts(); len(ps) != 1 || !strings.Contains(ps[0].text, "60%") {
					t.Fatalf("the card after the next iteration: %+v; want the one card at 60%%", ps)
				}
				noPending(t, st)
			})
		}
	})
}
