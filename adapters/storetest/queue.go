package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

func testClaimEmpty(t *testing.T, s domain.Store) {
	noClaim(t, s, t0)
	create(t, s, newTask("Ready"))
	for _, c := range []domain.Claim{{Now: t0, Lease: time.Minute}, {Owner: "w1", Lease: time.Minute}} {
		if task, err := s.ClaimTask(t.Context(), c); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("ClaimTask(%+v) = #%d, %v; want ErrInvalid", c, task.Number, err)
		}
	}
	if task := claim(t, s, "w1", t0, time.Minute); task.Number != 1 || task.Fence != 1 {
		t.Errorf("a valid claim after refused ones got #%d at fence %d", task.Number, task.Fence)
	}
}

func testClaimEvent(t *testing.T, s domain.Store) {
	task := create(t, s, newTask("Claim me"))
	got := claim(t, s, "worker-a", at(time.Second), 5*time.Minute)
	want := task
	want.Status = domain.StatusRunning
	want.LeaseOwner = "worker-a"
	want.LeaseExpiresAt = at(time.Second + 5*time.Minute)
	want.Fence = 1
	want.StartedAt = at(time.Second)
	want.EventSeq = 2
	sameTask(t, "claimed task", got, want)
	sameTask(t, "stored claimed task", get(t, s, task.Number), want)

	evs := events(t, s, task.Number)
	if len(evs) != 2 {
		t.Fatalf("events = %v, want created, claimed", eventTypes(evs))
	}
	ev := evs[1]
	if ev.Type != domain.EventClaimed || ev.Sequence != 2 || ev.Fence != 1 || ev.Actor != "worker-a" || !ev.Time.Equal(at(time.Second)) {
		t.Errorf("claimed event = %+v", ev)
	}
	changed := slices.Sorted(maps.Keys(payload(t, ev).Changes))
	if want := []string{"fence", "lease_expires_at", "lease_owner", "started_at", "status"}; !slices.Equal(changed, want) {
		t.Errorf("claimed event changes %v, want %v", changed, want)
	}

	// A second claim, after the task was given back, keeps started_at and
	// changes only what it must.
	update(t, s, task.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Released(cur, "worker-a", 1, at(2*time.Second))
	})
	again := claim(t, s, "worker-b", at(3*time.Second), time.Minute)
	if again.Fence != 2 || !again.StartedAt.Equal(at(time.Second)) || again.LeaseOwner != "worker-b" {
		t.Errorf("second claim: fence %d, started %v, owner %q", again.Fence, again.StartedAt, again.LeaseOwner)
	}
	evs = events(t, s, task.Number)
	changed = slices.Sorted(maps.Keys(payload(t, evs[len(evs)-1]).Changes))
	if want := []string{"fence", "lease_expires_at", "lease_owner"}; !slices.Equal(changed, want) {
		t.Errorf("second claimed event changes %v, want %v", changed, want)
	}

	// The same worker takes the task back once its lease ran out: the
	// status and the owner stay, and the event says only what changed,
	// each value as encoding/json writes it (here a time whose fraction
	// ends in zeros).
	when := at(time.Hour + 120*time.Millisecond)
	third := claim(t, s, "worker-b", when, 90*time.Second)
	evs = events(t, s, task.Number)
	p := payload(t, evs[len(evs)-1])
	changed = slices.Sorted(maps.Keys(p.Changes))
	if want := []string{"fence", "lease_expires_at"}; !slices.Equal(changed, want) {
		t.Errorf("a claim by the owner whose lease ran out changes %v, want %v", changed, want)
	}
	for name, v := range map[string]any{"fence": third.Fence, "lease_expires_at": when.Add(90 * time.Second)} {
		want, _ := json.Marshal(v)
		if got := p.Changes[name]; string(got) != string(want) {
			t.Errorf("claimed event: %s is %s, want %s", name, got, want)
		}
	}
	check(t, s, task.Number)
}

func testClaimOrder(t *testing.T, s domain.Store) {
	for i := range 3 {
		create(t, s, newTask(fmt.Sprintf("Queue task %d", i+1)))
	}
	// Never-processed tasks go first, lowest number first. Processing them
	// at different times sets the order of the next round.
	processed := map[int64]time.Duration{1: 10 * time.Second, 2: 30 * time.Second, 3: 20 * time.Second}
	for _, want := range []int64{1, 2, 3} {
		c := claim(t, s, "w", t0, time.Hour)
		if c.Number != want {
			t.Fatalf("claimed #%d, want #%d (never processed, by number)", c.Number, want)
		}
		iterate(t, s, c, at(processed[want]), 10, domain.VerdictContinue)
	}
	queue, err := s.ListTasks(t.Context(), domain.TaskFilter{Order: domain.OrderQueue})
	if err != nil {
		t.Fatal(err)
	}
	if got := numbers(queue); !slices.Equal(got, []int64{1, 3, 2}) {
		t.Errorf("ListTasks(OrderQueue) = %v, want [1 3 2]", got)
	}
	// A new task has never been processed: it goes first.
	create(t, s, newTask("Late arrival"))
	for _, want := range []int64{4, 1, 3, 2} {
		c := claim(t, s, "w", at(time.Minute), time.Hour)
		if c.Number != want {
			t.Fatalf("claimed #%d, want #%d", c.Number, want)
		}
	}
	noClaim(t, s, at(time.Minute))
	check(t, s, 1, 2, 3, 4)
}

func testClaimSkipsUnclaimable(t *testing.T, s domain.Store) {
	// One task in every status the queue must not serve.
	paused := create(t, s, newTask("Paused"))
	update(t, s, paused.Number, func(cur domain.Task) (domain.Mutation, error) { return domain.Paused(cur, "u1", t0) })

	canceled := create(t, s, newTask("Canceled"))
	update(t, s, canceled.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Canceled(cur, "u1", "", t0)
	})

	outcomes := []struct {
		name   string
		status domain.Status
		apply  func(o *domain.Outcome)
	}{
		{"Waiting", domain.StatusWaiting, func(o *domain.Outcome) { o.Wait = domain.WaitAnswer }},
		{"Completed", domain.StatusCompleted, func(o *domain.Outcome) { o.Verdict = domain.VerdictDone }},
		{"Failed", domain.StatusFailed, func(o *domain.Outcome) { o.Verdict = domain.VerdictStuck; o.Reason = "no access" }},
		{"Stalemate", domain.StatusStalemate, func(o *domain.Outcome) { o.Progress = 0 }},
	}
	for _, oc := range outcomes {
		in := newTask(oc.name)
		in.MaxStaleIterations = 1
		task := create(t, s, in)
		c := claim(t, s, "w", t0, time.Minute)
		if c.Number != task.Number {
			t.Fatalf("claimed #%d, want #%d", c.Number, task.Number)
		}
		o := outcome(c, at(time.Second), 10, domain.VerdictContinue)
		oc.apply(&o)
		got := update(t, s, c.Number, func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, o) })
		if got.Status != oc.status {
			t.Fatalf("%s: status %s after the iteration", oc.name, got.Status)
		}
	}
	// Long after every lease would have expired, nothing is ready.
	noClaim(t, s, at(24*time.Hour))
	check(t, s, 1, 2, 3, 4, 5, 6)
}

func testClaimLease(t *testing.T, s domain.Store) {
	task := create(t, s, newTask("Leased"))
	a := claim(t, s, "worker-a", t0, time.Minute)
	noClaim(t, s, at(30*time.Second))
	noClaim(t, s, at(time.Minute-time.Microsecond))
	// At the moment the lease expires the task is free again, as
	// Task.HasLease says.
	b := claim(t, s, "worker-b", at(time.Minute), time.Minute)
	if b.Number != task.Number || b.Fence != a.Fence+1 || b.LeaseOwner != "worker-b" || !b.LeaseExpiresAt.Equal(at(2*time.Minute)) {
		t.Errorf("claim after expiry: #%d fence %d owner %q until %v", b.Number, b.Fence, b.LeaseOwner, b.LeaseExpiresAt)
	}
	if !b.StartedAt.Equal(t0) {
		t.Errorf("started_at moved to %v on the second claim", b.StartedAt)
	}
	check(t, s, task.Number)
}

func testRelease(t *testing.T, s domain.Store) {
	task := create(t, s, newTask("Give me back"))
	c := claim(t, s, "worker-a", t0, time.Hour)
	// Releasing with a fence that is not the task's is refused.
	_, err := s.UpdateTask(t.Context(), task.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Released(cur, "worker-a", c.Fence+1, at(time.Second))
	})
	if !errors.Is(err, domain.ErrStaleFence) {
		t.Errorf("release with a wrong fence: %v, want ErrStaleFence", err)
	}
	r := update(t, s, task.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Released(cur, "worker-a", c.Fence, at(time.Second))
	})
	if r.LeaseOwner != "" || !r.LeaseExpiresAt.IsZero() || r.Status != domain.StatusRunning {
		t.Errorf("released task: owner %q until %v, status %s", r.LeaseOwner, r.LeaseExpiresAt, r.Status)
	}
	// Free at once, long before the old lease would have expired.
	again := claim(t, s, "worker-b", at(2*time.Second), time.Hour)
	if again.Number != task.Number || again.Fence != c.Fence+1 {
		t.Errorf("claim after release: #%d fence %d", again.Number, again.Fence)
	}
	check(t, s, task.Number)
}

func testStaleFence(t *testing.T, s domain.Store) {
	task := create(t, s, newTask("Two workers, one task"))
	a := claim(t, s, "worker-a", t0, time.Minute)
	// worker-a stalls past its lease; worker-b takes the task over.
	b := claim(t, s, "worker-b", at(2*time.Minute), time.Minute)
	if b.Number != task.Number || b.Fence != a.Fence+1 {
		t.Fatalf("takeover claimed #%d at fence %d", b.Number, b.Fence)
	}
	before := get(t, s, task.Number)

	late := outcome(a, at(150*time.Second), 60, domain.VerdictContinue)
	late.Step.Result = "late result"
	_, err := s.UpdateTask(t.Context(), task.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Iterated(cur, late)
	})
	if !errors.Is(err, domain.ErrStaleFence) {
		t.Fatalf("commit with a stale fence: %v, want ErrStaleFence", err)
	}
	sameTask(t, "row after a rejected commit", get(t, s, task.Number), before)

	// The late result is recorded, not lost, and the row does not change.
	rej := update(t, s, task.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Rejected(cur, late, err)
	})
	want := before
	want.EventSeq++
	sameTask(t, "row after recording the rejection", rej, want)
	evs := events(t, s, task.Number)
	last := evs[len(evs)-1]
	p := payload(t, last)
	if last.Type != domain.EventResultRejected || last.Actor != "worker-a" || len(p.Changes) != 0 ||
		p.Detail["stale_fence"] != float64(a.Fence) || p.Detail["result"] != "late result" {
		t.Errorf("rejection event = %s %s by %s", last.Type, last.Payload, last.Actor)
	}
	if steps, _ := s.Steps(t.Context(), task.Number); len(steps) != 0 {
		t.Errorf("a rejected result left %d steps", len(steps))
	}

	// worker-b's result is accepted.
	done := iterate(t, s, b, at(170*time.Second), 40, domain.VerdictContinue)
	if done.Iteration != 1 || done.Progress != 40 || done.LeaseOwner != "" {
		t.Errorf("worker-b's commit: iteration %d progress %d owner %q", done.Iteration, done.Progress, done.LeaseOwner)
	}
	check(t, s, task.Number)
}

// testConcurrentClaims runs workers that claim and commit as fast as they
// can, and fails if two of them ever hold the same task, or if any task's
// record does not replay.
func testConcurrentClaims(t *testing.T, s domain.Store) {
	const (
		workers = 8
		claims  = 1000 // per worker
		tasks   = 20
	)
	for i := range tasks {
		in := newTask(fmt.Sprintf("Contended task %d", i+1))
		in.MaxIterations = 2 * workers * claims / tasks * 2 // never reached
		in.MaxStaleIterations = in.MaxIterations
		create(t, s, in)
	}
	ctx := ctxTimeout(t, 5*time.Minute)

	// A shared fake clock, moved forward a millisecond by every call. With
	// an hour's lease no lease expires during the test, so every task is
	// held by at most one worker at a time — which is what is checked.
	var ticks atomic.Int64
	now := func() time.Time { return at(time.Duration(ticks.Add(1)) * time.Millisecond) }

	var (
		mu        sync.Mutex
		held      = map[int64]string{} // task → worker holding it
		lastFence = map[int64]int64{}
		total     atomic.Int64
	)
	var wg sync.WaitGroup
	for w := range workers {
		owner := fmt.Sprintf("worker-%d", w)
		rng := rand.New(rand.NewPCG(uint64(w), 1))
		wg.Go(func() {
			for n := 0; n < claims; {
				if ctx.Err() != nil {
					t.Errorf("%s: timed out after %d claims", owner, n)
					return
				}
				c, err := s.ClaimTask(ctx, domain.Claim{Owner: owner, Now: now(), Lease: time.Hour})
				if errors.Is(err, domain.ErrNoTask) {
					runtime.Gosched()
					continue
				}
				if err != nil {
					t.Errorf("%s: claim: %v", owner, err)
					return
				}
				n++
				total.Add(1)
				mu.Lock()
				if other, ok := held[c.Number]; ok {
					t.Errorf("%s claimed #%d while %s holds it", owner, c.Number, other)
				}
				if c.Fence <= lastFence[c.Number] {
					t.Errorf("%s claimed #%d at fence %d after fence %d", owner, c.Number, c.Fence, lastFence[c.Number])
				}
				held[c.Number], lastFence[c.Number] = owner, c.Fence
				mu.Unlock()

				release := rng.IntN(5) == 0
				step := rng.IntN(2)
				_, err = s.UpdateTask(ctx, c.Number, func(cur domain.Task) (domain.Mutation, error) {
					// The row is locked and the lease still ours: nobody
					// else may hold the task until this commits.
					mu.Lock()
					if held[c.Number] != owner {
						t.Errorf("%s commits #%d held by %q", owner, c.Number, held[c.Number])
					}
					delete(held, c.Number)
					mu.Unlock()
					if release {
						return domain.Released(cur, owner, c.Fence, now())
					}
					o := outcome(c, now(), min(cur.Progress+step, 99), domain.VerdictContinue)
					o.Step.Params = json.RawMessage(fmt.Sprintf(`{"worker":%d,"claim":%d}`, w, n))
					return domain.Iterated(cur, o)
				})
				if err != nil {
					t.Errorf("%s: commit #%d at fence %d: %v", owner, c.Number, c.Fence, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if got := total.Load(); got != workers*claims {
		t.Errorf("%d claims, want %d", got, workers*claims)
	}
	var fences, claimed int64
	for n := int64(1); n <= tasks; n++ {
		row := get(t, s, n)
		fences += row.Fence
		for _, e := range events(t, s, n) {
			if e.Type == domain.EventClaimed {
				claimed++
			}
		}
		if row.LeaseOwner != "" || row.Status != domain.StatusRunning {
			t.Errorf("task #%d ends %s, leased by %q", n, row.Status, row.LeaseOwner)
		}
	}
	if fences != workers*claims || claimed != workers*claims {
		t.Errorf("fences add up to %d and there are %d claimed events; want %d of each", fences, claimed, workers*claims)
	}
	for n := int64(1); n <= tasks; n++ {
		check(t, s, n)
	}
}

// testClaimOnStoreClock: a claim on the store's clock is measured on the
// database's clock, which every replica shares, not on the time it gives.
func testClaimOnStoreClock(t *testing.T, s domain.Store) {
	create(t, s, newTask("on the store's clock"))
	before := time.Now()
	c, err := s.ClaimTask(t.Context(), domain.Claim{Owner: "w", Lease: time.Hour, StoreClock: true, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	// The database's clock may differ a little from this process's.
	lo, hi := before.Add(time.Hour-time.Minute), after.Add(time.Hour+time.Minute)
	if c.LeaseExpiresAt.Before(lo) || c.LeaseExpiresAt.After(hi) {
		t.Fatalf("lease expires at %v; want about an hour from now (%v)", c.LeaseExpiresAt, before)
	}
	room, rows, err := s.ClaimRoom(t.Context(), domain.RoomClaim{Owner: "w", Lease: time.Minute, StoreClock: true})
	if err != nil || room != "" || len(rows) != 0 {
		t.Fatalf("ClaimRoom on the store's clock = %q, %d rows, %v", room, len(rows), err)
	}
	check(t, s, c.Number)
}
