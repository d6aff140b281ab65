package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/adapters/openai"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/tasks"
)

// newWireFixture is a fixture whose model is the real OpenAI-compatible
// adapter talking to the fake server over HTTP, through client. The
// adapter makes no retries of its own: each Step is one call.
func newWireFixture(t *testing.T, open teststore.Opener, fake *testkit.OpenAI, client *http.Client) *fixture {
	t.Helper()
	return newBudgetFixture(t, open, fake, client, 0)
}

// newBudgetFixture is newWireFixture whose tasks and subtasks get budget
// tokens when they name none (TASKLOOM_MAX_TOKENS; 0 is no budget), as
// the service and create_subtask do in the binary.
func newBudgetFixture(t *testing.T, open teststore.Opener, fake *testkit.OpenAI, client *http.Client, budget int64) *fixture {
	t.Helper()
	f := &fixture{t: t, ctx: context.Background(), clk: clock.NewFake(t0), store: open(t)}
	if client == nil {
		client = fake.Client()
	}
	m, err := openai.New(openai.Config{BaseURL: fake.URL(), APIKey: "k", HTTPClient: client, MaxRetries: -1, Clock: f.clk,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	f.rt = plugin.New(plugin.Options{Store: f.store, Clock: f.clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := f.rt.Register(
		&plugin.Plugin{Name: "model", Models: map[plugin.ModelType]plugin.Model{plugin.ModelText: m}},
		&plugin.Plugin{Name: "tools", Actions: actions.Tools(actions.ToolConfig{MaxTokens: budget})},
	); err != nil {
		t.Fatal(err)
	}
	if err := f.rt.Start(f.ctx); err != nil {
		t.Fatal(err)
	}
	f.svc = tasks.New(tasks.Options{Runtime: f.rt, Lease: lease, Owner: "test", MaxTokens: budget})
	return f
}

// note is a decision that writes notes/<name>.md: distinct steps, so the
// stall guard leaves them alone.
func note(name string, progress int, status string) string {
	return testkit.DecisionJSON("write_file", map[string]string{"path": "notes/" + name + ".md", "content": name}, progress, status)
}

// runFor serves iterations, moving the clock on by tick after each
// attempt, for at most d of fake time; it returns how many Steps served a
// task.
func (f *fixture) runFor(d, tick time.Duration) int {
	f.t.Helper()
	served := 0
	for end := f.clk.Now().Add(d); f.clk.Now().Before(end); {
		did, err := f.svc.Step(f.ctx, "test")
		if err != nil {
			f.t.Fatalf("step: %v", err)
		}
		if did {
			served++
		}
		f.clk.Advance(tick)
	}
	return served
}

// assertUntouched fails unless task n has no step, no iteration, no
// progress and no stale count: the outage cost it nothing.
func (f *fixture) assertUntouched(n int64) {
	f.t.Helper()
	got := f.task(n)
	if got.Iteration != 0 || got.StaleCounter != 0 || got.Progress != 0 || len(f.steps(n)) != 0 || got.Status.Terminal() {
		f.t.Fatalf("task #%d after the outage = %s iteration %d stale %d progress %d steps %d; want untouched",
			n, got.Status, got.Iteration, got.StaleCounter, got.Progress, len(f.steps(n)))
	}
}

// TestModelOutage: a stretch of 503s, or of refused connections, changes
// no task; the breaker keeps the replica to a handful of calls; once the
// model is back every task completes with exactly its script's
// iterations (here one).
func TestModelOutage(t *testing.T) {
	for _, kind := range []string{"503", "connection refused"} {
		t.Run(kind, func(t *testing.T) {
			teststore.Each(t, func(t *testing.T, open teststore.Opener) {
				fake := testkit.NewOpenAI(t)
				var down atomic.Bool
				var client *http.Client
				if kind == "503" {
					fake.StartOutage(http.StatusServiceUnavailable)
				} else {
					down.Store(true)
					client = refusingClient(t, fake, &down)
				}
				f := newWireFixture(t, open, fake, client)
				var all []int64
				for i := range 6 {
					all = append(all, f.create(fmt.Sprintf("Write part %d", i+1)).Number)
				}

				f.runFor(10*time.Minute, time.Second)
				calls := len(fake.Requests())
				if kind != "503" {
					calls = int(refused.Load())
				}
				if calls > 12 {
					t.Errorf("the replica made %d model calls in a 10-minute outage; the breaker should hold it to a handful", calls)
				}
				if calls < 3 {
					t.Errorf("only %d model calls in the outage: the probes stopped", calls)
				}
				for _, n := range all {
					f.assertUntouched(n)
				}
				if s := f.svc.ModelState(); s != "degraded" {
					t.Errorf("model state during the outage = %q, want degraded", s)
				}

				fake.EndOutage()
				down.Store(false)
				fake.SetDefault(note("part", 100, "done"))
				f.runFor(15*time.Minute, 5*time.Second)
				for _, n := range all {
					got := f.task(n)
					if got.Status != domain.StatusCompleted || got.Iteration != 1 || len(f.steps(n)) != 1 {
						t.Errorf("task #%d = %s after %d iterations, %d steps; want completed in exactly 1", n, got.Status, got.Iteration, len(f.steps(n)))
					}
				}
				if s := f.svc.ModelState(); s != "ok" {
					t.Errorf("model state after the outage = %q, want ok", s)
				}
				evs, err := f.store.TaskEvents(f.ctx, all[0], 0)
				if err != nil {
					t.Fatal(err)
				}
				if !hasEvent(evs, domain.EventModelUnavailable) {
					t.Errorf("no %s event in %v", domain.EventModelUnavailable, eventTypeList(evs))
				}
				f.check()
			})
		})
	}
}

// refused counts the dials refusingClient refused (the connection-refused
// case has no requests at the fake to count).
var refused atomic.Int64

// refusingClient reaches fake, except while down is set: then it dials a
// port nobody listens on, and the kernel refuses the connection.
func refusingClient(t *testing.T, fake *testkit.OpenAI, down *atomic.Bool) *http.Client {
	t.Helper()
	refused.Store(0)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	tr := fake.Client().Transport.(*http.Transport).Clone()
	var d net.Dialer
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if down.Load() {
			refused.Add(1)
			return d.DialContext(ctx, network, closed)
		}
		return d.DialContext(ctx, network, addr)
	}
	tr.DisableKeepAlives = true
	return &http.Client{Transport: tr}
}

// TestModelRefusalPutsTasksOnHold: a 401 ends nothing; one hold message
// goes to each room with active tasks; the replica probes every 60 s and
// resumes by itself once the key works.
func TestModelRefusalPutsTasksOnHold(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		fake.StartOutage(http.StatusUnauthorized)
		f := newWireFixture(t, open, fake, nil)
		a := f.create("Write the plan").Number
		b := f.create("Write the tests").Number
		c := f.create("Write the docs", func(in *domain.NewTask) { in.RoomID = "discord:42" }).Number

		f.runFor(5*time.Minute, time.Second)
		if calls := len(fake.Requests()); calls < 4 || calls > 7 {
			t.Errorf("%d calls in 5 minutes on hold; want the first and one probe a minute", calls)
		}
		for _, n := range []int64{a, b, c} {
			f.assertUntouched(n)
		}
		if s := f.svc.ModelState(); !strings.HasPrefix(s, "on hold: ") {
			t.Errorf("model state = %q, want on hold", s)
		}
		rooms := holdMessages(t, f)
		if len(rooms) != 2 || rooms["console"] != 1 || rooms["discord:42"] != 1 {
			t.Errorf("hold messages per room = %v; want one in each of the two rooms", rooms)
		}

		fake.EndOutage()
		fake.SetDefault(note("x", 100, "done"))
		f.runFor(3*time.Minute, time.Second)
		for _, n := range []int64{a, b, c} {
			if got := f.task(n); got.Status != domain.StatusCompleted || got.Iteration != 1 {
				t.Errorf("task #%d = %s after %d iterations; want completed in 1", n, got.Status, got.Iteration)
			}
		}
		if s := f.svc.ModelState(); s != "ok" {
			t.Errorf("model state = %q, want ok", s)
		}
		f.check()
	})
}

// holdMessages counts the hold notifications waiting in the outbox, by
// room.
func holdMessages(t *testing.T, f *fixture) map[string]int {
	t.Helper()
	out := map[string]int{}
	for {
		room, rows, err := f.store.ClaimRoom(f.ctx, domain.RoomClaim{Owner: "reader", Now: f.clk.Now(), Lease: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if room == "" {
			return out
		}
		for _, r := range rows {
			var p struct{ Text string }
			_ = json.Unmarshal(r.Payload, &p)
			if r.TaskNumber == 0 && strings.HasPrefix(p.Text, "⏸️ Tasks are on hold: the model refused the request (401") {
				out[room]++
			}
		}
	}
}

// TestResponseFormatFallback: a server that refuses json_schema gets
// json_object from then on, and the task never notices.
func TestResponseFormatFallback(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		fake.RejectResponseFormat("json_schema")
		fake.Reply(note("a", 50, "continue"))
		fake.Reply(note("b", 100, "done"))
		f := newWireFixture(t, open, fake, nil)
		n := f.create("Write the plan").Number
		f.runFor(10*time.Second, time.Second)
		if got := f.task(n); got.Status != domain.StatusCompleted || got.Iteration != 2 || got.StaleCounter != 0 {
			t.Fatalf("task = %s after %d iterations (stale %d); want completed in 2", got.Status, got.Iteration, got.StaleCounter)
		}
		var formats []string
		for _, r := range fake.Requests() {
			formats = append(formats, r.ResponseFormat())
		}
		if strings.Join(formats, ",") != "json_schema,json_object,json_object" {
			t.Errorf("response formats = %v; want json_schema refused once, then json_object", formats)
		}
		f.check()
	})
}

// TestStallGuardAndStressTemperature: the temperature rises 0.1 per failed
// step in a row and falls back after a success; a step that repeats the
// one before counts as no progress whatever the model claims.
func TestStallGuardAndStressTemperature(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		f.model.Decide("rm_rf", nil, 10, "continue")                  // fails
		f.model.Decide("rm_rf", nil, 10, "continue")                  // fails
		f.model.Decide("write_file", noteParams("a"), 20, "continue") // succeeds
		f.model.Decide("write_file", noteParams("a"), 40, "continue") // the same step again
		f.model.Decide("write_file", noteParams("b"), 50, "continue")
		n := f.create("Write the plan").Number
		for range 5 {
			f.step("test")
		}
		var temps []string
		for _, r := range f.model.Requests() {
			if r.Temperature == nil {
				t.Fatal("a request without a temperature")
			}
			temps = append(temps, strconv.FormatFloat(float64(*r.Temperature), 'f', -1, 32))
		}
		if got := strings.Join(temps, " "); got != "0.2 0.3 0.4 0.2 0.2" {
			t.Errorf("temperatures = %s; want 0.2 0.3 0.4 0.2 0.2", got)
		}
		steps := f.steps(n)
		if got := f.task(n); got.Progress != 50 || steps[3].Progress != 20 {
			t.Errorf("progress = %d, step 4 at %d; want the repeated step 4 to stay at 20 and step 5 to reach 50", got.Progress, steps[3].Progress)
		}
		if got := f.task(n); got.StaleCounter != 0 {
			t.Errorf("stale counter = %d after a rise", got.StaleCounter)
		}
		f.check()
	})
}

func noteParams(name string) map[string]string {
	return map[string]string{"path": "notes/" + name + ".md", "content": name}
}

func fmtFloat(v float32) string {
	return strings.TrimSpace(strings.Replace(string(must(json.Marshal(v))), "e", "E", 1))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestTokenBudget: a task whose tokens reach max_tokens ends stalemate at
// that iteration, saying so.
func TestTokenBudget(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		f.model.Default(rising) // 110 tokens an iteration
		n := f.create("Write the plan", func(in *domain.NewTask) { b := int64(300); in.MaxTokens = &b }).Number
		for range 5 {
			f.step("test")
		}
		got := f.task(n)
		if got.Status != domain.StatusStalemate || got.Iteration != 3 || got.Error != "token budget exhausted (330 of 300 tokens)" {
			t.Fatalf("task = %s after %d iterations, error %q; want stalemate at 3 with the budget's error", got.Status, got.Iteration, got.Error)
		}
		f.check()
	})
}

// TestUnansweredQuestionTimesOut: a question nobody answers within the
// answer timeout resumes the task, and its next prompt says so.
func TestUnansweredQuestionTimesOut(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		f.model.Decide("ask_user", map[string]string{"question": "JWT or sessions?"}, 10, "continue")
		f.model.Decide("write_file", noteParams("auth"), 100, "done")
		n := f.create("Build auth").Number
		f.step("test")
		if got := f.task(n); got.Status != domain.StatusWaiting || got.WaitingOn != domain.WaitAnswer {
			t.Fatalf("task = %s on %q, want waiting on an answer", got.Status, got.WaitingOn)
		}
		f.clk.Advance(tasks.DefaultAnswerTimeout - 2*time.Second)
		if k, err := f.svc.ExpireQuestions(f.ctx); err != nil || k != 0 {
			t.Fatalf("ExpireQuestions before the timeout = %d, %v; want none", k, err)
		}
		f.clk.Advance(time.Second)
		if k, err := f.svc.ExpireQuestions(f.ctx); err != nil || k != 1 {
			t.Fatalf("ExpireQuestions at the timeout = %d, %v; want 1", k, err)
		}
		f.step("test")
		if got := f.task(n); got.Status != domain.StatusCompleted {
			t.Fatalf("task = %s, want completed", got.Status)
		}
		reqs := f.model.Requests()
		if last := reqs[len(reqs)-1].Messages[1].Content; !strings.Contains(last, "No answer came within 24h.") {
			t.Fatalf("the timeout is not in the next prompt:\n%s", last)
		}
		f.check()
	})
}

// TestRetryContinuesWithFiles: retry of an ended task is a new task with
// continues_number, the old files, and the old run and the new context in
// its prompt; a task that has not ended cannot be retried.
func TestRetryContinuesWithFiles(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		f.model.Decide("write_file", map[string]string{"path": "notes/plan.md", "content": "the plan"}, 40, "continue")
		f.model.Decide("none", nil, 40, "stuck")
		old := f.create("Build auth").Number
		if _, err := f.svc.Retry(f.ctx, old, domain.NewTask{RequestorID: "u1", Actor: "u1"}); err == nil {
			t.Fatal("retry of a task that has not ended was accepted")
		}
		f.step("test")
		f.step("test")
		if got := f.task(old); got.Status != domain.StatusFailed {
			t.Fatalf("old task = %s", got.Status)
		}
		nt, err := f.svc.Retry(f.ctx, old, domain.NewTask{RequestorID: "u1", Platform: "console", RoomID: "console", Actor: "u1", Context: "use JWT this time"})
		if err != nil {
			t.Fatal(err)
		}
		if nt.ContinuesNumber != old || nt.Goal != "Build auth" || nt.Status != domain.StatusQueued {
			t.Fatalf("retry = %+v", nt)
		}
		f.model.Decide("read_file", map[string]string{"path": "notes/plan.md"}, 60, "continue")
		f.step("test")
		if s := f.steps(nt.Number); len(s) != 1 || !s[0].Success || !strings.Contains(s[0].Result, "the plan") {
			t.Fatalf("the retry cannot read the old task's file: %+v", s)
		}
		reqs := f.model.Requests()
		prompt := reqs[len(reqs)-1].Messages[0].Content
		for _, want := range []string{"continues task #1", "failed", "notes/plan.md", "use JWT this time"} {
			if !strings.Contains(prompt, want) {
				t.Errorf("the retry's prompt lacks %q:\n%s", want, prompt)
			}
		}
		f.check()
	})
}

func hasEvent(evs []domain.TaskEvent, typ string) bool {
	for _, e := range evs {
		if e.Type == typ {
			return true
		}
	}
	return false
}

func eventTypeList(evs []domain.TaskEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

// TestShutdownReleasesAnInFlightTask: a model call still running when
// Stop's context ends is canceled, and its task released unchanged — a
// "released" event, no step — so another replica takes it at once.
func TestShutdownReleasesAnInFlightTask(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		entered := make(chan struct{})
		f.model.Then(func(ctx context.Context, _ plugin.ModelRequest) (plugin.ModelResponse, error) {
			close(entered)
			<-ctx.Done() // a long model call
			return plugin.ModelResponse{}, ctx.Err()
		})
		n := f.create("Write the plan").Number
		if err := f.svc.Start(f.ctx); err != nil {
			t.Fatal(err)
		}
		<-entered
		ctx, cancel := context.WithCancel(f.ctx)
		cancel() // the shutdown timeout has passed
		if err := f.svc.Stop(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Stop = %v; want the in-flight iteration canceled", err)
		}
		got := f.task(n)
		if got.LeaseOwner != "" || got.Iteration != 0 || len(f.steps(n)) != 0 || !got.NextAttemptAt.IsZero() {
			t.Fatalf("task after shutdown = %+v; want released unchanged", got)
		}
		evs, err := f.store.TaskEvents(f.ctx, n, 0)
		if err != nil {
			t.Fatal(err)
		}
		if last := evs[len(evs)-1]; last.Type != domain.EventReleased {
			t.Fatalf("last event = %s; want released (%v)", last.Type, eventTypeList(evs))
		}
		f.check()
	})
}

// TestPruneKeepsTheRetention: memories older than the retention (720h by
// default) are deleted, newer ones kept.
func TestPruneKeepsTheRetention(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		for i, age := range []time.Duration{721 * time.Hour, 719 * time.Hour} {
			if _, _, err := f.store.SaveMemory(f.ctx, domain.Memory{Platform: "console", MessageID: fmt.Sprint(i), Room: "console",
				Text: fmt.Sprint("m", i), CreatedAt: t0.Add(-age)}); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := f.svc.Prune(f.ctx); err != nil || n != 1 {
			t.Fatalf("Prune = %d, %v; want the one older than 720h", n, err)
		}
		left, err := f.store.RecentMemories(f.ctx, "console", 0)
		if err != nil || len(left) != 1 || left[0].Text != "m1" {
			t.Fatalf("memories left = %+v, %v; want m1", left, err)
		}
	})
}

// TestUnansweredQuestionResumesWithinAMinute: with the service running
// (its sweep on the clock, not a test calling ExpireQuestions), a
// question unanswered for TASKLOOM_ANSWER_TIMEOUT — here its shortest, a
// minute — resumes its task within a minute after the timeout, and not
// before: the person who set a short timeout wants the task to go on
// then, not at some later sweep. The task's second question gets its own
// minute, not what is left of the first one's.
func TestUnansweredQuestionResumesWithinAMinute(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		const timeout = time.Minute
		f.svc = tasks.New(tasks.Options{Runtime: f.rt, Lease: lease, Owner: "test", AnswerTimeout: timeout, Workers: 1})
		f.model.Decide("ask_user", map[string]string{"question": "JWT or sessions?"}, 10, "continue")
		f.model.Decide("ask_user", map[string]string{"question": "Which database?"}, 20, "continue")
		f.model.Decide("write_file", noteParams("auth"), 100, "done")
		n := f.create("Build auth").Number
		f.step("test")
		// The service starts a little after the question (its sweep's
		// first look is then a minute after that), the worst case for a
		// sweep that looks every minute.
		f.clk.Advance(30 * time.Second)
		if err := f.svc.Start(f.ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.svc.Stop(context.Background()) })
		for q, question := range []string{"JWT or sessions?", "Which database?"} {
			asked := f.task(n)
			if asked.Status != domain.StatusWaiting || asked.WaitingOn != domain.WaitAnswer {
				t.Fatalf("question %d: task = %s on %q, want waiting on an answer", q+1, asked.Status, asked.WaitingOn)
			}
			due := asked.LastProcessedAt.Add(timeout)
			var resumed time.Time
			for f.clk.Now().Before(due.Add(2 * timeout)) {
				// Both the worker and the sweep wait on the clock again.
				if err := f.clk.BlockUntil(t.Context(), 2); err != nil {
					t.Fatal(err)
				}
				if got := f.task(n); got.Iteration > asked.Iteration || got.WaitingOn != domain.WaitAnswer {
					resumed = f.clk.Now()
					break
				}
				f.clk.Advance(5 * time.Second)
			}
			switch {
			case resumed.IsZero():
				t.Fatalf("%q: the task still waits %s after its question's timeout", question, f.clk.Now().Sub(due))
			case resumed.Before(due):
				t.Fatalf("%q: the task resumed %s before its question's timeout", question, due.Sub(resumed))
			case resumed.Sub(due) > timeout+5*time.Second: // seen at the next 5-second look
				t.Fatalf("%q: the task resumed %s after its question's timeout; want within a minute", question, resumed.Sub(due))
			}
			// The worker serves the resumed task: its next iteration
			// asks the next question, or ends it.
			for {
				got := f.task(n)
				if got.Iteration > asked.Iteration && (got.WaitingOn == domain.WaitAnswer || got.Status.Terminal()) {
					break
				}
				if err := f.clk.BlockUntil(t.Context(), 2); err != nil {
					t.Fatal(err)
				}
				f.clk.Advance(2 * time.Second)
			}
		}
	})
}

// TestPausedQuestionGetsItsTimeoutAgain: a task paused while its question
// waits, and resumed after longer than the answer timeout, goes back to
// waiting for the whole timeout: nobody could answer it while it was
// paused, and the person who resumed it wants time to answer, not the
// question given up on at the next sweep.
func TestPausedQuestionGetsItsTimeoutAgain(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		const timeout = time.Minute
		f.svc = tasks.New(tasks.Options{Runtime: f.rt, Lease: lease, Owner: "test", AnswerTimeout: timeout})
		f.model.Decide("ask_user", map[string]string{"question": "JWT or sessions?"}, 10, "continue")
		n := f.create("Build auth").Number
		f.step("test")
		f.clk.Advance(10 * time.Second)
		if _, err := f.svc.Pause(f.ctx, n, "u1"); err != nil {
			t.Fatal(err)
		}
		f.clk.Advance(time.Hour)
		if _, err := f.svc.Resume(f.ctx, n, "u1"); err != nil {
			t.Fatal(err)
		}
		if got := f.task(n); got.Status != domain.StatusWaiting || got.WaitingOn != domain.WaitAnswer {
			t.Fatalf("resumed: %s on %q; want waiting on its answer again", got.Status, got.WaitingOn)
		}
		f.clk.Advance(timeout - time.Second)
		if k, err := f.svc.ExpireQuestions(f.ctx); err != nil || k != 0 {
			t.Fatalf("ExpireQuestions within a timeout of the resume = %d, %v; want none", k, err)
		}
		f.clk.Advance(time.Second)
		if k, err := f.svc.ExpireQuestions(f.ctx); err != nil || k != 1 {
			t.Fatalf("ExpireQuestions a timeout after the resume = %d, %v; want 1", k, err)
		}
		f.check()
	})
}
