package notify_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/notify"
)

// limitedRoom is the recording platform with published limits: it notes
// when, on the fake clock, each message went out.
type limitedRoom struct {
	*room
	clk *clock.Fake
	lim plugin.Limits

	mu    sync.Mutex
	times []time.Time
	by    map[string][]time.Time
}

func (l *limitedRoom) Limits() plugin.Limits { return l.lim }

func (l *limitedRoom) Send(ctx context.Context, roomID string, m plugin.Outgoing) (plugin.SentMessage, error) {
	l.mu.Lock()
	now := l.clk.Now()
	l.times = append(l.times, now)
	if l.by == nil {
		l.by = map[string][]time.Time{}
	}
	l.by[roomID] = append(l.by[roomID], now)
	l.mu.Unlock()
	return l.room.Send(ctx, roomID, m)
}

// limitedFixture is newFixture whose platform is a limitedRoom with lim,
// on clk.
func limitedFixture(t *testing.T, st domain.Store, clk *clock.Fake, lim plugin.Limits, with ...func(*setup)) (*fixture, *limitedRoom) {
	t.Helper()
	lr := &limitedRoom{room: &room{name: "chat"}, clk: clk, lim: lim}
	with = append([]func(*setup){func(s *setup) {
		s.clk = clk
		s.platforms = func(*plugin.Runtime) []plugin.Platform { return []plugin.Platform{lr} }
	}}, with...)
	return newFixture(t, st, "a", with...), lr
}

// mostWithin reports the most messages sent in any span of d.
func mostWithin(times []time.Time, d time.Duration) int {
	most := 0
	for i := range times {
		n := 0
		for _, u := range times[i:] {
			if u.Sub(times[i]) < d {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// flushAdvancing runs f's flush while moving the fake clock on in small
// steps whenever a sender waits on it, until the flush returns. A sender
// woken by a step may run a step or two later: the times a platform
// records lag the pacer's by that much.
func flushAdvancing(t *testing.T, f *fixture) int {
	t.Helper()
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := f.svc.Flush(f.ctx)
		done <- result{n, err}
	}()
	ctx := ctxFor(t)
	for {
		select {
		case r := <-done:
			if r.err != nil {
				t.Fatal(r.err)
			}
			return r.n
		case <-ctx.Done():
			t.Fatal("the flush did not end")
		default:
		}
		if f.clk.Waiters() > 0 {
			f.clk.Advance(5 * time.Millisecond)
		}
		time.Sleep(200 * time.Microsecond) // let the senders run
	}
}

// TestFanOutKeepsToThePublishedLimits: 30 rooms with news at once go out
// in one flush, concurrently, never more than the global window allows,
// each room's message once, with no failed attempt.
func TestFanOutKeepsToThePublishedLimits(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		st := open(t)
		clk := clock.NewFake(t0)
		f, lr := limitedFixture(t, st, clk, plugin.Limits{
			Global: plugin.Window{N: 4, Span: time.Second},
			Room:   plugin.Window{N: 1, Span: 10 * time.Second},
		})
		const rooms = 30
		var numbers []int64
		for i := range rooms {
			task, err := f.tasks.Create(f.ctx, domain.NewTask{Goal: "Build auth", RoomID: fmt.Sprintf("chat:R%02d", i),
				RequestorID: fmt.Sprintf("u%d", i), Now: clk.Now()})
			if err != nil {
				t.Fatal(err)
			}
			numbers = append(numbers, task.Number)
		}
		for _, n := range numbers {
			f.iterate(n, 10, domain.VerdictContinue, true)
		}
		if got := flushAdvancing(t, f); got != rooms {
			t.Fatalf("the flush delivered to %d rooms, want %d", got, rooms)
		}
		lr.mu.Lock()
		times, by := lr.times, lr.by
		lr.mu.Unlock()
		// 50 ms less than the window: the steps a woken sender may lag.
		if most := mostWithin(times, 950*time.Millisecond); most > 4 {
			t.Errorf("%d messages went out within one second; the platform takes 4", most)
		}
		for room, ts := range by {
			if len(ts) != 1 {
				t.Errorf("%s got %d messages", room, len(ts))
			}
		}
		if spent := times[len(times)-1].Sub(t0); spent > rooms/4*time.Second+time.Second {
			t.Errorf("the last room waited %s; the limits force %s", spent, rooms/4*time.Second)
		}
		noPending(t, st)
	})
}

// TestHeldBackRoomIsNotAFailure: a room whose window is full when its
// task ends keeps its terminal message, due when the window has room,
// with no attempt counted; it goes out then.
func TestHeldBackRoomIsNotAFailure(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		st := open(t)
		clk := clock.NewFake(t0)
		f, lr := limitedFixture(t, st, clk, plugin.Limits{
			Room: plugin.Window{N: 1, Span: 10 * time.Second},
		})
		n := f.create("chat:R1", "Build auth").Number
		f.iterate(n, 10, domain.VerdictContinue, true)
		if got := f.flush(); got != 1 {
			t.Fatalf("first flush delivered %d", got)
		}
		clk.Advance(time.Second)
		f.iterate(n, 100, domain.VerdictDone, true)
		if got, err := f.svc.FlushUrgent(f.ctx); err != nil || got != 0 {
			t.Fatalf("the urgent flush within the room's window delivered %d, %v", got, err)
		}
		pending := list(t, st, domain.NotificationPending)
		if len(pending) == 0 {
			t.Fatal("the terminal message was not kept")
		}
		for _, p := range pending {
			if p.Attempts != 0 || !p.NextAttemptAt.Equal(t0.Add(10*time.Second)) {
				t.Errorf("held back: attempts %d, due %s; want 0, at the window's end", p.Attempts, p.NextAttemptAt.Sub(t0))
			}
		}
		clk.Advance(9 * time.Second)
		if got := f.flush(); got != 1 {
			t.Fatalf("at the window's end the flush delivered %d", got)
		}
		if msgs := lr.messages(); len(msgs) != 2 {
			t.Errorf("messages = %q", msgs)
		}
		noPending(t, st)
	})
}

// TestHeldBackRoomIsSentWhenDue: the service's loop wakes for a room the
// pacer put off when it is due, not at its next flush a minute later.
func TestHeldBackRoomIsSentWhenDue(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		st := open(t)
		clk := clock.NewFake(t0)
		f, lr := limitedFixture(t, st, clk, plugin.Limits{
			Room: plugin.Window{N: 1, Span: 10 * time.Second},
		}, func(s *setup) { s.opts = func(o *notify.Options) { o.Interval = time.Minute } })
		n := f.create("chat:R1", "Build auth").Number
		f.iterate(n, 10, domain.VerdictContinue, true)
		if got := f.flush(); got != 1 {
			t.Fatalf("first flush delivered %d", got)
		}
		ctx := ctxFor(t)
		if err := f.svc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.svc.Stop(context.Background()) })
		if err := clk.BlockUntil(ctx, 1); err != nil { // the loop waits for its minute
			t.Fatal(err)
		}
		f.iterate(n, 100, domain.VerdictDone, true)
		f.svc.Poke() // the terminal message: held back until 10 s
		eventually(t, func() bool {
			p := list(t, st, domain.NotificationPending)
			return len(p) > 0 && p[0].NextAttemptAt.Equal(t0.Add(10*time.Second))
		})
		if err := clk.BlockUntil(ctx, 1); err != nil {
			t.Fatal(err)
		}
		clk.Advance(10 * time.Second)
		if msgs, err := lr.waitMessages(ctx, 2); err != nil {
			t.Fatalf("%v: %q", err, msgs)
		}
	})
}

// eventually polls cond until it holds or the test's time runs out.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	ctx := ctxFor(t)
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal("condition not met in time")
		case <-time.After(time.Millisecond):
		}
	}
}

// TestStopSendsWhatPeopleWaitFor: Stop sends an ended task's message and
// leaves progress batches in the outbox for the next start, so that a
// backlog does not hold a shutdown.
func TestStopSendsWhatPeopleWaitFor(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		st := open(t)
		f := newFixture(t, st, "a", func(s *setup) { s.opts = func(o *notify.Options) { o.Interval = time.Hour } })
		running := f.create("chat:R1", "Watch the build").Number
		ended := f.create("chat:R2", "Ship it").Number
		f.iterate(running, 10, domain.VerdictContinue, true)
		f.iterate(ended, 100, domain.VerdictDone, true)
		if err := f.svc.Start(f.ctx); err != nil {
			t.Fatal(err)
		}
		if err := f.svc.Stop(ctxFor(t)); err != nil {
			t.Fatal(err)
		}
		msgs := f.out.messages()
		if len(msgs) != 1 || !strings.HasPrefix(msgs[0], "chat:R2|") {
			t.Fatalf("messages at shutdown = %q; want the ended task's only", msgs)
		}
		for _, p := range list(t, st, domain.NotificationPending) {
			if p.Room != "chat:R1" || p.Attempts != 0 {
				t.Errorf("left pending: %+v; want R1's progress, never attempted", p)
			}
		}
		if n, _ := st.Pending(f.ctx); n == 0 {
			t.Error("R1's progress was not kept")
		}
	})
}

// givingBack counts the rows given back to the outbox.
type givingBack struct {
	domain.Store
	mu   sync.Mutex
	rows int
}

func (g *givingBack) GiveBack(ctx context.Context, owner string, ids []int64, due time.Time) error {
	g.mu.Lock()
	g.rows += len(ids)
	g.mu.Unlock()
	return g.Store.GiveBack(ctx, owner, ids, due)
}

// TestSaturatedPlatformIsSkipped: once a platform's global window holds
// every room, a flush claims none of its rooms — it does not claim and
// give back each — and goes on to another platform's.
func TestSaturatedPlatformIsSkipped(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		st := &givingBack{Store: open(t)}
		clk := clock.NewFake(t0)
		busy := &limitedRoom{room: &room{name: "chat"}, clk: clk, lim: plugin.Limits{Global: plugin.Window{N: 2, Span: 10 * time.Second}}}
		other := &room{name: "other"}
		f := newFixture(t, st, "a", func(s *setup) {
			s.clk = clk
			s.platforms = func(*plugin.Runtime) []plugin.Platform { return []plugin.Platform{busy, other} }
			s.opts = func(o *notify.Options) { o.Senders = 1 }
		})
		for i, r := range []string{"chat:1", "chat:2", "chat:3", "chat:4", "chat:5", "other:1", "other:2"} {
			if _, err := st.Enqueue(f.ctx, domain.Notification{Room: r, Category: domain.NotifyMessage,
				Payload: []byte(`{"kind":"post","text":"hello"}`), CreatedAt: t0.Add(time.Duration(i-10) * time.Second)}); err != nil {
				t.Fatal(err)
			}
		}
		if got := f.flush(); got != 4 {
			t.Fatalf("the flush delivered %d rooms, want chat's 2 and other's 2 (chat %q, other %q, %d given back)", got, busy.messages(), other.messages(), st.rows)
		}
		if len(busy.messages()) != 2 || len(other.messages()) != 2 {
			t.Errorf("chat got %q, other got %q", busy.messages(), other.messages())
		}
		if st.rows != 0 {
			t.Errorf("%d rows were claimed and given back; the saturated platform's rooms should not be claimed", st.rows)
		}
		if n, _ := st.Pending(f.ctx); n != 3 {
			t.Errorf("%d rows pending, want chat's last 3", n)
		}
	})
}

// TestStopDoesNotWaitForATurn: a sender of the loop's flush waiting for
// the platform's window when Stop comes gives its room back, due at once
// and with no attempt counted, instead of holding the shutdown.
func TestStopDoesNotWaitForATurn(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		st := open(t)
		clk := clock.NewFake(t0)
		f, lr := limitedFixture(t, st, clk, plugin.Limits{Global: plugin.Window{N: 1, Span: time.Second}},
			func(s *setup) { s.opts = func(o *notify.Options) { o.Interval = time.Minute } })
		for _, r := range []string{"chat:R1", "chat:R2"} {
			f.iterate(f.create(r, "Watch the build").Number, 10, domain.VerdictContinue, true)
		}
		ctx := ctxFor(t)
		if err := f.svc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := clk.BlockUntil(ctx, 1); err != nil { // the loop's minute
			t.Fatal(err)
		}
		clk.Advance(time.Minute)
		// The other room waits its turn, its claim renewed meanwhile: two timers.
		eventually(t, func() bool { return len(lr.messages()) == 1 && clk.Waiters() == 2 })
		stopCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := f.svc.Stop(stopCtx); err != nil {
			t.Fatalf("Stop = %v; want it to end without waiting for the turn", err)
		}
		waiting := "chat:R2" // the room whose sender waited: the one not sent
		if strings.HasPrefix(lr.messages()[0], "chat:R2|") {
			waiting = "chat:R1"
		}
		pending := list(t, st, domain.NotificationPending)
		if len(pending) == 0 {
			t.Fatalf("%s's progress was not kept", waiting)
		}
		for _, p := range pending {
			if p.Room != waiting || p.Attempts != 0 || p.NextAttemptAt.After(clk.Now()) {
				t.Errorf("kept %s's row: attempts %d, due %s; want %s's rows due now with no attempt",
					p.Room, p.Attempts, p.NextAttemptAt.Sub(t0), waiting)
			}
		}
	})
}
