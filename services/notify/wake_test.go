package notify_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/notify"
)

// TestEarlyWakeFlushesOnlyTheHeldRoom: a room the platform's limits put
// off wakes the loop before its next tick; that wake sends the room put
// off and no other, so a room that has had its batch this interval gets
// its next one at the tick, not twice inside one interval.
func TestEarlyWakeFlushesOnlyTheHeldRoom(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		st := open(t)
		clk := clock.NewFake(t0)
		f, lr := limitedFixture(t, st, clk, plugin.Limits{Room: plugin.Window{N: 1, Span: 10 * time.Second}},
			func(s *setup) { s.opts = func(o *notify.Options) { o.Interval = time.Minute } })
		r1 := f.create("chat:R1", "Build auth").Number
		r2 := f.create("chat:R2", "Watch the build").Number
		f.iterate(r1, 10, domain.VerdictContinue, true)
		f.iterate(r2, 10, domain.VerdictContinue, true)
		if got := f.flush(); got != 2 {
			t.Fatalf("first flush delivered %d, want both rooms", got)
		}
		ctx := ctxFor(t)
		if err := f.svc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.svc.Stop(context.Background()) })
		if err := clk.BlockUntil(ctx, 1); err != nil { // the loop waits for its minute
			t.Fatal(err)
		}
		f.iterate(r1, 20, domain.VerdictContinue, true) // R1's next batch: due at the tick
		post(t, st, "chat:R2", "Ready for review", clk.Now())
		f.svc.Poke() // R2's post: held back by R2's window until 10 s
		eventually(t, func() bool {
			for _, p := range list(t, st, domain.NotificationPending) {
				if p.Room == "chat:R2" && p.NextAttemptAt.Equal(t0.Add(10*time.Second)) {
					return true
				}
			}
			return false
		})
		if err := clk.BlockUntil(ctx, 1); err != nil {
			t.Fatal(err)
		}
		clk.Advance(10 * time.Second) // the early wake
		count := func(room string) int {
			n := 0
			for _, m := range lr.messages() {
				if strings.HasPrefix(m, room+"|") {
					n++
				}
			}
			return n
		}
		eventually(t, func() bool { return count("chat:R2") == 2 && clk.Waiters() == 1 })
		if got := count("chat:R1"); got != 1 {
			t.Fatalf("R1 got %d messages by the early wake for R2, want 1: %q", got, lr.messages())
		}
		clk.Advance(50 * time.Second) // the tick
		eventually(t, func() bool { return count("chat:R1") == 2 })
	})
}

// TestEarlyWakeForASaturatedPlatformLeavesTheOthers: when a platform's
// global window holds every one of its rooms, the loop wakes when it has
// room again and flushes that platform's rooms; a room of another
// platform that had its batch this interval waits for the tick.
func TestEarlyWakeForASaturatedPlatformLeavesTheOthers(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		st := open(t)
		clk := clock.NewFake(t0)
		lr := &limitedRoom{room: &room{name: "chat"}, clk: clk, lim: plugin.Limits{Global: plugin.Window{N: 1, Span: 10 * time.Second}}}
		other := &room{name: "other"}
		f := newFixture(t, st, "a", func(s *setup) {
			s.clk = clk
			s.platforms = func(*plugin.Runtime) []plugin.Platform { return []plugin.Platform{lr, other} }
			// One sender: a second one could claim chat's other room
			// before the first send fills the window.
			s.opts = func(o *notify.Options) { o.Interval, o.Senders = time.Minute, 1 }
		})
		var tasks []int64
		for _, r := range []string{"chat:R1", "chat:R2", "other:X"} {
			tasks = append(tasks, f.create(r, "Watch the build").Number)
		}
		for _, n := range tasks {
			f.iterate(n, 10, domain.VerdictContinue, true)
		}
		if got := f.flush(); got != 2 {
			t.Fatalf("first flush delivered %d, want chat's first room and other:X", got)
		}
		ctx := ctxFor(t)
		if err := f.svc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.svc.Stop(context.Background()) })
		if err := clk.BlockUntil(ctx, 1); err != nil {
			t.Fatal(err)
		}
		// other:X's next batch: due at the tick.
		if _, err := st.Enqueue(ctx, domain.Notification{Room: "other:X", TaskNumber: tasks[2], Category: domain.NotifyError,
			Payload: []byte(`{"error":"disk full"}`), CreatedAt: clk.Now()}); err != nil {
			t.Fatal(err)
		}
		clk.Advance(10 * time.Second) // chat's window has room again: the early wake
		eventually(t, func() bool { return len(lr.messages()) == 2 && clk.Waiters() == 1 })
		if got := other.messages(); len(got) != 1 {
			t.Fatalf("other:X got %q by chat's early wake; want its one batch of this interval", got)
		}
		clk.Advance(50 * time.Second) // the tick
		eventually(t, func() bool { return len(other.messages()) == 2 })
	})
}

// TestFlushCappedGoesOnAtOnce: a flush claims a bounded number of rooms
// (a thousand by default), so that the loop looks at its schedule again;
// the rooms still due then go at once, not an interval after the others.
// A thousand rooms with running tasks are the user's case: the last ten
// got their first batch 5 s later than the rest, past the 30 s they are
// promised.
func TestFlushCappedGoesOnAtOnce(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		st := open(t)
		f := newFixture(t, st, "a", func(s *setup) { s.opts = func(o *notify.Options) { o.Interval, o.Senders = time.Minute, 1 } })
		f.svc.SetRoomsPerFlush(2)
		var tasks []int64
		for i := range 5 {
			tasks = append(tasks, f.create(fmt.Sprintf("chat:R%d", i), "Watch the build").Number)
		}
		for _, n := range tasks {
			f.iterate(n, 10, domain.VerdictContinue, true)
		}
		ctx := ctxFor(t)
		if err := f.svc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.svc.Stop(context.Background()) })
		if err := f.clk.BlockUntil(ctx, 1); err != nil {
			t.Fatal(err)
		}
		f.clk.Advance(time.Minute) // the tick
		got, err := f.out.waitMessages(ctx, 5)
		if err != nil {
			t.Fatalf("after one tick: %v (%q)", err, got)
		}
		// Each room had its one batch; the next tick finds nothing new.
		eventually(t, func() bool { return f.clk.Waiters() == 1 })
		if got := f.out.messages(); len(got) != 5 {
			t.Fatalf("rooms got %d messages, want one each: %q", len(got), got)
		}
	})
}
