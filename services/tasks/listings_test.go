package tasks_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// listingStore is a store that counts the listings of task files asked
// of it.
type listingStore struct {
	domain.Store
	listed atomic.Int64
}

func (s *listingStore) TaskFiles(ctx context.Context, number int64) ([]domain.TaskFile, error) {
	s.listed.Add(1)
	return s.Store.TaskFiles(ctx, number)
}

// roomy gives a task room for many iterations that make no progress.
func roomy(in *domain.NewTask) { in.MaxIterations, in.MaxStaleIterations = 100, 100 }

// TestFileListingKeptBetweenIterations: a task's next iteration on the same
// replica sees its files as the last commit left them without listing
// them from the store again; once another replica has served the task,
// the listing is taken from the store, and the other replica's file is
// there.
func TestFileListingKeptBetweenIterations(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		shared := open(t)
		counted := &listingStore{Store: shared}
		a := newFixture(t, func(testing.TB) domain.Store { return counted })
		b := newFixture(t, func(testing.TB) domain.Store { return shared })
		n := a.create("Keep notes", roomy).Number
		iterate := func(f *fixture, owner, action, path, content string) domain.Step {
			t.Helper()
			params := map[string]string{"path": path}
			if content != "" {
				params["content"] = content
			}
			f.model.Decide(action, params, 0, "continue")
			if !f.step(owner) {
				t.Fatalf("%s served nothing", owner)
			}
			b.clk.Set(a.clk.Now())
			steps := f.steps(n)
			return steps[len(steps)-1]
		}
		want := func(step domain.Step, result string, listed int64) {
			t.Helper()
			if !step.Success || (result != "" && step.Result != result) {
				t.Errorf("step %d (%s): %+v; want a success with %q", step.Iteration, step.Action, step, result)
			}
			if got := counted.listed.Load(); got != listed {
				t.Errorf("after step %d, replica A listed the task's files %d times; want %d", step.Iteration, got, listed)
			}
		}
		want(iterate(a, "replica-a", "write_file", "notes/a.md", "one"), "", 1)
		want(iterate(a, "replica-a", "read_file", "notes/a.md", ""), "one", 1)
		want(iterate(a, "replica-a", "write_file", "notes/b.md", "two"), "", 1)
		want(iterate(a, "replica-a", "read_file", "notes/b.md", ""), "two", 1)
		// Replica B serves the task once: A's listing is no longer the
		// task's files.
		iterate(b, "replica-b", "write_file", "notes/c.md", "from B")
		want(iterate(a, "replica-a", "read_file", "notes/c.md", ""), "from B", 2)
		want(iterate(a, "replica-a", "read_file", "notes/b.md", ""), "two", 2)
		// A write that puts back what the store has changes nothing, and
		// the listing holds.
		want(iterate(a, "replica-a", "write_file", "notes/a.md", "one"), "", 2)
		want(iterate(a, "replica-a", "read_file", "notes/a.md", ""), "one", 2)
		a.check()
	})
}

// TestFileListingAfterAReleaseIsTakenAgain: a task given back untouched
// between two iterations (a shutdown, the model unreachable) moves its
// events on, and its next iteration lists its files from the store.
func TestFileListingAfterAReleaseIsTakenAgain(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		counted := &listingStore{Store: open(t)}
		f := newFixture(t, func(testing.TB) domain.Store { return counted })
		n := f.create("Keep notes", roomy).Number
		f.model.Decide("write_file", map[string]string{"path": "notes/a.md", "content": "one"}, 0, "continue")
		if !f.step("w") {
			t.Fatal("nothing served")
		}
		claimed, err := f.store.ClaimTask(f.ctx, domain.Claim{Owner: "other", Now: f.clk.Now(), Lease: lease})
		if err != nil || claimed.Number != n {
			t.Fatalf("claim = #%d, %v; want #%d", claimed.Number, err, n)
		}
		if _, err := f.store.UpdateTask(f.ctx, n, func(cur domain.Task) (domain.Mutation, error) {
			return domain.Released(cur, "other", claimed.Fence, f.clk.Now())
		}); err != nil {
			t.Fatal(err)
		}
		f.clk.Advance(time.Second)
		f.model.Decide("read_file", map[string]string{"path": "notes/a.md"}, 0, "continue")
		if !f.step("w") {
			t.Fatal("nothing served")
		}
		if got := counted.listed.Load(); got != 2 {
			t.Errorf("the task's files were listed %d times; want 2, the second after the release", got)
		}
		f.check()
	})
}
