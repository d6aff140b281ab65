package notify

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
)

// discordLike are limits as the Discord adapter publishes them.
var discordLike = plugin.Limits{
	Global: plugin.Window{N: 9, Span: 200 * time.Millisecond},
	Room:   plugin.Window{N: 5, Span: 5500 * time.Millisecond},
	Bot:    "bot-1",
}

// sharedReplica is a pacer sharing discordLike through a real PostgreSQL,
// driven on the test's time: it beats every second from phase, while
// alive, and asks for a request at every step while busy.
type sharedReplica struct {
	p     *pacer
	phase time.Duration
	next  time.Duration
	alive bool
	busy  func(at time.Duration) bool
	// skipsSaturated: the replica asks nothing while its global window
	// is full beyond the wait a sender takes, as the service's flush.
	skipsSaturated bool
	took           []time.Time
}

func sharedReplicas(t *testing.T, n int) []*sharedReplica {
	t.Helper()
	return sharedReplicasOf(t, discordLike, n)
}

// sharedReplicasOf is sharedReplicas with limits lim.
func sharedReplicasOf(t *testing.T, lim plugin.Limits, n int) []*sharedReplica {
	t.Helper()
	ps, ok := teststore.Postgres(t).(domain.PaceShares)
	if !ok {
		t.Fatal("the PostgreSQL store does not share a pace")
	}
	var out []*sharedReplica
	for i := range n {
		p := newPacer(lim, 2*time.Second)
		p.sh = &share{store: ps, platform: "discord", bot: lim.Bot, replica: fmt.Sprintf("r%d", i+1)}
		p.noShare = true
		// Beats spread over the part of the epoch they are written in.
		phase := beatFrom + time.Duration(i)*(beatTo-beatFrom)/time.Duration(n)
		out = append(out, &sharedReplica{p: p, phase: phase, next: phase, alive: true, busy: func(time.Duration) bool { return true }})
	}
	return out
}

// runShared moves time on from p0 in steps of 5 ms until end: each live
// replica beats when due, and each busy one takes every request its
// pacer lets go (edits: the global window only).
func runShared(t *testing.T, rs []*sharedReplica, from, end time.Duration) {
	t.Helper()
	for d := from; d < end; d += 5 * time.Millisecond {
		now := p0.Add(d)
		for _, r := range rs {
			if !r.alive {
				continue
			}
			if d >= r.next {
				if err := r.p.sh.beat(t.Context(), r.p, now, now); err != nil {
					t.Fatal(err)
				}
				r.next += beatEvery
			}
			if !r.busy(d) {
				continue
			}
			if _, full := r.p.saturated(now); full && r.skipsSaturated {
				continue // as a flush claims no room of a saturated platform
			}
			for {
				if _, ok, _ := r.p.take("discord:1", now, false); !ok {
					break
				}
				r.took = append(r.took, now)
			}
		}
	}
}

// sendsWithin counts the requests of rs in [p0+from, p0+to).
func sendsWithin(rs []*sharedReplica, from, to time.Duration) int {
	n := 0
	for _, r := range rs {
		for _, at := range r.took {
			if !at.Before(p0.Add(from)) && at.Before(p0.Add(to)) {
				n++
			}
		}
	}
	return n
}

func allTimes(rs []*sharedReplica) []time.Time {
	var all []time.Time
	for _, r := range rs {
		all = append(all, r.took...)
	}
	slices.SortFunc(all, func(a, b time.Time) int { return a.Compare(b) })
	return all
}

// TestSharedPacersKeepToTheGlobalLimit: three replicas of one bot, each
// asking for all it can, joining a third of a second apart, send
// together no more than the bot's pace in any second (45 of Discord's
// 50) nor in any 200 ms (9), and between them use most of it.
func TestSharedPacersKeepToTheGlobalLimit(t *testing.T) {
	rs := sharedReplicas(t, 3)
	runShared(t, rs, 0, 6*time.Second)
	all := allTimes(rs)
	if most := mostIn(all, time.Second); most > 45 {
		t.Errorf("%d requests in one second across the replicas; the bot's pace is 45", most)
	}
	if most := mostIn(all, 200*time.Millisecond); most > 9 {
		t.Errorf("%d requests in 200 ms across the replicas; the bot's pace is 9", most)
	}
	if n := sendsWithin(rs, 3*time.Second, 5*time.Second); n < 80 {
		t.Errorf("%d requests in 2 s across the replicas; want most of the bot's 90", n)
	}
	for _, r := range rs {
		if n := len(r.took); n < 40 {
			t.Errorf("%s took %d requests in 6 s; want its share", r.p.sh.replica, n)
		}
	}
}

// TestSharedPaceFollowsDemand: a replica with nothing to send keeps one
// place of the window and the busy one gets the rest.
func TestSharedPaceFollowsDemand(t *testing.T) {
	rs := sharedReplicas(t, 2)
	rs[1].busy = func(time.Duration) bool { return false }
	runShared(t, rs, 0, 4*time.Second)
	if n := sendsWithin(rs[:1], 2*time.Second, 4*time.Second); n < 70 {
		t.Errorf("the busy replica sent %d requests in 2 s beside an idle one; want about 80 (8 of 9 places)", n)
	}
	if most := mostIn(allTimes(rs), time.Second); most > 45 {
		t.Errorf("%d requests in one second across the replicas", most)
	}
}

// TestSharedPaceOfADeadReplicaComesBack: when one of three replicas stops
// beating (it died), the other two take its share back once its beat
// is two epochs old (within three seconds), and never exceed the bot's
// pace meanwhile.
func TestSharedPaceOfADeadReplicaComesBack(t *testing.T) {
	rs := sharedReplicas(t, 3)
	runShared(t, rs, 0, 3*time.Second)
	rs[1].alive = false // dies at 3 s
	runShared(t, rs, 3*time.Second, 8*time.Second)
	all := allTimes(rs)
	if most := mostIn(all, time.Second); most > 45 {
		t.Errorf("%d requests in one second across the replicas", most)
	}
	// Its last beat was in epoch 2: the beats of epoch 4 leave it out,
	// and the others' shares grow at 5 s (share.beat).
	back := 6 * time.Second
	if n := sendsWithin(rs, back, back+2*time.Second); n < 85 {
		t.Errorf("the two live replicas sent %d requests in the 2 s from %s; want most of the bot's 90", n, back)
	}
}

// slackLike are limits as the Slack adapter publishes them: a global
// window four epochs long.
var slackLike = plugin.Limits{
	Global: plugin.Window{N: 20, Span: 4 * time.Second},
	Room:   plugin.Window{N: 4, Span: 4400 * time.Millisecond},
	Bot:    "bot-2",
}

// TestSharedPaceGrowsUnderALongWindow: with a global window longer than
// an epoch (Slack's 20 in 4 s), a share that grows does so once the
// window has passed, although every beat meanwhile computes it again. A
// replica that joins two busy others, and one that comes back from a
// pause past its beat's life (a stopped process), each send again
// within a few seconds, not never; and the three keep to the bot's pace.
func TestSharedPaceGrowsUnderALongWindow(t *testing.T) {
	rs := sharedReplicasOf(t, slackLike, 3)
	rs[2].alive = false // joins at 3 s
	runShared(t, rs, 0, 3*time.Second)
	rs[2].alive, rs[2].next = true, 3*time.Second+rs[2].phase
	runShared(t, rs, 3*time.Second, 10*time.Second)
	rs[1].alive = false // stopped at 10 s for 5 s
	runShared(t, rs, 10*time.Second, 15*time.Second)
	rs[1].alive, rs[1].next = true, 15*time.Second+rs[1].phase
	runShared(t, rs, 15*time.Second, 30*time.Second)

	// A joiner is a member at its second beat (4 s) and its share grows
	// when the window has passed after that epoch's beats: 4.75 s + 4 s.
	if n := sendsWithin(rs[2:], 3*time.Second, 10*time.Second); n == 0 {
		t.Errorf("the replica that joined at 3 s sent nothing by 10 s")
	}
	if n := sendsWithin(rs[1:2], 15*time.Second, 22*time.Second); n == 0 {
		t.Errorf("the replica paused from 10 s to 15 s sent nothing by 22 s")
	}
	for _, r := range rs {
		if n := sendsWithin([]*sharedReplica{r}, 26*time.Second, 30*time.Second); n < 3 {
			t.Errorf("%s took %d requests from 26 s to 30 s; want its share of the 20", r.p.sh.replica, n)
		}
	}
	if most := mostIn(allTimes(rs), slackLike.Global.Span); most > slackLike.Global.N {
		t.Errorf("%d requests in 4 s across the replicas; the bot's pace is %d", most, slackLike.Global.N)
	}
	if n := sendsWithin(rs, 26*time.Second, 30*time.Second); n < 18 {
		t.Errorf("%d requests from 26 s to 30 s across the replicas; want most of the bot's 20", n)
	}
}

// TestSharedPaceKeepsTheSharesOfReplicasWaitingOutTheWindow: three busy
// replicas that, as the service does, ask nothing while their global
// window is full, share Slack's 20 in 4 s. Each spends its share early
// in the window and waits out the rest; it still wants it, and keeps it:
// together they send nearly the bot's pace, not the one place each that
// an epoch of no asking would leave them.
func TestSharedPaceKeepsTheSharesOfReplicasWaitingOutTheWindow(t *testing.T) {
	rs := sharedReplicasOf(t, slackLike, 3)
	for _, r := range rs {
		r.skipsSaturated = true
	}
	runShared(t, rs, 0, 30*time.Second)
	if most := mostIn(allTimes(rs), slackLike.Global.Span); most > slackLike.Global.N {
		t.Errorf("%d requests in 4 s across the replicas; the bot's pace is %d", most, slackLike.Global.N)
	}
	if n := sendsWithin(rs, 14*time.Second, 30*time.Second); n < 70 {
		t.Errorf("%d requests from 14 s to 30 s across the replicas; want most of the bot's 80", n)
	}
}

// mostIn reports the most requests in any span of d.
func mostIn(times []time.Time, d time.Duration) int {
	most, j := 0, 0
	for i := range times {
		for times[i].Sub(times[j]) >= d {
			j++
		}
		most = max(most, i-j+1)
	}
	return most
}

// TestAllotAddsUpToTheWindow: whatever the members and their demands,
// their places add up to the window's (k windows' when there are more
// members than places), each member has one, and the rest follow demand.
func TestAllotAddsUpToTheWindow(t *testing.T) {
	g := plugin.Window{N: 9, Span: 200 * time.Millisecond}
	for _, demands := range [][]int{{0}, {5}, {0, 0}, {100, 0}, {3, 3, 3}, {1, 50, 7}, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, {9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4}} {
		var ms []domain.PaceMember
		for i, d := range demands {
			ms = append(ms, domain.PaceMember{Replica: fmt.Sprintf("r%02d", i), Demand: d})
		}
		k := (len(ms) + g.N - 1) / g.N
		sum := 0
		for i, m := range ms {
			w := allot(ms, m.Replica, g)
			if w.Span != g.Span*time.Duration(k) || w.N < 1 {
				t.Fatalf("%v: %s gets %+v", demands, m.Replica, w)
			}
			if i > 0 && demands[i] > demands[0] && w.N < allot(ms, ms[0].Replica, g).N {
				t.Errorf("%v: %s asked for more than r00 and got fewer places", demands, m.Replica)
			}
			sum += w.N
		}
		if sum != k*g.N {
			t.Errorf("%v: the places add up to %d; the window has %d", demands, sum, k*g.N)
		}
	}
	if w := allot([]domain.PaceMember{{Replica: "r1"}}, "r2", g); w.N != 0 {
		t.Errorf("a replica that is no member gets %+v", w)
	}
}
