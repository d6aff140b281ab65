package tasks_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
)

// TestSubtaskOfARerunIterationIsCreatedOnce: the worker running the
// parent's iteration outlives its lease; another worker claims the parent
// and runs the iteration again, asking for the same subtask. The first
// worker's create_subtask ran, but its commit is refused as stale, and
// with it the child: the parent has one child, not two.
func TestSubtaskOfARerunIterationIsCreatedOnce(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		ask := testkit.DecisionJSON("create_subtask", map[string]string{"goal": "Write the login tests"}, 10, "continue")
		f.model.Then(func(context.Context, plugin.ModelRequest) (plugin.ModelResponse, error) {
			// The first worker stalls past its lease; another runs the
			// iteration meanwhile.
			f.clk.Advance(lease + time.Second)
			if did, err := f.svc.Step(f.ctx, "other"); !did || err != nil {
				t.Errorf("the other worker's step: %v, %v", did, err)
			}
			return plugin.ModelResponse{Text: ask}, nil
		})
		f.model.Reply(ask) // the other worker's
		parent := f.create("Build auth").Number
		if did := f.step("test"); !did {
			t.Fatal("nothing served")
		}
		kids, err := f.store.ListTasks(f.ctx, domain.TaskFilter{ParentNumber: parent})
		if err != nil {
			t.Fatal(err)
		}
		if len(kids) != 1 {
			t.Fatalf("the parent has %d children; want 1", len(kids))
		}
		if n := f.rejected(parent); n != 1 {
			t.Fatalf("%d results rejected; want the first worker's", n)
		}
		steps := f.steps(parent)
		if len(steps) != 1 || !strings.Contains(steps[0].Result, `created subtask #2 "Write the login tests"`) {
			t.Fatalf("the parent's steps: %+v; want one, naming its child", steps)
		}
		if got := f.task(parent); got.Status != domain.StatusWaiting || got.WaitingOn != domain.WaitSubtasks {
			t.Fatalf("parent = %s on %q; want waiting on its subtask", got.Status, got.WaitingOn)
		}
		f.check()
	})
}
