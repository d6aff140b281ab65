package notify

import (
	"fmt"
	"sync"
	"time"

	"github.com/taskloom/taskloom/plugin"
)

// DefaultMaxPaceWait is the longest a sender waits for the platform's
// global limit before giving the room back to be sent later.
const DefaultMaxPaceWait = 2 * time.Second

// pacer keeps one platform's requests within its published limits
// (plugin.Limits) and within the pauses its 429s ask for, so that rooms
// flushed at once wait their turn instead of being refused.
//
// A request to a room whose own window is full is not waited for: the
// room is given back, due when the window has room (a sender is not held
// for seconds by one busy room). A request that must wait for the global
// window waits, when that is within maxWait, and is given back otherwise.
//
// A room's window is its bucket's (plugin.Limits.Bucket): the channel
// the platform counts its messages in.
//
// Alone, it paces one process. Replicas sending as one bot through one
// PostgreSQL share its limits (share.go): the global window is this
// replica's share of the bot's (setShare), and a room's window is booked
// in the database too, whichever replica sent to the room before.
type pacer struct {
	lim     plugin.Limits
	maxWait time.Duration
	sh      *share // nil when the pacer is alone

	mu sync.Mutex
	// limit is the global window kept to: lim.Global alone, this
	// replica's share of it when shared.
	limit plugin.Window
	// noShare is set while the replica has no share yet (it has just
	// joined): no request goes until a beat gives it one.
	noShare bool
	// shareEnds is when the share runs out on the pacer's clock unless
	// another beat is tried (share.beat): a replica stopped for seconds
	// is no member for the others, who have taken its places meanwhile.
	// Zero when alone.
	shareEnds time.Time
	// grows are larger shares, each kept to from its time on, oldest
	// first (setShare).
	grows []grow
	// asked counts the requests asked for since the last beat, and those
	// put off for the global window: the demand the share follows.
	asked      int
	global     window
	rooms      map[string]*window
	pausedAll  time.Time
	pausedRoom map[string]time.Time
	sweepAt    int // the number of rooms at which the next sweep runs
}

func newPacer(lim plugin.Limits, maxWait time.Duration) *pacer {
	return &pacer{lim: lim, maxWait: maxWait, limit: lim.Global, rooms: map[string]*window{}, pausedRoom: map[string]time.Time{}, sweepAt: 64}
}

// shareRetry is how soon a request is tried again while the replica has
// no share: its next beat may give it one.
const shareRetry = 100 * time.Millisecond

// grow is a larger share and when it is kept to.
type grow struct {
	w  plugin.Window
	at time.Time
}

// setShare makes w the global window kept to: at once when it allows no
// more requests than the current one, else from growAt on (share.beat
// says why), keeping the latest bookings that fit it. A zero w.N holds
// every request until a share is set.
//
// A grow set by an earlier beat still comes at its own time, cut down to
// w: the shares it was taken from shrank then, and a later beat's share
// is no safer to take sooner. Were it put off to each new beat's growAt
// instead, a window longer than an epoch (Slack's 4 s) would never let a
// share grow while the beats go on — a replica that joined others, or
// came back from a pause, would send nothing again.
func (p *pacer) setShare(w plugin.Window, growAt time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	grows := w.N > 0 && (p.noShare || slower(p.limit, w))
	if !grows {
		p.applyLocked(w)
		p.grows = nil
		return
	}
	kept := p.grows[:0]
	for _, g := range p.grows {
		if !g.at.Before(growAt) {
			break // w comes sooner (a replica alone takes the whole limit at once)
		}
		if slower(w, g.w) {
			g.w = w
		}
		kept = append(kept, g)
	}
	p.grows = kept
	if n := len(kept); n > 0 && kept[n-1].w == w {
		return // already due, at its earlier time
	}
	p.grows = append(p.grows, grow{w: w, at: growAt})
}

// applyLocked makes w the global window now.
func (p *pacer) applyLocked(w plugin.Window) {
	p.noShare = w.N <= 0
	if w.N <= 0 || w == p.limit {
		return
	}
	old := p.global.ordered()
	if len(old) > w.N {
		old = old[len(old)-w.N:]
	}
	p.limit, p.global = w, window{times: old}
}

// shareUntil sets when the share runs out unless another beat is tried.
func (p *pacer) shareUntil(t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.shareEnds = t
}

// takeAsked returns the demand counted since it was last taken.
func (p *pacer) takeAsked() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.asked
	p.asked = 0
	return n
}

// window is a sliding-window log: the times of the latest bookings, at
// most the window's N, oldest first from next once it is full.
type window struct {
	times []time.Time
	next  int
}

// free is the earliest time at or after now at which w takes one more
// booking under lim.
func (w *window) free(lim plugin.Window, now time.Time) time.Time {
	if lim.N <= 0 || len(w.times) < lim.N {
		return now
	}
	return later(now, w.times[w.next].Add(lim.Span))
}

// book records a request at at, which is never before the one booked
// before it (take books at the clock's now).
func (w *window) book(lim plugin.Window, at time.Time) {
	switch {
	case lim.N <= 0:
	case len(w.times) < lim.N:
		w.times = append(w.times, at)
	default:
		w.times[w.next] = at
		w.next = (w.next + 1) % lim.N
	}
}

// ordered is the bookings, oldest first.
func (w *window) ordered() []time.Time {
	out := make([]time.Time, 0, len(w.times))
	out = append(out, w.times[w.next:]...)
	return append(out, w.times[:w.next]...)
}

// within is how many bookings are less than span before now.
func (w *window) within(span time.Duration, now time.Time) int {
	n := 0
	for _, t := range w.times {
		if now.Sub(t) < span {
			n++
		}
	}
	return n
}

// newest is the latest booking, zero when there is none.
func (w *window) newest() time.Time {
	if len(w.times) == 0 {
		return time.Time{}
	}
	return w.times[(w.next+len(w.times)-1)%len(w.times)]
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// bucket is the window room's messages count in.
func (p *pacer) bucket(room string) string {
	if p.lim.Bucket == nil {
		return room
	}
	return p.lim.Bucket(room)
}

// admit reports whether a request to room may go within maxWait of now,
// booking nothing; when it may not, it returns when to try again. A
// replica without a share of a shared window admits nothing. A post
// counts in the room's window; an edit (post false) only in the global
// one, as both platforms count edits apart from new messages.
func (p *pacer) admit(room string, now time.Time, post bool) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked++
	roomAt, at := p.freeLocked(p.bucket(room), now, post)
	switch {
	case roomAt.After(now):
		return roomAt, false
	case p.unsharedLocked(now):
		return p.shareAtLocked(at), false // not held by a replica that cannot send
	case at.Sub(now) > p.maxWait:
		return at, false
	}
	return at, true
}

// take books a request to room at now, when both its windows have room
// now. Otherwise it books nothing and returns when to try again, and
// whether it is the room's own window (or pause) that is full — filled
// since admit by another thread of the same channel. A request is booked
// only at the moment it is made, never ahead: requests that a busy
// machine wakes late then count when they go, and cannot crowd into a
// window they were not booked in.
func (p *pacer) take(room string, now time.Time, post bool) (retry time.Time, ok, roomFull bool) {
	room = p.bucket(room)
	p.mu.Lock()
	defer p.mu.Unlock()
	roomAt, at := p.freeLocked(room, now, post)
	switch {
	case roomAt.After(now):
		return roomAt, false, true
	case at.After(now):
		p.asked++ // waiting for the global window: wants more of it
		return at, false, false
	}
	p.global.book(p.limit, now)
	if p.lim.Room.N > 0 && post {
		rw := p.rooms[room]
		if rw == nil {
			rw = &window{}
			p.rooms[room] = rw
		}
		rw.book(p.lim.Room, now)
	}
	p.sweep(now)
	return now, true, false
}

// saturated reports whether no request could go within maxWait of now —
// the global window or a global pause holds every room, or the replica
// has no share of a shared window — and until when. Without a share it is
// not known when one comes (the first grow set, or any beat): a flush
// claims none of the platform's rooms meanwhile, leaving them to the
// replicas that can send, and looks again at the grow or soon.
func (p *pacer) saturated(now time.Time) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, at := p.freeLocked("", now, false)
	if p.unsharedLocked(now) {
		return p.shareAtLocked(at), true
	}
	return at, at.Sub(now) > p.maxWait
}

// shareAtLocked is when to look again for a share, the global window
// having room at at: at the first grow set, or at at (soon: a beat may
// give one).
func (p *pacer) shareAtLocked(at time.Time) time.Time {
	if len(p.grows) > 0 {
		return later(at, p.grows[0].at)
	}
	return at
}

// unsharedLocked reports whether the replica has no share of a shared
// global window at now: none yet, or the last ran out.
func (p *pacer) unsharedLocked(now time.Time) bool {
	return p.noShare || !p.shareEnds.IsZero() && !now.Before(p.shareEnds)
}

// freeLocked is when the room's window and the global one have room for
// a request at or after now, pauses included.
func (p *pacer) freeLocked(room string, now time.Time, post bool) (roomAt, globalAt time.Time) {
	for len(p.grows) > 0 && !now.Before(p.grows[0].at) {
		p.applyLocked(p.grows[0].w)
		p.grows = p.grows[1:]
	}
	roomAt = later(now, p.pausedRoom[room])
	if rw := p.rooms[room]; rw != nil && post {
		roomAt = later(roomAt, rw.free(p.lim.Room, now))
	}
	globalAt = later(p.global.free(p.limit, now), p.pausedAll)
	if p.lim.Spread && p.limit.N > 1 && p.global.within(p.limit.Span, now) >= (p.limit.N+1)/2 {
		// Evenly spread once the window is half full (plugin.Limits.Spread):
		// to crowd into the platform's window, a request must then be
		// delayed by several gaps more than those a second before it. A
		// few requests at once still go at once.
		globalAt = later(globalAt, p.global.newest().Add(p.limit.Span/time.Duration(p.limit.N)))
	}
	if p.unsharedLocked(now) {
		globalAt = later(globalAt, now.Add(shareRetry))
	}
	return roomAt, globalAt
}

// pause holds requests to room, or to every room when global, until
// until: what a 429's Retry-After asks.
func (p *pacer) pause(room string, until time.Time, global bool) {
	room = p.bucket(room)
	p.mu.Lock()
	defer p.mu.Unlock()
	if global {
		p.pausedAll = later(p.pausedAll, until)
		return
	}
	p.pausedRoom[room] = later(p.pausedRoom[room], until)
}

// sweep forgets rooms whose windows and pauses are over, once there are
// twice as many as after the last sweep: memory follows the rooms
// recently sent to, not every room ever sent to.
func (p *pacer) sweep(now time.Time) {
	if len(p.rooms)+len(p.pausedRoom) < p.sweepAt {
		return
	}
	for room, w := range p.rooms {
		if !w.newest().Add(p.lim.Room.Span).After(now) {
			delete(p.rooms, room)
		}
	}
	for room, until := range p.pausedRoom {
		if !until.After(now) {
			delete(p.pausedRoom, room)
		}
	}
	p.sweepAt = max(64, 2*(len(p.rooms)+len(p.pausedRoom)))
}

// heldBack is a request the pacer put off until a later time: not a
// failed delivery, and counted as no attempt.
type heldBack struct {
	room  string
	until time.Time
}

func (e *heldBack) Error() string {
	return fmt.Sprintf("%s: held back by the platform's rate limits until %s", e.room, e.until.Format(time.RFC3339Nano))
}
