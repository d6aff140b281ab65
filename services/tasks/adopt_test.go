package tasks_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/tasks"
)

// unansweredStore is a store whose next claim commits but reports a
// broken connection, as a claim whose answer was lost does: the worker
// holds a task it does not know of.
type unansweredStore struct {
	domain.Store
	lose int
}

func (s *unansweredStore) ClaimTask(ctx context.Context, c domain.Claim) (domain.Task, error) {
	t, err := s.Store.ClaimTask(ctx, c)
	if err == nil && s.lose > 0 {
		s.lose--
		return domain.Task{}, errors.New("read tcp: connection reset by peer")
	}
	return t, err
}

// lostClaim makes task A on store kind open and a worker whose claim of A
// at t0 commits without its answer reaching it.
func lostClaim(t *testing.T, open teststore.Opener) (f *fixture, w *tasks.Worker, a int64) {
	t.Helper()
	f = newFixture(t, func(t testing.TB) domain.Store { return &unansweredStore{Store: open(t), lose: 1} })
	f.model.Default(listing)
	a = f.create("A").Number
	w = f.svc.Worker("w")
	if _, err := w.Step(f.ctx); err == nil {
		t.Fatal("the step whose claim went unanswered succeeded")
	}
	if got := f.task(a); got.LeaseOwner != "w" || got.Fence != 1 || got.Iteration != 0 {
		t.Fatalf("A: owner %q, fence %d, iteration %d; want claimed by w at fence 1, not run", got.LeaseOwner, got.Fence, got.Iteration)
	}
	return f, w, a
}

// iteratedFences lists the fences task n's iterations ran under.
func (f *fixture) iteratedFences(n int64) []int64 {
	f.t.Helper()
	evs, err := f.store.TaskEvents(f.ctx, n, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []int64
	for _, e := range evs {
		if e.Type == domain.EventIterated {
			out = append(out, e.Fence)
		}
	}
	return out
}

// TestAdoptOnlyLeasesStillHeld: a worker whose claim went unanswered runs
// that task under the claim only while the claim's lease holds with room
// for an iteration. A lease that has ended (anyone may claim the task),
// or is about to, is given back and the task claimed afresh, so no two
// workers run the same iteration at once.
func TestAdoptOnlyLeasesStillHeld(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		for _, c := range []struct {
			name  string
			after time.Duration // from the lost claim to the next step
			fence int64         // the fence A's iteration runs under
		}{
			{"lease held", 20 * time.Second, 1},
			{"lease about to end", lease - 5*time.Second, 2},
			{"lease ended", lease + time.Second, 2},
		} {
			t.Run(c.name, func(t *testing.T) {
				f, w, a := lostClaim(t, open)
				f.clk.Advance(c.after)
				if did, err := w.Step(f.ctx); !did || err != nil {
					t.Fatalf("next step: %v, %v; want A run", did, err)
				}
				if got := f.iteratedFences(a); len(got) != 1 || got[0] != c.fence {
					t.Fatalf("A's iterations ran under fences %v; want [%d]", got, c.fence)
				}
				if n := f.rejected(a); n != 0 {
					t.Fatalf("A has %d result_rejected events", n)
				}
				f.check()
			})
		}
	})
}

// TestAdoptedIterationEndsWithItsLease: an adopted task's iteration gets
// what is left of its lease, less the commit's margin, not a whole
// lease's budget: a model call still running when that is spent is
// cancelled, and the task given back, before the lease ends.
func TestAdoptedIterationEndsWithItsLease(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f, w, a := lostClaim(t, open)
		called := make(chan struct{})
		f.model.Then(func(ctx context.Context, _ plugin.ModelRequest) (plugin.ModelResponse, error) {
			close(called)
			<-ctx.Done()
			return plugin.ModelResponse{}, ctx.Err()
		})
		f.clk.Advance(20 * time.Second) // 40 s of the lease left: 30 s to run
		done := f.stepAsync(w)
		select {
		case <-called:
		case r := <-done:
			t.Fatalf("the step ended before it called the model: %v, %v", r.did, r.err)
		}
		if err := f.clk.BlockUntil(f.ctx, 1); err != nil {
			t.Fatal(err)
		}
		f.clk.Advance(31 * time.Second) // a whole lease's budget is 50 s
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the adopted iteration ran past what was left of its lease")
		}
		got := f.task(a)
		if got.LeaseOwner != "" || got.Iteration != 0 {
			t.Fatalf("A: owner %q, iteration %d; want given back unrun", got.LeaseOwner, got.Iteration)
		}
		if !got.LeaseExpiresAt.IsZero() || f.clk.Now().After(t0.Add(lease)) {
			t.Fatalf("A given back at %v; its lease ended at %v", f.clk.Now(), t0.Add(lease))
		}
		f.check()
	})
}
