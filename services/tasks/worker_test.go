package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
)

// claimCounter is a store that counts the claims made on their own
// (ClaimTask), and still claims with a commit (domain.NextClaimer).
type claimCounter struct {
	domain.Store
	claims atomic.Int64
}

func (s *claimCounter) ClaimTask(ctx context.Context, c domain.Claim) (domain.Task, error) {
	s.claims.Add(1)
	return s.Store.ClaimTask(ctx, c)
}

func (s *claimCounter) UpdateTaskAndClaim(ctx context.Context, number int64, fn domain.MutateFunc, next domain.Claim) (domain.Task, domain.Task, error) {
	return s.Store.(domain.NextClaimer).UpdateTaskAndClaim(ctx, number, fn, next)
}

// TestWorkerClaimsWithItsCommit: a worker claims on its own only its
// first task; every commit after that claims the next, in the queue's
// order, and Release gives the last one back untouched.
func TestWorkerClaimsWithItsCommit(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		var counter *claimCounter
		f := newFixture(t, func(t testing.TB) domain.Store {
			counter = &claimCounter{Store: open(t)}
			return counter
		})
		f.model.Default(rising)
		for i := range 3 {
			f.create(fmt.Sprintf("task %d", i+1))
		}
		w := f.svc.Worker("w")
		for i := range 6 {
			if did, err := w.Step(f.ctx); !did || err != nil {
				t.Fatalf("step %d: %v, %v", i+1, did, err)
			}
			f.clk.Advance(time.Second)
			// Tasks 1, 2, 3, 1, 2, 3: each served once before any twice.
			if n := int64(i%3 + 1); f.task(n).Iteration != i/3+1 {
				t.Fatalf("step %d: task #%d at iteration %d, want %d", i+1, n, f.task(n).Iteration, i/3+1)
			}
		}
		if n := counter.claims.Load(); n != 1 {
			t.Errorf("%d claims on their own for 6 iterations, want 1 (the first)", n)
		}
		held := f.task(1)
		if held.LeaseOwner != "w" || held.Fence != 3 || held.Iteration != 2 {
			t.Fatalf("task #1: owner %q, fence %d, iteration %d; want claimed by w with the last commit", held.LeaseOwner, held.Fence, held.Iteration)
		}
		if err := w.Release(f.ctx); err != nil {
			t.Fatal(err)
		}
		if got := f.task(1); got.LeaseOwner != "" || got.Fence != 3 || got.Iteration != 2 || got.Status != domain.StatusRunning {
			t.Errorf("task #1 after Release: owner %q, fence %d, iteration %d, %s; want given back untouched", got.LeaseOwner, got.Fence, got.Iteration, got.Status)
		}
		if n := len(f.model.Requests()); n != 6 {
			t.Errorf("%d model calls, want 6", n)
		}
		f.check()
	})
}

// TestWorkerGivesBackItsNextTaskOnHold: a task claimed with a commit is
// not run once the model refuses requests meanwhile: it goes back to the
// queue untouched, with the others on hold.
func TestWorkerGivesBackItsNextTaskOnHold(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		f.model.Decide("list_files", nil, 10, "continue")
		f.model.Then(func(context.Context, plugin.ModelRequest) (plugin.ModelResponse, error) {
			return plugin.ModelResponse{}, &plugin.ModelError{Class: plugin.ModelPermanent, Status: 401, Err: errors.New("invalid api key")}
		})
		f.model.Default(func(context.Context, plugin.ModelRequest) (plugin.ModelResponse, error) {
			return plugin.ModelResponse{Text: testkit.DecisionJSON("list_files", nil, 20, "continue")}, nil
		})
		a, b, c := f.create("A").Number, f.create("B").Number, f.create("C").Number
		w1, w2 := f.svc.Worker("w1"), f.svc.Worker("w2")
		if did, err := w1.Step(f.ctx); !did || err != nil {
			t.Fatalf("w1 on #%d: %v, %v", a, did, err)
		}
		if got := f.task(b); got.LeaseOwner != "w1" {
			t.Fatalf("#%d is leased to %q, want w1 (claimed with the commit of #%d)", b, got.LeaseOwner, a)
		}
		if did, err := w2.Step(f.ctx); !did || err != nil {
			t.Fatalf("w2 on #%d: %v, %v", c, did, err)
		}
		if s := f.svc.ModelState(); s == "ok" {
			t.Fatalf("model state %q after a 401, want on hold", s)
		}
		if did, err := w1.Step(f.ctx); !did || err != nil {
			t.Fatalf("w1 on #%d: %v, %v", b, did, err)
		}
		if n := len(f.model.Requests()); n != 2 {
			t.Errorf("%d model calls, want 2: none for #%d while on hold", n, b)
		}
		if got := f.task(b); got.LeaseOwner != "" || got.Iteration != 0 || got.Fence != 1 {
			t.Errorf("#%d: owner %q, iteration %d, fence %d; want given back untouched", b, got.LeaseOwner, got.Iteration, got.Fence)
		}
		f.check()
	})
}
