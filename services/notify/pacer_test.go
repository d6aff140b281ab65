package notify

import (
	"fmt"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

var p0 = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)

// reserve asks p as the service does: whether the request may go soon
// (before the send is begun), then, right before it is made, takes its
// turn, trying again at the time take names until it goes. It returns
// when the request went.
func reserve(p *pacer, room string, now time.Time, post bool) (time.Time, bool) {
	if at, ok := p.admit(room, now, post); !ok {
		return at, false
	}
	for {
		retry, ok, roomFull := p.take(room, now, post)
		switch {
		case ok:
			return now, true
		case roomFull:
			return retry, false
		}
		now = retry
	}
}

// TestPacerKeepsToBothWindows: requests go at once up to the global
// window, then each at the time the window has room again, waited for
// within maxWait; a room whose own window is full is put off to the time
// it has room, with nothing booked; edits count only globally.
func TestPacerKeepsToBothWindows(t *testing.T) {
	p := newPacer(plugin.Limits{
		Global: plugin.Window{N: 3, Span: time.Second},
		Room:   plugin.Window{N: 2, Span: 5 * time.Second},
		Bucket: domain.RoomScope,
	}, 2*time.Second)
	steps := []struct {
		room   string
		post   bool
		now    time.Duration
		at     time.Duration
		booked bool
	}{
		{"discord:a", true, 0, 0, true},
		{"discord:a", true, 0, 0, true},
		{"discord:a", true, 0, 5 * time.Second, false},                 // a's window is full until 5 s
		{"discord:a", false, 0, 0, true},                               // an edit is not a post
		{"discord:b", true, 0, time.Second, true},                      // the global window: wait for the first to age
		{"discord:c", true, 100 * time.Millisecond, time.Second, true}, // the second's slot
		{"discord:d", true, 100 * time.Millisecond, time.Second, true}, // the third's
		{"discord:e", true, 100 * time.Millisecond, 2 * time.Second, true},
		{"discord:f", true, 100 * time.Millisecond, 2 * time.Second, true},
		{"discord:g", true, 100 * time.Millisecond, 2 * time.Second, true},
		{"discord:h", true, 100 * time.Millisecond, 3 * time.Second, false}, // beyond maxWait: given back
		{"discord:a:thread", true, 5 * time.Second, 5 * time.Second, true},  // a thread counts with its channel (Bucket)
	}
	for i, s := range steps {
		at, ok := reserve(p, s.room, p0.Add(s.now), s.post)
		if got := at.Sub(p0); got != s.at || ok != s.booked {
			t.Fatalf("step %d (%s at %s): %s, %v; want %s, %v", i, s.room, s.now, got, ok, s.at, s.booked)
		}
	}
}

// TestPacerSpreadsTheGlobalWindow: with Spread, requests asked for at
// once go at once until the window is half full, then Span/N apart,
// never two in one gap, and still N in any span.
// Discord counts its 50 a second over a second of its own: bursts of 9
// booked a second apart reached it with no slack, and a busy machine's
// uneven delays crowded them into one second (global 429s in half the
// runs of a thousand rooms).
func TestPacerSpreadsTheGlobalWindow(t *testing.T) {
	p := newPacer(plugin.Limits{Global: plugin.Window{N: 9, Span: 200 * time.Millisecond}, Spread: true}, 2*time.Second)
	var got []time.Duration
	for i := range 20 {
		at, ok := reserve(p, fmt.Sprintf("discord:%d", i), p0, true)
		if !ok {
			t.Fatalf("request %d given back", i)
		}
		got = append(got, at.Sub(p0))
	}
	gap := 200 * time.Millisecond / 9
	for i := range 5 {
		if got[i] != 0 {
			t.Fatalf("request %d went at %s; the first 5 (half the window) go at once: %v", i, got[i], got)
		}
	}
	for i := 5; i < len(got); i++ {
		if d := got[i] - got[i-1]; d < gap {
			t.Fatalf("requests %d and %d went %s apart, want at least %s: %v", i-1, i, d, gap, got)
		}
	}
	// Spread costs no rate: in bursts the 20th would go at 400 ms, the
	// third window's; spread, one gap later at most.
	if last := got[len(got)-1]; last > 400*time.Millisecond+gap {
		t.Fatalf("the 20th request went at %s, want by %s: %v", last, 400*time.Millisecond+gap, got)
	}
	// Without Spread the window's N go at once, as a platform counting
	// only N in any span allows.
	q := newPacer(plugin.Limits{Global: plugin.Window{N: 9, Span: 200 * time.Millisecond}}, 2*time.Second)
	for i := range 9 {
		if at, ok := reserve(q, fmt.Sprintf("discord:%d", i), p0, true); !ok || !at.Equal(p0) {
			t.Fatalf("request %d without Spread: at %s, %v; want at once", i, at.Sub(p0), ok)
		}
	}
}

// TestPacerPauses: a room's 429 holds that room only; a global one holds
// every room; both end at their time.
func TestPacerPauses(t *testing.T) {
	p := newPacer(plugin.Limits{Global: plugin.Window{N: 100, Span: time.Second}, Bucket: domain.RoomScope}, 2*time.Second)
	p.pause("slack:C1:1.5", p0.Add(10*time.Second), false)
	if at, ok := reserve(p, "slack:C1", p0, true); ok || at != p0.Add(10*time.Second) {
		t.Errorf("a paused room: %s, %v", at.Sub(p0), ok)
	}
	if _, ok := reserve(p, "slack:C2", p0, true); !ok {
		t.Error("another room was held by a room's pause")
	}
	p.pause("slack:C2", p0.Add(time.Second), true)
	if at, ok := reserve(p, "slack:C3", p0, true); !ok || at != p0.Add(time.Second) {
		t.Errorf("under a global pause of 1 s: %s, %v; want to wait 1 s", at.Sub(p0), ok)
	}
	if at, ok := reserve(p, "slack:C1", p0.Add(10*time.Second), true); !ok || at != p0.Add(10*time.Second) {
		t.Errorf("after the room's pause: %s, %v", at.Sub(p0), ok)
	}
}

// TestPacerForgetsIdleRooms: the pacer's memory follows the rooms sent to
// within a window, not every room ever sent to.
func TestPacerForgetsIdleRooms(t *testing.T) {
	p := newPacer(plugin.Limits{Room: plugin.Window{N: 5, Span: 5 * time.Second}}, 2*time.Second)
	for i := range 10_000 {
		now := p0.Add(time.Duration(i) * 10 * time.Millisecond) // 100 rooms a second
		if _, ok := reserve(p, fmt.Sprintf("discord:%d", i), now, true); !ok {
			t.Fatalf("room %d held back", i)
		}
	}
	if n := len(p.rooms); n > 2*500+64 {
		t.Errorf("the pacer remembers %d rooms; 500 were sent to in the last window", n)
	}
}

// TestPacerBookChecksTheRoomAgain: two threads of one channel admitted at
// once share the channel's window; the second to book is put off rather
// than sent beyond it.
func TestPacerBookChecksTheRoomAgain(t *testing.T) {
	p := newPacer(plugin.Limits{Room: plugin.Window{N: 1, Span: time.Second}, Bucket: domain.RoomScope}, 2*time.Second)
	for _, room := range []string{"slack:C1:1.1", "slack:C1:2.2"} {
		if _, ok := p.admit(room, p0, true); !ok {
			t.Fatalf("%s not admitted", room)
		}
	}
	if _, ok, _ := p.take("slack:C1:1.1", p0, true); !ok {
		t.Fatal("first take refused")
	}
	if at, ok, roomFull := p.take("slack:C1:2.2", p0, true); ok || !roomFull || !at.Equal(p0.Add(time.Second)) {
		t.Fatalf("second take in the channel: %s, %v, room full %v; want put off 1 s for the room", at.Sub(p0), ok, roomFull)
	}
}

// TestPacerCountsLateRequestsWhenTheyGo: a sender that a busy machine
// wakes late counts in the window when its request goes, not when it was
// due, so late requests cannot crowd the next window beyond its N.
func TestPacerCountsLateRequestsWhenTheyGo(t *testing.T) {
	p := newPacer(plugin.Limits{Global: plugin.Window{N: 2, Span: time.Second}}, 2*time.Second)
	at := func(d time.Duration) time.Time { return p0.Add(d) }
	for range 2 {
		if _, ok, _ := p.take("discord:1", p0, true); !ok {
			t.Fatal("a take within the window was refused")
		}
	}
	if retry, ok, _ := p.take("discord:1", p0, true); ok || !retry.Equal(at(time.Second)) {
		t.Fatalf("third take at 0: %v, %s; want to try again at 1 s", ok, retry.Sub(p0))
	}
	// Woken at 1.5 s instead of 1 s: it goes, and so does one more at
	// 1.6 s; a third in that span must wait until the first of them ages.
	for _, d := range []time.Duration{1500 * time.Millisecond, 1600 * time.Millisecond} {
		if _, ok, _ := p.take("discord:1", at(d), true); !ok {
			t.Fatalf("take at %s refused", d)
		}
	}
	if retry, ok, _ := p.take("discord:1", at(1700*time.Millisecond), true); ok || !retry.Equal(at(2500*time.Millisecond)) {
		t.Fatalf("take at 1.7 s: %v, %s; want to try again at 2.5 s", ok, retry.Sub(p0))
	}
}

// TestPacerWithoutAShareIsSaturated: a pacer sharing its global window
// that has no share — it has just joined, or its share ran out — says it
// is saturated, so that a flush claims none of its platform's rooms and
// leaves them to the replicas that can send, until the grow it was set,
// when there is one; and admits no request, so that a room claimed
// meanwhile is given back rather than held. With its share, it is not.
func TestPacerWithoutAShareIsSaturated(t *testing.T) {
	p := newPacer(slackLike, 2*time.Second)
	p.noShare = true
	if _, full := p.saturated(p0); !full {
		t.Fatal("a pacer with no share yet is not saturated")
	}
	if _, ok := p.admit("slack:C1", p0, true); ok {
		t.Fatal("a pacer with no share yet admits a request, whose room it would hold until a share comes")
	}
	p.setShare(plugin.Window{N: 7, Span: 4 * time.Second}, p0.Add(5*time.Second))
	if at, full := p.saturated(p0.Add(time.Second)); !full || !at.Equal(p0.Add(5*time.Second)) {
		t.Fatalf("before its grow: saturated %v until %s; want until the grow at 5 s", full, at.Sub(p0))
	}
	if _, full := p.saturated(p0.Add(5 * time.Second)); full {
		t.Fatal("saturated once its share has come")
	}
	if _, ok, _ := p.take("slack:C1", p0.Add(5*time.Second), true); !ok {
		t.Fatal("no request goes once its share has come")
	}
	p.shareUntil(p0.Add(6 * time.Second))
	if _, full := p.saturated(p0.Add(6 * time.Second)); !full {
		t.Fatal("not saturated once its share ran out")
	}
	if at, ok := p.admit("slack:C2", p0.Add(6*time.Second), true); ok || !at.After(p0.Add(6*time.Second)) {
		t.Fatalf("once its share ran out, admit says %v, again at %s", ok, at.Sub(p0))
	}
}

// TestPacerGrowsInTurn: grows set by successive beats come each at its
// own time, cut down to what a later beat allots; a replica that finds
// itself alone takes the whole limit at once, whatever grows were due
// later.
func TestPacerGrowsInTurn(t *testing.T) {
	p := newPacer(slackLike, 2*time.Second)
	p.setShare(plugin.Window{N: 4, Span: 4 * time.Second}, p0) // shrinks at once
	p.setShare(plugin.Window{N: 9, Span: 4 * time.Second}, p0.Add(5*time.Second))
	p.setShare(plugin.Window{N: 7, Span: 4 * time.Second}, p0.Add(6*time.Second))
	p.setShare(plugin.Window{N: 8, Span: 4 * time.Second}, p0.Add(7*time.Second))
	for _, step := range []struct {
		at time.Duration
		n  int
	}{{4 * time.Second, 4}, {5 * time.Second, 7}, {6 * time.Second, 7}, {7 * time.Second, 8}} {
		p.saturated(p0.Add(step.at)) // applies what is due
		if p.limit.N != step.n {
			t.Errorf("at %s the share is %d; want %d", step.at, p.limit.N, step.n)
		}
	}
	p.setShare(plugin.Window{N: 10, Span: 4 * time.Second}, p0.Add(12*time.Second))
	p.setShare(slackLike.Global, p0.Add(8*time.Second)) // alone
	if p.saturated(p0.Add(8 * time.Second)); p.limit != slackLike.Global {
		t.Errorf("alone at 8 s the share is %+v; want the whole %+v", p.limit, slackLike.Global)
	}
}
