package tasks_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/tasks"
)

// boundedReads is a store that counts, while armed, the reads of a whole
// task's steps or events, and records the widest bounded read.
type boundedReads struct {
	domain.Store
	armed      atomic.Bool
	full       atomic.Int64
	widest     atomic.Int64 // the most steps RecentSteps was asked for
	mostEvents atomic.Int64 // the most events EventsAt was asked for
}

func (s *boundedReads) Steps(ctx context.Context, n int64) ([]domain.Step, error) {
	if s.armed.Load() {
		s.full.Add(1)
	}
	return s.Store.Steps(ctx, n)
}

func (s *boundedReads) TaskEvents(ctx context.Context, n, after int64) ([]domain.TaskEvent, error) {
	if s.armed.Load() {
		s.full.Add(1)
	}
	return s.Store.TaskEvents(ctx, n, after)
}

func (s *boundedReads) RecentSteps(ctx context.Context, n int64, k int) ([]domain.Step, error) {
	if int64(k) > s.widest.Load() {
		s.widest.Store(int64(k))
	}
	return s.Store.RecentSteps(ctx, n, k)
}

func (s *boundedReads) EventsAt(ctx context.Context, n int64, seqs []int64) ([]domain.TaskEvent, error) {
	if int64(len(seqs)) > s.mostEvents.Load() {
		s.mostEvents.Store(int64(len(seqs)))
	}
	return s.Store.EventsAt(ctx, n, seqs)
}

// TestIterationReadsABoundedHistory: no iteration reads all of a task's
// steps or events (docs/PERFORMANCE.md), yet its prompt still counts every
// earlier step, shows the answer it was given, reads back the result of
// its first step with read_result, and a retry's first prompt recalls the
// last ten steps of the task it continues and what the person added.
func TestIterationReadsABoundedHistory(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		var st *boundedReads
		f := newFixture(t, func(t testing.TB) domain.Store {
			st = &boundedReads{Store: open(t)}
			return st
		})
		f.model.Default(func(_ context.Context, req plugin.ModelRequest) (plugin.ModelResponse, error) {
			it := req.Task.Iteration
			decide := func(action string, params any, status string) (plugin.ModelResponse, error) {
				return plugin.ModelResponse{Text: testkit.DecisionJSON(action, params, min(2*it, 99), status)}, nil
			}
			switch it {
			case 2:
				return decide("ask_user", map[string]string{"question": "Which license?"}, "continue")
			case 38:
				return decide("read_result", map[string]int{"step": 1}, "continue")
			case 40:
				return decide("none", nil, "done")
			}
			return decide("write_file", map[string]string{"path": fmt.Sprintf("notes/%d.md", it), "content": fmt.Sprintf("note %d", it)}, "continue")
		})
		n := f.create("Write forty notes").Number
		st.armed.Store(true)
		for i := 0; i < 50; i++ {
			if !f.step("test") {
				if f.task(n).Status != domain.StatusWaiting {
					break
				}
				if _, err := f.svc.Answer(f.ctx, n, "u1", "MIT"); err != nil {
					t.Fatal(err)
				}
			}
		}
		if got := f.task(n); got.Status != domain.StatusCompleted || got.Iteration != 40 {
			t.Fatalf("task = %s at iteration %d: %s", got.Status, got.Iteration, got.Error)
		}
		reqs := f.model.Requests()
		user := reqs[38].Messages[1].Content // iteration 39
		for _, want := range []string{
			"The first 15 steps (15 succeeded): ask_user ×1, write_file ×14.",
			"- MIT",
			"Step 38: read_result",
			"Result: wrote notes/1.md (6 bytes)",
		} {
			if !strings.Contains(user, want) {
				t.Errorf("the prompt of iteration 39 lacks %q:\n%s", want, user)
			}
		}

		retried, err := f.svc.Retry(f.ctx, n, domain.NewTask{RequestorID: "u1", Platform: "console", RoomID: "console", Actor: "u1", Context: "now in French"})
		if err != nil {
			t.Fatal(err)
		}
		f.step("test")
		first := f.model.Requests()[40]
		if first.Task.Number != retried.Number {
			t.Fatalf("request 41 is for task #%d, not the retry #%d", first.Task.Number, retried.Number)
		}
		system := first.Messages[0].Content
		for _, want := range []string{"continues task #1", "- step 31: write_file", "- step 40: (no action)", "adds: now in French"} {
			if !strings.Contains(system, want) {
				t.Errorf("the retry's first prompt lacks %q:\n%s", want, system)
			}
		}
		if strings.Contains(system, "- step 30:") {
			t.Errorf("the retry's first prompt recalls more than the last 10 steps:\n%s", system)
		}

		st.armed.Store(false)
		if got := st.full.Load(); got != 0 {
			t.Errorf("the iterations read all of a task's steps or events %d times", got)
		}
		if w, most := st.widest.Load(), st.mostEvents.Load(); w > int64(tasks.DefaultHistory.Window()) || most > int64(tasks.DefaultHistory.Answers) {
			t.Errorf("the widest reads were %d steps and %d events", w, most)
		}
		f.check()
	})
}
