package tasks_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/postgres"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/tasks"
)

// A claim whose COMMIT's answer is lost (the connection breaks between
// the server's commit and its reply, as in a PostgreSQL restart) has
// taken a task the worker does not know it holds. These tests lose that
// answer on purpose, through testkit.PostgresProxy, and check that the
// worker runs that task next rather than leave it leased until the lease
// ends (a minute here, TASKLOOM_LEASE's 2m by default).

// unheardFixture is a fixture whose PostgreSQL store talks through a proxy
// that can lose COMMIT answers.
func unheardFixture(t *testing.T) (*fixture, *testkit.PostgresProxy) {
	var proxy *testkit.PostgresProxy
	f := newFixture(t, func(t testing.TB) domain.Store {
		var url string
		proxy, url = testkit.ProxyPostgres(t, testkit.PostgresURL(t))
		st, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		if err := st.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		return st
	})
	return f, proxy
}

// stepResult is what a step returned.
type stepResult struct {
	did bool
	err error
}

// stepAsync starts one step of w.
func (f *fixture) stepAsync(w *tasks.Worker) <-chan stepResult {
	done := make(chan stepResult, 1)
	go func() {
		did, err := w.Step(f.ctx)
		done <- stepResult{did, err}
	}()
	return done
}

// driven waits for what done delivers while moving the fake clock on, so
// that the waits between the store's tries pass.
func driven[T any](f *fixture, done <-chan T) T {
	for {
		select {
		case r := <-done:
			return r
		case <-time.After(time.Millisecond):
			if f.clk.Waiters() > 0 {
				f.clk.Advance(100 * time.Millisecond)
			}
		}
	}
}

// finish waits for a step started with stepAsync (driven).
func (f *fixture) finish(done <-chan stepResult) (bool, error) {
	r := driven(f, done)
	return r.did, r.err
}

// drivenChange runs change (a Create, a Pause…), moving the fake clock
// on meanwhile.
func (f *fixture) drivenChange(change func() (domain.Task, error)) (domain.Task, error) {
	type result struct {
		task domain.Task
		err  error
	}
	done := make(chan result, 1)
	go func() {
		task, err := change()
		done <- result{task, err}
	}()
	r := driven(f, done)
	return r.task, r.err
}

// drivenStep runs one step of w, moving the fake clock on meanwhile.
func (f *fixture) drivenStep(w *tasks.Worker) (bool, error) { return f.finish(f.stepAsync(w)) }

// listing answers every iteration with a step that writes no file (a
// commit with files claims the next task after it, on its own), its
// progress rising.
func listing(_ context.Context, req plugin.ModelRequest) (plugin.ModelResponse, error) {
	return plugin.ModelResponse{Text: testkit.DecisionJSON("list_files", nil, 10*req.Task.Iteration, "continue")}, nil
}

// unansweredClaim makes task A and a worker whose first claim, of A,
// commits without its answer reaching the worker.
func unansweredClaim(t *testing.T) (f *fixture, w *tasks.Worker, a int64) {
	t.Helper()
	f, proxy := unheardFixture(t)
	f.model.Default(rising)
	a = f.create("A").Number
	w = f.svc.Worker("w")
	proxy.LoseAnswers(1, "INSERT INTO task_events") // the claim and its event
	if _, err := f.drivenStep(w); err == nil {
		t.Fatal("the step whose claim went unanswered succeeded")
	}
	if got := f.task(a); got.LeaseOwner != "w" || got.Iteration != 0 {
		t.Fatalf("A: owner %q, iteration %d; want claimed by w, not run", got.LeaseOwner, got.Iteration)
	}
	return f, w, a
}

// rejected counts task n's result_rejected events.
func (f *fixture) rejected(n int64) int {
	f.t.Helper()
	evs, err := f.store.TaskEvents(f.ctx, n, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	c := 0
	for _, e := range evs {
		if e.Type == domain.EventResultRejected {
			c++
		}
	}
	return c
}

// iteratedFence is the fence of task n's first iteration.
func (f *fixture) iteratedFence(n int64) int64 {
	f.t.Helper()
	evs, err := f.store.TaskEvents(f.ctx, n, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, e := range evs {
		if e.Type == domain.EventIterated {
			return e.Fence
		}
	}
	f.t.Fatalf("task #%d has no iteration", n)
	return 0
}

// firstCommitFailing makes tasks A and B and a worker w, and runs w's
// first step, on A, whose commit claims B: arm sets the proxy to fail that
// commit once (the model's answer arms it, so nothing before fails). The
// step must succeed, its commit made or found made on a later try.
func firstCommitFailing(t *testing.T, arm func(*testkit.PostgresProxy)) (f *fixture, proxy *testkit.PostgresProxy, w *tasks.Worker, a, b int64) {
	t.Helper()
	f, proxy = unheardFixture(t)
	f.model.Then(func(ctx context.Context, req plugin.ModelRequest) (plugin.ModelResponse, error) {
		arm(proxy)
		return listing(ctx, req)
	})
	f.model.Default(listing)
	a, b = f.create("A").Number, f.create("B").Number
	w = f.svc.Worker("w")
	if did, err := f.drivenStep(w); !did || err != nil {
		t.Fatalf("step on A: %v, %v; want its commit made, or found made, on a later try", did, err)
	}
	return f, proxy, w, a, b
}

// TestCommitWithoutAnswerKeepsItsClaim: the commit of A's iteration,
// which claims B with it, commits but its answer is lost. The worker
// tries again, finds its result in (not late), and runs B next: B is not
// left leased to it until the lease ends, nor claimed twice.
func TestCommitWithoutAnswerKeepsItsClaim(t *testing.T) {
	f, proxy, w, a, b := firstCommitFailing(t, func(p *testkit.PostgresProxy) { p.LoseAnswers(1, "INSERT INTO task_events") })
	if proxy.Lost() != 1 {
		t.Fatalf("%d COMMIT answers lost, want 1", proxy.Lost())
	}
	if got := f.task(a); got.Iteration != 1 || got.LeaseOwner != "" {
		t.Fatalf("A: iteration %d, owner %q; want its one iteration committed once", got.Iteration, got.LeaseOwner)
	}
	if got := f.task(b); got.LeaseOwner != "w" || got.Iteration != 0 {
		t.Fatalf("B: owner %q, iteration %d; want claimed by w with A's commit", got.LeaseOwner, got.Iteration)
	}

	if did, err := f.drivenStep(w); !did || err != nil {
		t.Fatalf("second step: %v, %v", did, err)
	}
	if got := f.task(b); got.Iteration != 1 {
		t.Fatalf("B at iteration %d after the second step, want 1: the worker did not run the task its lost commit claimed", got.Iteration)
	}
	if got := f.task(a); got.Iteration != 1 {
		t.Fatalf("A at iteration %d, want 1: the worker served A again while B waited", got.Iteration)
	}
	if fence := f.iteratedFence(b); fence != 1 {
		t.Fatalf("B was run under fence %d, want 1: the claim A's commit made", fence)
	}
	if n := f.rejected(a); n != 0 {
		t.Fatalf("A has %d result_rejected events: its result, in, was taken for a late one", n)
	}
	f.check()
}

// TestCommitLostOnItsWayIsMadeOnce: the commit of A's iteration never
// reaches the server (the connection breaks on its way: nothing of it
// commits). The worker writes the same step again, without asking the
// model again, and claims B with it: one model call, one step, one
// iteration event for A, and B claimed once.
func TestCommitLostOnItsWayIsMadeOnce(t *testing.T) {
	f, proxy, _, a, b := firstCommitFailing(t, func(p *testkit.PostgresProxy) { p.LoseRequests(1, "INSERT INTO task_steps") })
	if proxy.Dropped() != 1 {
		t.Fatalf("%d commits lost on their way, want 1", proxy.Dropped())
	}
	if calls := len(f.model.Requests()); calls != 1 {
		t.Fatalf("%d model calls, want 1: the step was asked for again", calls)
	}
	if got := f.task(a); got.Iteration != 1 || got.LeaseOwner != "" {
		t.Fatalf("A: iteration %d, owner %q; want its one iteration committed", got.Iteration, got.LeaseOwner)
	}
	if steps := f.steps(a); len(steps) != 1 || steps[0].Action != "list_files" {
		t.Fatalf("A has %d steps, want its one list_files", len(steps))
	}
	if got := f.task(b); got.LeaseOwner != "w" || got.Fence != 1 {
		t.Fatalf("B: owner %q, fence %d; want claimed once, by w, with A's commit", got.LeaseOwner, got.Fence)
	}
	f.check()
}

// TestClaimWithoutAnswerIsAdopted: a claim on its own commits but its
// answer is lost; the step fails, and the worker's next step runs the
// task that claim took.
func TestClaimWithoutAnswerIsAdopted(t *testing.T) {
	f, w, a := unansweredClaim(t)
	if did, err := f.drivenStep(w); !did || err != nil {
		t.Fatalf("next step: %v, %v; want A run", did, err)
	}
	if got := f.task(a); got.Iteration != 1 {
		t.Fatalf("A: iteration %d; want run once", got.Iteration)
	}
	if fence := f.iteratedFence(a); fence != 1 {
		t.Fatalf("A was run under fence %d, want 1: the claim that went unanswered", fence)
	}
	f.check()
}

// TestClaimWithoutAnswerWhoseLeaseEndedIsNotAdopted: the worker whose
// claim of A went unanswered does not step again until A's lease has
// ended and another replica has claimed A and run it. The worker must not
// run A under its old claim (two iterations of A at once, one recorded
// as late): it finds A is no longer its own and claims afresh.
func TestClaimWithoutAnswerWhoseLeaseEndedIsNotAdopted(t *testing.T) {
	f, w, a := unansweredClaim(t)
	f.clk.Advance(lease + time.Second)
	if did := f.step("other"); !did {
		t.Fatal("the other replica found nothing to claim after A's lease ended")
	}
	if got := f.task(a); got.Iteration != 1 || got.LeaseOwner != "" {
		t.Fatalf("A after the other replica's step: iteration %d, owner %q; want run once and given back", got.Iteration, got.LeaseOwner)
	}
	if did, err := f.drivenStep(w); !did || err != nil {
		t.Fatalf("the worker's next step: %v, %v; want A claimed afresh and run", did, err)
	}
	if n := f.rejected(a); n != 0 {
		t.Fatalf("A has %d result_rejected events: the worker ran it under the claim it had lost", n)
	}
	evs, err := f.store.TaskEvents(f.ctx, a, 0)
	if err != nil {
		t.Fatal(err)
	}
	var fences []int64
	for _, e := range evs {
		if e.Type == domain.EventIterated {
			fences = append(fences, e.Fence)
		}
	}
	if len(fences) != 2 || fences[0] != 2 || fences[1] != 3 {
		t.Fatalf("A's iterations ran under fences %v; want [2 3]: the other replica's claim, then the worker's new one", fences)
	}
	f.check()
}

// TestReleaseGivesBackATaskClaimedWithoutAnswer: a worker that stops after
// a claim went unanswered gives its task back, so another replica takes
// it at once.
func TestReleaseGivesBackATaskClaimedWithoutAnswer(t *testing.T) {
	f, w, a := unansweredClaim(t)
	if err := w.Release(f.ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.task(a); got.LeaseOwner != "" || got.Iteration != 0 || got.Status != domain.StatusRunning {
		t.Fatalf("A after Release: owner %q, iteration %d, %s; want given back untouched", got.LeaseOwner, got.Iteration, got.Status)
	}
	if did := f.step("other"); !did {
		t.Fatal("another worker found nothing to claim")
	}
	f.check()
}

// TestCommitWithoutAnswerClaimedAgainIsNotLate: while the worker waits to
// try again a commit whose answer was lost, another worker claims the
// task (the commit gave it back). The try finds a stale fence, and the
// event log — not the row, which is the other worker's now — says the
// result is in: nothing is recorded as a late result.
func TestCommitWithoutAnswerClaimedAgainIsNotLate(t *testing.T) {
	f, proxy := unheardFixture(t)
	f.model.Then(func(ctx context.Context, req plugin.ModelRequest) (plugin.ModelResponse, error) {
		proxy.LoseAnswers(1, "INSERT INTO task_events")
		return listing(ctx, req)
	})
	f.model.Default(listing)
	a := f.create("A").Number
	w := f.svc.Worker("w")

	done := f.stepAsync(w)
	// The answer is lost; the worker waits on the clock to try again.
	deadline := time.Now().Add(10 * time.Second)
	for proxy.Lost() == 0 || f.clk.Waiters() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the commit's answer was not lost, or the worker did not wait to try again")
		}
		time.Sleep(time.Millisecond)
	}
	other, err := f.store.ClaimTask(f.ctx, domain.Claim{Owner: "other", Now: f.clk.Now(), Lease: lease})
	if err != nil || other.Number != a {
		t.Fatalf("another worker's claim: #%d, %v; want A, given back by the commit that went unanswered", other.Number, err)
	}
	if did, err := f.finish(done); !did || err != nil {
		t.Fatalf("step: %v, %v", did, err)
	}
	if n := f.rejected(a); n != 0 {
		t.Fatalf("A has %d result_rejected events: its result, in, was taken for a late one", n)
	}
	if got := f.task(a); got.Iteration != 1 || got.LeaseOwner != "other" {
		t.Fatalf("A: iteration %d, owner %q; want one iteration, then claimed by the other worker", got.Iteration, got.LeaseOwner)
	}
	f.check()
}

// TestCreateWithoutAnswerIsNotMadeTwice: the insert of a new task commits
// but its answer is lost; Create tries again, finds the task it made
// (same requestor, goal, room and creation time) and returns it: one
// task, and no error for the person who asked.
func TestCreateWithoutAnswerIsNotMadeTwice(t *testing.T) {
	f, proxy := unheardFixture(t)
	proxy.LoseAnswers(1, "INSERT INTO tasks")
	task, err := f.drivenChange(func() (domain.Task, error) {
		return f.svc.Create(f.ctx, domain.NewTask{Goal: "Build auth", RequestorID: "u1", Platform: "console", RoomID: "console"})
	})
	if proxy.Lost() != 1 {
		t.Fatalf("%d answers lost, want 1", proxy.Lost())
	}
	if err != nil || task.Number != 1 || task.Goal != "Build auth" {
		t.Fatalf("Create = #%d %q, %v; want task #1, made once", task.Number, task.Goal, err)
	}
	all, err := f.store.ListTasks(f.ctx, domain.TaskFilter{})
	if err != nil || len(all) != 1 {
		t.Fatalf("%d tasks, %v; want the one task", len(all), err)
	}
	f.check()
}

// TestPauseWithoutAnswerIsReportedDone: a person's pause commits, but
// its answer is lost. Pause tries again, finds its event in the task's
// log, and reports the task paused — not the error a second pause gets
// ("already paused") nor the broken connection's — and pauses it once.
func TestPauseWithoutAnswerIsReportedDone(t *testing.T) {
	f, proxy := unheardFixture(t)
	n := f.create("Build auth").Number
	proxy.LoseAnswers(1, "UPDATE tasks SET")
	task, err := f.drivenChange(func() (domain.Task, error) { return f.svc.Pause(f.ctx, n, "u1") })
	if proxy.Lost() != 1 {
		t.Fatalf("%d answers lost, want 1", proxy.Lost())
	}
	if err != nil || task.Number != n || task.Status != domain.StatusPaused {
		t.Fatalf("Pause = #%d %s, %v; want #%d paused, no error", task.Number, task.Status, err, n)
	}
	evs, err := f.store.TaskEvents(f.ctx, n, 0)
	if err != nil {
		t.Fatal(err)
	}
	pauses := 0
	for _, e := range evs {
		if e.Type == domain.EventPaused {
			pauses++
		}
	}
	if pauses != 1 {
		t.Fatalf("%d paused events, want 1", pauses)
	}
	f.check()
}

// TestPauseWithoutAnswerThenCanceledIsReportedDone: u1's pause commits
// but its answer is lost, and before Pause tries again u2 cancels the
// task. The retry finds the pause among the events after it — not only
// the latest, which is u2's — and reports it done, with the task as it
// is now: one paused event, then one canceled event, and no second
// pause tried on a canceled task ("not allowed").
func TestPauseWithoutAnswerThenCanceledIsReportedDone(t *testing.T) {
	f, proxy := unheardFixture(t)
	n := f.create("Build auth").Number
	proxy.LoseAnswers(1, "UPDATE tasks SET")
	task, err := f.pauseThenCancel(t, n, func() bool { return proxy.Lost() > 0 })
	if err != nil || task.Number != n || task.Status != domain.StatusCanceled {
		t.Fatalf("Pause = #%d %s, %v; want #%d as u2 left it (canceled), no error", task.Number, task.Status, err, n)
	}
	if got, want := f.changes(n), []string{"paused by u1", "canceled by u2"}; !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	f.check()
}

// TestPauseLostOnItsWayIsTriedOnTheTaskAsItIsNow: u1's pause never
// reaches the server (the connection breaks on its way: nothing
// commits), and before Pause tries again u2 cancels the task, whose
// event takes the sequence the pause would have had. The retry does not
// take u2's event for its own: it tries the pause on the canceled task,
// which refuses it. One canceled event, no pause.
func TestPauseLostOnItsWayIsTriedOnTheTaskAsItIsNow(t *testing.T) {
	f, proxy := unheardFixture(t)
	n := f.create("Build auth").Number
	proxy.LoseRequests(1, "UPDATE tasks SET")
	task, err := f.pauseThenCancel(t, n, func() bool { return proxy.Dropped() > 0 })
	if err == nil || !strings.Contains(err.Error(), "ended") {
		t.Fatalf("Pause = #%d %s, %v; want the refusal of a pause on an ended task", task.Number, task.Status, err)
	}
	if got, want := f.changes(n), []string{"canceled by u2"}; !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	if got := f.task(n); got.Status != domain.StatusCanceled {
		t.Fatalf("task #%d is %s, want canceled", n, got.Status)
	}
	f.check()
}

// pauseThenCancel has u1 pause task n, whose first write is to fail
// (failed reports that it did), and u2 cancel n while Pause waits to try
// again; then it moves the fake clock on until Pause returns, and returns
// what it did.
func (f *fixture) pauseThenCancel(t *testing.T, n int64, failed func() bool) (domain.Task, error) {
	t.Helper()
	type result struct {
		task domain.Task
		err  error
	}
	done := make(chan result, 1)
	go func() {
		task, err := f.svc.Pause(f.ctx, n, "u1")
		done <- result{task, err}
	}()
	for !failed() || f.clk.Waiters() == 0 {
		select {
		case r := <-done:
			t.Fatalf("Pause returned #%d %s, %v before its write failed", r.task.Number, r.task.Status, r.err)
		case <-time.After(time.Millisecond):
		}
	}
	if _, err := f.svc.Cancel(f.ctx, n, "u2"); err != nil {
		t.Fatalf("u2's cancel: %v", err)
	}
	r := driven(f, done)
	return r.task, r.err
}

// changes lists task n's pause, resume and cancel events as "paused by
// u1".
func (f *fixture) changes(n int64) []string {
	f.t.Helper()
	evs, err := f.store.TaskEvents(f.ctx, n, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		switch e.Type {
		case domain.EventPaused, domain.EventResumed, domain.EventCanceled:
			out = append(out, string(e.Type)+" by "+e.Actor)
		}
	}
	return out
}
