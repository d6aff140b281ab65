package tasks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/adapters/demo"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/tasks"
)

var t0 = time.Date(2026, 5, 6, 7, 0, 0, 0, time.UTC)

const lease = time.Minute

type fixture struct {
	t     testing.TB
	ctx   context.Context
	clk   *clock.Fake
	store domain.Store
	rt    *plugin.Runtime
	model *testkit.ScriptedModel
	svc   *tasks.Service
}

func newFixture(t testing.TB, open teststore.Opener) *fixture {
	t.Helper()
	f := &fixture{t: t, ctx: context.Background(), clk: clock.NewFake(t0), store: open(t), model: testkit.NewScriptedModel()}
	f.rt = plugin.New(plugin.Options{Store: f.store, Clock: f.clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	err := f.rt.Register(
		&plugin.Plugin{Name: "model", Models: map[plugin.ModelType]plugin.Model{plugin.ModelText: f.model}},
		&plugin.Plugin{Name: "tools", Actions: actions.Tools(actions.ToolConfig{})},
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.rt.Start(f.ctx); err != nil {
		t.Fatal(err)
	}
	f.svc = tasks.New(tasks.Options{Runtime: f.rt, Lease: lease, Owner: "test"})
	return f
}

func (f *fixture) create(goal string, mod ...func(*domain.NewTask)) domain.Task {
	f.t.Helper()
	in := domain.NewTask{Goal: goal, RequestorID: "u1", Platform: "console", RoomID: "console", Actor: "u1"}
	for _, m := range mod {
		m(&in)
	}
	task, err := f.svc.Create(f.ctx, in)
	if err != nil {
		f.t.Fatal(err)
	}
	return task
}

// step serves one iteration as owner and moves the clock on a second, as
// a real iteration would take time.
func (f *fixture) step(owner string) bool {
	f.t.Helper()
	did, err := f.svc.Step(f.ctx, owner)
	if err != nil {
		f.t.Fatalf("step: %v", err)
	}
	f.clk.Advance(time.Second)
	return did
}

func (f *fixture) task(n int64) domain.Task {
	f.t.Helper()
	task, err := f.store.GetTask(f.ctx, n)
	if err != nil {
		f.t.Fatal(err)
	}
	return task
}

// file reads one of task n's files as the store has it.
func (f *fixture) file(n int64, path string) (string, error) {
	f.t.Helper()
	_, data, err := f.store.ReadTaskFile(f.ctx, n, path)
	return string(data), err
}

func (f *fixture) steps(n int64) []domain.Step {
	f.t.Helper()
	s, err := f.store.Steps(f.ctx, n)
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

// check runs taskloom check's verification on every task.
func (f *fixture) check() {
	f.t.Helper()
	all, err := f.store.ListTasks(f.ctx, domain.TaskFilter{})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, task := range all {
		evs, err := f.store.TaskEvents(f.ctx, task.Number, 0)
		if err != nil {
			f.t.Fatal(err)
		}
		if v := domain.Check(task, evs, len(f.steps(task.Number))); len(v) > 0 {
			f.t.Fatalf("check: %v", v)
		}
	}
}

// rising answers every iteration with a write_file of a new note (the
// same step twice would be no progress) and progress 2×iteration.
func rising(_ context.Context, req plugin.ModelRequest) (plugin.ModelResponse, error) {
	note := map[string]string{"path": fmt.Sprintf("notes/%d.md", req.Task.Iteration), "content": "step"}
	return plugin.ModelResponse{
		Text:  testkit.DecisionJSON("write_file", note, 2*req.Task.Iteration, "continue"),
		Usage: plugin.Usage{PromptTokens: 100, CompletionTokens: 10},
	}, nil
}

func TestFairQueue(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		f.model.Default(rising)
		for i := range 4 {
			f.create(fmt.Sprintf("task %d", i+1))
		}
		for i := range 24 {
			if i == 14 {
				n := f.create("a newcomer").Number
				f.step("test")
				if got := f.task(n).Iteration; got != 1 {
					t.Fatalf("the new task was not served next (iteration %d)", got)
				}
				continue
			}
			if !f.step("test") {
				t.Fatal("nothing to serve")
			}
			lo, hi := 1<<30, -1
			for n := int64(1); n <= 4; n++ {
				it := f.task(n).Iteration
				lo, hi = min(lo, it), max(hi, it)
			}
			if hi-lo > 1 {
				t.Fatalf("after %d iterations the counts differ by %d", i+1, hi-lo)
			}
		}
		f.check()
	})
}

func TestIterationOutcomes(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		tests := []struct {
			name     string
			maxIter  int
			script   func(m *testkit.ScriptedModel)
			steps    int
			status   domain.Status
			progress int
			errText  string
		}{
			{"stalemate after three flat values", 50, func(m *testkit.ScriptedModel) {
				for range 4 {
					m.Decide("list_files", nil, 20, "continue")
				}
			}, 4, domain.StatusStalemate, 20, "no progress in 3 iterations"},
			{"max iterations", 3, func(m *testkit.ScriptedModel) { m.Default(rising) }, 3, domain.StatusStalemate, 6, "reached the limit of 3 iterations"},
			{"done", 50, func(m *testkit.ScriptedModel) {
				m.Decide("write_file", map[string]string{"path": "out/result.txt", "content": "hello"}, 60, "done")
			}, 1, domain.StatusCompleted, 100, ""},
			{"stuck", 50, func(m *testkit.ScriptedModel) { m.Decide("none", nil, 10, "stuck") }, 1, domain.StatusFailed, 10, "scripted stuck"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				f := newFixture(t, open)
				tt.script(f.model)
				n := f.create("Build auth", func(in *domain.NewTask) { in.MaxIterations = tt.maxIter }).Number
				for range tt.steps {
					f.step("test")
				}
				if f.step("test") {
					t.Fatal("an ended task was served again")
				}
				got := f.task(n)
				if got.Status != tt.status || got.Progress != tt.progress || got.Error != tt.errText || got.Iteration != tt.steps {
					t.Fatalf("status=%s progress=%d error=%q iteration=%d", got.Status, got.Progress, got.Error, got.Iteration)
				}
				if got.PromptTokens == 0 {
					t.Fatal("token usage was not added to the task")
				}
				f.check()
			})
		}
		t.Run("done writes into the workspace", func(t *testing.T) {
			f := newFixture(t, open)
			f.model.Decide("write_file", map[string]string{"path": "out/result.txt", "content": "hello"}, 60, "done")
			n := f.create("x").Number
			f.step("test")
			data, err := f.file(n, "out/result.txt")
			if err != nil || data != "hello" {
				t.Fatalf("file = %q, %v", data, err)
			}
			if s := f.task(n).Summary; s != "scripted done" {
				t.Fatalf("summary = %q", s)
			}
		})
	})
}

func TestBadModelRepliesAreFailedSteps(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		tests := []struct {
			name  string
			reply func(ctx context.Context, req plugin.ModelRequest) (plugin.ModelResponse, error)
			want  string
		}{
			{"garbage", reply("I would like to write a file now."), "not a usable decision"},
			{"empty", reply(""), "the reply is empty"},
			{"unknown action", reply(testkit.DecisionJSON("rm_rf", nil, 50, "continue")), `"rm_rf" is not a tool`},
			{"tool error", reply(testkit.DecisionJSON("read_file", map[string]string{"path": "missing.txt"}, 50, "continue")), "Cannot read missing.txt"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				f := newFixture(t, open)
				f.model.Then(tt.reply)
				n := f.create("x").Number
				f.step("test")
				got := f.task(n)
				if got.Status != domain.StatusRunning || got.Iteration != 1 || got.StaleCounter != 1 || got.Progress != 0 {
					t.Fatalf("task = %+v", got)
				}
				s := f.steps(n)
				if len(s) != 1 || s[0].Success || !strings.Contains(s[0].Error, tt.want) {
					t.Fatalf("steps = %+v, want a failed step saying %q", s, tt.want)
				}
				f.check()
			})
		}
	})
}

func reply(text string) func(context.Context, plugin.ModelRequest) (plugin.ModelResponse, error) {
	return func(context.Context, plugin.ModelRequest) (plugin.ModelResponse, error) {
		return plugin.ModelResponse{Text: text}, nil
	}
}

// TestModelTimeoutReleasesTheTask: a model that does not answer within the
// iteration's budget is unavailable, not the task's failure (docs/tasks.md):
// no step, the task released with a next attempt time.
func TestModelTimeoutReleasesTheTask(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		called := make(chan struct{})
		f.model.Then(func(ctx context.Context, _ plugin.ModelRequest) (plugin.ModelResponse, error) {
			close(called)
			<-ctx.Done()
			return plugin.ModelResponse{}, ctx.Err()
		})
		n := f.create("x").Number
		done := make(chan error)
		go func() { _, err := f.svc.Step(f.ctx, "test"); done <- err }()
		<-called
		if err := f.clk.BlockUntil(f.ctx, 1); err != nil {
			t.Fatal(err)
		}
		f.clk.Advance(lease) // past the iteration's budget
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if s := f.steps(n); len(s) != 0 {
			t.Fatalf("steps = %+v, want none", s)
		}
		if got := f.task(n); got.LeaseOwner != "" || got.Status != domain.StatusRunning || got.Iteration != 0 || got.NextAttemptAt.IsZero() {
			t.Fatalf("task = %+v, want released unchanged with a next attempt time", got)
		}
		f.check()
	})
}

func TestLateResultAfterLeaseLossIsRejected(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		gate, called := make(chan struct{}), make(chan struct{})
		// Worker A's model call outlives the lease and ignores its
		// context, as a wedged process would.
		f.model.Then(func(context.Context, plugin.ModelRequest) (plugin.ModelResponse, error) {
			close(called)
			<-gate
			return plugin.ModelResponse{Text: testkit.DecisionJSON("post_message", map[string]string{"text": "from A"}, 90, "continue")}, nil
		})
		f.model.Decide("list_files", nil, 30, "continue") // worker B
		n := f.create("x").Number
		aDone := make(chan error)
		go func() { _, err := f.svc.Step(f.ctx, "A"); aDone <- err }()
		<-called
		f.clk.Advance(lease + time.Second)
		if !f.step("B") {
			t.Fatal("B could not claim the task after A's lease expired")
		}
		close(gate)
		if err := <-aDone; err != nil {
			t.Fatal(err)
		}
		got := f.task(n)
		if got.Iteration != 1 || got.Progress != 30 || got.Fence != 2 || len(f.steps(n)) != 1 {
			t.Fatalf("task = %+v, steps %d: the late result was applied", got, len(f.steps(n)))
		}
		evs, _ := f.store.TaskEvents(f.ctx, n, 0)
		last := evs[len(evs)-1]
		var p domain.EventPayload
		if err := json.Unmarshal(last.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if last.Type != domain.EventResultRejected || last.Actor != "A" || p.Detail["stale_fence"] != float64(1) || p.Detail["estimate"] != float64(90) || len(p.Changes) != 0 {
			t.Fatalf("last event = %s %s %s", last.Type, last.Actor, last.Payload)
		}
		// A's post belonged to the rejected result: it was not sent.
		if n, err := f.store.Pending(f.ctx); err != nil || n != 0 {
			t.Fatalf("%d notifications pending from a rejected result (%v)", n, err)
		}
		f.check()
	})
}

func TestTaskOfADeadReplicaIsTakenAfterItsLease(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		f.model.Default(rising)
		n := f.create("x").Number
		if _, err := f.store.ClaimTask(f.ctx, domain.Claim{Owner: "dead", Now: f.clk.Now(), Lease: lease}); err != nil {
			t.Fatal(err)
		}
		// The replica dies here, holding the lease.
		if f.step("B") {
			t.Fatal("a leased task was served before its lease expired")
		}
		f.clk.Advance(lease)
		if !f.step("B") {
			t.Fatal("the task was not served after the lease expired")
		}
		if got := f.task(n); got.Iteration != 1 || got.Fence != 2 {
			t.Fatalf("task = %+v", got)
		}
		f.check()
	})
}

func TestAskUserWaitsForTheAnswer(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		f.model.Decide("ask_user", map[string]string{"question": "JWT or sessions?"}, 10, "continue")
		n := f.create("Build auth").Number
		f.step("test")
		if got := f.task(n); got.Status != domain.StatusWaiting {
			t.Fatalf("status = %s", got.Status)
		}
		room, rows, err := f.store.ClaimRoom(f.ctx, domain.RoomClaim{Owner: "n", Now: f.clk.Now(), Lease: time.Minute})
		if err != nil || room != "console" || len(rows) != 1 || !strings.Contains(string(rows[0].Payload), "JWT or sessions?") {
			t.Fatalf("question not in the outbox: %q %+v %v", room, rows, err)
		}
		if f.step("test") {
			t.Fatal("a waiting task was served")
		}
		if _, err := f.svc.Answer(f.ctx, n, "u2", "use JWT"); err != nil {
			t.Fatal(err)
		}
		f.model.Decide("none", nil, 100, "done")
		f.step("test")
		reqs := f.model.Requests()
		if last := reqs[len(reqs)-1].Messages[1].Content; !strings.Contains(last, "use JWT") {
			t.Fatalf("the answer is not in the next prompt:\n%s", last)
		}
		if got := f.task(n); got.Status != domain.StatusCompleted {
			t.Fatalf("status = %s", got.Status)
		}
		f.check()
	})
}

func TestSubtaskParentWaitsForChildren(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		f.model.Decide("create_subtask", map[string]string{"goal": "Write the login tests"}, 10, "continue")
		parent := f.create("Build auth").Number
		f.step("test")
		if got := f.task(parent); got.Status != domain.StatusWaiting {
			t.Fatalf("parent status = %s", got.Status)
		}
		child := f.task(2)
		if child.ParentNumber != parent || child.RoomID != "console" || child.Name != "Write the login tests" {
			t.Fatalf("child = %+v", child)
		}
		f.model.Decide("none", nil, 100, "done") // the child
		f.step("test")
		if got := f.task(parent); got.Status != domain.StatusQueued {
			t.Fatalf("parent not resumed after its child ended: %s", got.Status)
		}
		f.model.Decide("none", nil, 100, "done") // the parent
		f.step("test")
		reqs := f.model.Requests()
		if last := reqs[len(reqs)-1].Messages[1].Content; !strings.Contains(last, `subtask #2 "Write the login tests" completed`) {
			t.Fatalf("the subtask outcome is not in the parent's prompt:\n%s", last)
		}
		f.check()
	})
}

func TestLifecycleRefusals(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		n := f.create("x").Number
		if _, err := f.svc.Resume(f.ctx, n, "u1"); err == nil || err.Error() != "resume task #1: transition not allowed in this state (queued)" {
			t.Fatalf("resume of a queued task: %v", err)
		}
		if _, err := f.svc.Pause(f.ctx, 99, "u1"); err == nil {
			t.Fatal("pausing an unknown task succeeded")
		}
		if _, err := f.svc.Cancel(f.ctx, n, "u1"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.Pause(f.ctx, n, "u1"); err == nil || !strings.Contains(err.Error(), "task has ended (canceled)") {
			t.Fatalf("pause of a canceled task: %v", err)
		}
		f.check()
	})
}

func TestActiveTaskLimitPerRequestor(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		f.svc = tasks.New(tasks.Options{Runtime: f.rt, Lease: lease, MaxActivePerUser: 2})
		f.create("a")
		f.create("b")
		if _, err := f.svc.Create(f.ctx, domain.NewTask{Goal: "c", RequestorID: "u1"}); err == nil || !strings.Contains(err.Error(), "you already have 2 tasks") {
			t.Fatalf("err = %v", err)
		}
		if _, err := f.svc.Create(f.ctx, domain.NewTask{Goal: "c", RequestorID: "u2"}); err != nil {
			t.Fatalf("another requestor was refused: %v", err)
		}
	})
}

func TestWorkersDrainOnStop(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		f.model.Default(func(_ context.Context, req plugin.ModelRequest) (plugin.ModelResponse, error) {
			return plugin.ModelResponse{Text: testkit.DecisionJSON("list_files", nil, 100, "done")}, nil
		})
		f.svc = tasks.New(tasks.Options{Runtime: f.rt, Lease: lease, Workers: 3})
		for i := range 6 {
			f.create(fmt.Sprintf("t%d", i))
		}
		if err := f.svc.Start(f.ctx); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			n, err := f.store.CountTasks(f.ctx, domain.TaskFilter{Statuses: []domain.Status{domain.StatusCompleted}})
			if err != nil {
				t.Fatal(err)
			}
			if n == 6 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("only %d of 6 tasks completed", n)
			}
			f.svc.Wake()
			time.Sleep(5 * time.Millisecond) // polling real progress of real goroutines, not timing them
		}
		if err := f.svc.Stop(f.ctx); err != nil {
			t.Fatal(err)
		}
		f.check()
	})
}

func TestDemoModelRunsATaskToCompletion(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		f.rt.AddModel(plugin.ModelText, demo.New(demo.Options{Think: -1, Clock: f.clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
		n := f.create("Write a haiku about autumn").Number
		steps := 0
		for f.step("test") {
			steps++
			if steps > 10 {
				t.Fatal("the demo model did not finish in 10 iterations")
			}
		}
		got := f.task(n)
		if got.Status != domain.StatusCompleted || steps < 5 || steps > 8 || !strings.Contains(got.Summary, "demo model") {
			t.Fatalf("after %d iterations: %+v", steps, got)
		}
		for _, s := range f.steps(n) {
			if !s.Success {
				t.Fatalf("a demo step failed: %+v", s)
			}
		}
		plan, err := f.file(n, "notes/plan.md")
		if err != nil || !strings.Contains(plan, "demo model") || !strings.Contains(plan, "haiku") {
			t.Fatalf("plan.md = %q, %v", plan, err)
		}
		f.check()
	})
}
