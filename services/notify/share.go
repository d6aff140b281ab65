package notify

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// How replicas sending as one bot share its limits (docs/deploy.md,
// "What replicas share").
const (
	// beatEvery is an epoch: each replica beats once in every one, and
	// shares follow the members and demands of the epoch before.
	beatEvery = time.Second
	// beatFrom and beatTo bound when in its epoch a beat is written, so
	// that every beat of an epoch is in the database before any beat of
	// the next one reads it, whatever the replicas' clocks disagree by
	// within a quarter of an epoch.
	beatFrom, beatTo = beatEvery / 4, 3 * beatEvery / 4
	// shareTTL is how long a member's row is read after its last beat.
	shareTTL = 3 * time.Second
	// growMargin is added to the wait before a share grows.
	growMargin = 50 * time.Millisecond
)

// epochOf is t's epoch and how far into it t is.
func epochOf(t time.Time) (int64, time.Duration) {
	n := t.UnixNano()
	e := n / int64(beatEvery)
	return e, time.Duration(n - e*int64(beatEvery))
}

// share is a pacer's part in its bot's limits among the replicas that
// send as that bot through one database (domain.PaceShares).
//
// The global limit is split by beats, so that a request costs no round
// trip for it. Time runs in epochs of a second on the clock the replicas
// share; in the middle of each, every replica writes how many requests it
// asked for, and reads the others' rows. The members of an epoch are the
// replicas that beat in it; in the next epoch each member computes the
// same split from the same rows: every member one place of the window
// (an idle replica's first message needs no wait) and the rest in
// proportion to the demands, by largest remainder, so that the places add
// up to the window's. A share shrinks at the beat that computes it; one
// that grows waits until every member has beaten in the epoch and one
// more window has passed, so that the requests of the shares it is taken
// from have aged out of the window first.
//
// A replica that joins is no member until its second beat and sends
// nothing meanwhile, nor until its share grows a window later, unless it
// sees no other replica: then the whole limit is its own at once. A
// replica that dies is no member two epochs after its last beat: its
// share is back within about three seconds. One frozen for longer than
// that stops using its share when it comes back, until a beat gives it
// one again. A replica that stops deletes its row (leave).
//
// A room's window is booked in the database as each message goes (one
// small statement, Service.bookRoom), so it holds when successive claims
// of the room land on different replicas, and when two threads of one
// channel are sent to by two replicas at once.
type share struct {
	store    domain.PaceShares
	platform string
	bot      string
	replica  string

	mu sync.Mutex // one beat at a time
	// epoch is the epoch of the last beat; zero before the first.
	epoch int64
	// failed is when the last beat failed: the next waits an epoch.
	failed time.Time
	// asked are the demands counted at the last beats, newest last, as
	// many as the bot's window has epochs (demand).
	asked []int
}

// demand adds asked, the requests asked for since the last beat, to the
// demands of the beats before, and returns what the beat writes: those
// asked over the bot's global window, at least an epoch. A replica that
// spends its share early in a window longer than an epoch (Slack's 4 s)
// asks nothing while it waits out the rest — its flushes claim no room of
// a saturated platform —, and would be left one place for the epochs it
// waited; counted over the window, it keeps the share it uses.
func (sh *share) demand(asked int, window time.Duration) int {
	n := max(1, int((window+beatEvery-1)/beatEvery))
	sh.asked = append(sh.asked, asked)
	if len(sh.asked) > n {
		sh.asked = slices.Delete(sh.asked, 0, len(sh.asked)-n)
	}
	sum := 0
	for _, a := range sh.asked {
		sum += a
	}
	return sum
}

// beatDue reports whether a beat is due at now, on the shared clock: none
// yet in now's epoch, and now within its beating part.
func (sh *share) beatDue(now time.Time) bool {
	e, in := epochOf(now)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if !sh.failed.IsZero() && now.Sub(sh.failed) < beatEvery {
		return false
	}
	return sh.epoch == 0 || e > sh.epoch && in >= beatFrom && in < beatTo
}

// beat writes p's beat at now, on the shared clock, when due, and sets
// p's global window to its share; local is now on p's clock. A beat
// already being written by another sender is left to it. When the store
// cannot be reached the share stays as it was, and the next beat waits
// an epoch.
func (sh *share) beat(ctx context.Context, p *pacer, now, local time.Time) error {
	if !sh.mu.TryLock() {
		return nil
	}
	defer sh.mu.Unlock()
	e, in := epochOf(now)
	// A first beat goes at once: it reads no epoch's members but to see
	// whether the replica is alone, which a late write cannot hide.
	if sh.epoch != 0 && (e <= sh.epoch || in < beatFrom || in >= beatTo) {
		return nil
	}
	// The share, whatever this beat makes it, lasts until the beats of
	// the epoch after next begin, unless a beat is tried again by then:
	// a replica that missed an epoch is no member for the others' beats
	// in the next one, whose grows let requests of that share in the
	// window no further back than that (a stopped process comes back
	// with its old share, and the others have taken its places). A
	// beat that fails keeps the share (the store's outage is the
	// others' too).
	p.shareUntil(local.Add(time.Duration(e+2)*beatEvery + beatFrom - time.Duration(now.UnixNano())))
	members, err := sh.store.PaceBeat(ctx, domain.PaceMember{Platform: sh.platform, Bot: sh.bot, Replica: sh.replica,
		At: now, Epoch: e, Demand: sh.demand(p.takeAsked(), p.lim.Global.Span)}, shareTTL)
	if err != nil {
		sh.failed = now
		if sh.epoch == 0 {
			// No share yet and no store to ask: pace alone, as without
			// a store to share through, until a beat goes through.
			p.setShare(p.lim.Global, local)
		}
		return err
	}
	sh.failed = time.Time{}
	sh.epoch = e
	var last []domain.PaceMember // the members of the epoch before, with their demand then
	others := false
	for _, m := range members {
		others = others || m.Replica != sh.replica
		switch {
		case m.Epoch == e-1:
			last = append(last, domain.PaceMember{Replica: m.Replica, Demand: m.Demand})
		case m.Epoch == e && m.PrevEpoch == e-1:
			last = append(last, domain.PaceMember{Replica: m.Replica, Demand: m.PrevDemand})
		}
	}
	if !others {
		p.setShare(p.lim.Global, local) // alone
		return nil
	}
	w := allot(last, sh.replica, p.lim.Global)
	grow := time.Duration(e)*beatEvery + beatTo + w.Span + growMargin - time.Duration(now.UnixNano())
	p.setShare(w, local.Add(grow))
	return nil
}

// leave deletes the replica's beat: its share goes back to the others at
// their next beat.
func (sh *share) leave(ctx context.Context) error {
	return sh.store.PaceLeave(ctx, sh.platform, sh.bot, sh.replica)
}

// slower reports whether a allows fewer requests a second than b.
func slower(a, b plugin.Window) bool {
	// a.N/a.Span < b.N/b.Span
	return int64(a.N)*int64(b.Span) < int64(b.N)*int64(a.Span)
}

// allot is self's share of the global window g among members (ordered by
// replica; none when self is not one): with m members and N places, the window is k times as long
// and holds k·N places, k the least that gives every member one; each
// member gets one, and the rest go in proportion to the demands (evenly
// when nobody asked), by largest remainder, ties to the earlier replica.
// The places of all members add up to the window's, so the members
// together keep to g.
func allot(members []domain.PaceMember, self string, g plugin.Window) plugin.Window {
	i := slices.IndexFunc(members, func(m domain.PaceMember) bool { return m.Replica == self })
	switch {
	case g.N <= 0:
		return g
	case i < 0:
		return plugin.Window{} // not a member: no share
	}
	m := len(members)
	k := (m + g.N - 1) / g.N
	rest := k*g.N - m
	weights := make([]int64, m)
	var total int64
	for j, mb := range members {
		weights[j] = int64(max(mb.Demand, 0))
		total += weights[j]
	}
	if total == 0 {
		for j := range weights {
			weights[j] = 1
		}
		total = int64(m)
	}
	places := make([]int, m)
	rems := make([]int64, m)
	left := rest
	for j, w := range weights {
		places[j] = int(int64(rest) * w / total)
		rems[j] = int64(rest) * w % total
		left -= places[j]
	}
	order := make([]int, m)
	for j := range order {
		order[j] = j
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case rems[a] > rems[b]:
			return -1
		case rems[a] < rems[b]:
			return 1
		}
		return 0
	})
	for _, j := range order[:left] {
		places[j]++
	}
	return plugin.Window{N: 1 + places[i], Span: g.Span * time.Duration(k)}
}
