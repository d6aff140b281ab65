package notify_test

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
)

var deltaRE = regexp.MustCompile(`Progress: (\d+)% → (\d+)%`)

// inOrder checks the messages a room got about one task, in order: each
// delta starts where the room last was and never goes back, nothing
// follows the terminal message, and no message comes twice.
func inOrder(t *testing.T, msgs []string) (ended bool, last int) {
	t.Helper()
	seen := map[string]bool{}
	for i, m := range msgs {
		if seen[m] {
			t.Errorf("message %d came twice: %q", i, m)
		}
		seen[m] = true
		if ended {
			t.Errorf("message %d follows the terminal message: %q (all: %q)", i, m, msgs)
		}
		for _, d := range deltaRE.FindAllStringSubmatch(m, -1) {
			from, _ := strconv.Atoi(d[1])
			to, _ := strconv.Atoi(d[2])
			if from != last || to < from {
				t.Errorf("message %d shows %d%% → %d%% after the room saw %d%%: %q", i, from, to, last, msgs)
			}
			last = to
		}
		if strings.Contains(m, "completed!") {
			ended = true
		}
	}
	return ended, last
}

// TestFailingRoomKeepsItsOrder: the platform answers a room's posts with
// a 500 for a minute while its task moves on, and the task completes
// while the first batch waits (at 50 s) or once the platform is back (at
// 80 s, the task still moving when it recovers). The message that failed
// waits for its retry and holds the room's later rows: once the platform
// recovers the room gets it, then the task's newer state and its
// completion — never an older state after a newer one, nothing after the
// completion, nothing lost or doubled. (Before, the newer rows went out
// while the first waited, and the first then rewound the room: "0% →
// 38%", then "0% → 10%", then "✅ completed" followed by a batch.)
func TestFailingRoomKeepsItsOrder(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		clk := clock.NewFake(t0)
		for _, endAt := range []int{50, 80} {
			for _, c := range fakeChats(t, clk) {
				t.Run(fmt.Sprintf("%s/ends at %ds", c.name, endAt), func(t *testing.T) {
					st := open(t)
					f := c.fixture(t, st, "replica", clk)
					n := f.create(c.room, "Build auth").Number
					f.iterate(n, 10, domain.VerdictContinue, true)
					c.failUntil(clk.Now().Add(time.Minute))
					f.flush()
					for i := 1; i <= 100; i++ {
						clk.Advance(time.Second)
						switch {
						case i%8 == 0 && i < endAt:
							f.iterate(n, 10+i, domain.VerdictContinue, true)
						case i == endAt:
							f.iterate(n, 95, domain.VerdictDone, true)
						}
						f.flush()
					}
					msgs := c.messages()
					ended, _ := inOrder(t, msgs)
					if !ended || len(msgs) < 2 || !strings.Contains(msgs[0], "Progress: 0% → 10%") {
						t.Errorf("the room got %q; want the first batch, then the rest, ending with the completion", msgs)
					}
					if endAt < 60 && len(msgs) != 2 {
						// The progress rows that waited go out with the
						// completion, which shows the task's end rather
						// than a batch about it.
						t.Errorf("the room got %q; want the first batch, then the completion", msgs)
					}
					if endAt > 60 && len(msgs) < 3 {
						// The task moved on after the platform recovered:
						// the room saw where it got before its end.
						t.Errorf("the room got %q; want the first batch, the task's newer progress, then the completion", msgs)
					}
					if got, err := st.LastSent(t.Context(), c.room, []int64{n}); err != nil || got[n] != 100 {
						t.Errorf("room_progress = %v, %v; want 100 (the completion)", got, err)
					}
					noPending(t, st)
				})
			}
		}
	})
}

// TestFailingRoomKeepsItsCardInOrder is TestFailingRoomKeepsItsOrder with
// task cards: the card's first post fails for a minute while the task
// moves on, and the task completes while the post waits or after. The
// post waits and holds the room. When the task ended meanwhile its card is
// not posted (its completion is: a card after it would show an ended task
// as live) and the completion is the room's one message; otherwise the
// card goes out once, is edited as the task moves, and the completion
// follows it, the card showing the final state — nothing after the
// completion, no second card, nothing left.
func TestFailingRoomKeepsItsCardInOrder(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		clk := clock.NewFake(t0)
		for _, endAt := range []int{50, 80} {
			for _, c := range cardChats(t, clk) {
				t.Run(fmt.Sprintf("%s/ends at %ds", c.name, endAt), func(t *testing.T) {
					st := open(t)
					f := cardFixture(t, st, "replica", clk, func(rt *plugin.Runtime) plugin.Platform { return c.adapter(t, rt) })
					n := f.create(c.room, "Build auth").Number
					f.iterate(n, 10, domain.VerdictContinue, true)
					c.failPosts(clk.Now().Add(time.Minute))
					f.flush()
					for i := 1; i <= 100; i++ {
						clk.Advance(time.Second)
						switch {
						case i%8 == 0 && i < endAt:
							f.iterate(n, 10+i, domain.VerdictContinue, true)
						case i == endAt:
							f.iterate(n, 95, domain.VerdictDone, true)
						}
						f.flush()
					}
					ps := c.posts()
					if endAt < 60 {
						if len(ps) != 1 || !strings.Contains(ps[0].text, "completed!") {
							t.Fatalf("the room has %+v; want the completion alone", ps)
						}
						if card, err := st.TaskCard(t.Context(), c.room, n); !errors.Is(err, domain.ErrNotFound) {
							t.Errorf("the store names card %+v, %v; want none", card, err)
						}
					} else {
						if len(ps) != 2 || !strings.Contains(ps[1].text, "completed!") {
							t.Fatalf("the room has %+v; want the card, then the completion", ps)
						}
						mustContain(t, "the card", ps[0].text, "100%")
						if got := cardOf(t, st, c.room, n); got.MessageID != ps[0].id {
							t.Errorf("the store names card %s; the card is %s", got.MessageID, ps[0].id)
						}
					}
					noPending(t, st)
				})
			}
		}
	})
}
