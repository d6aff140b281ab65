package slack_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/slack"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/app"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/config"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/slackfake"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// The two ways Slack reaches the adapter.
const (
	httpMode   = "http"
	socketMode = "socket"
)

// People in the fake workspace.
const (
	alice = "U0ALICE" // creates tasks
	bob   = "U0BOB"   // an ordinary member
	carol = "U0CAROL" // a workspace admin
	dave  = "U0DAVE"  // the workspace owner
)

// wait bounds how long a test waits for real goroutines and sockets.
const wait = 20 * time.Second

var epoch = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// env is Taskloom's core with the Slack adapter plugged in, talking to a
// fake Slack, on a fake clock. The task workers are stopped: tests run
// iterations with step and send notifications with the notify service.
type env struct {
	t     *testing.T
	mode  string
	ctx   context.Context
	clk   *clock.Fake
	fake  *slackfake.Server
	model *testkit.ScriptedModel
	core  *app.Core
	slack *slack.Adapter
	http  http.Handler
}

// forModes runs fn in HTTP mode and in Socket Mode.
func forModes(t *testing.T, fn func(t *testing.T, e *env)) {
	t.Helper()
	for _, mode := range []string{httpMode, socketMode} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			fn(t, newEnv(t, mode))
		})
	}
}

func newEnv(t *testing.T, mode string, with ...func(*slack.Options)) *env {
	t.Helper()
	return newEnvStore(t, mode, nil, with...)
}

// newEnvStore is newEnv whose service uses wrap(store) (nil: the store).
func newEnvStore(t *testing.T, mode string, wrap func(domain.Store) domain.Store, with ...func(*slack.Options)) *env {
	t.Helper()
	return newEnvVars(t, mode, wrap, nil, with...)
}

// newEnvVars is newEnvStore with configuration variables set.
func newEnvVars(t *testing.T, mode string, wrap func(domain.Store) domain.Store, extra map[string]string, with ...func(*slack.Options)) *env {
	t.Helper()
	return newEnvCore(t, mode, wrap, extra, nil, with...)
}

// newEnvCore is newEnvVars whose core's options core changes (nil: none).
func newEnvCore(t *testing.T, mode string, wrap func(domain.Store) domain.Store, extra map[string]string, coreOpts func(*app.CoreOptions), with ...func(*slack.Options)) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	t.Cleanup(cancel)
	log := testLogger(t)
	clk := clock.NewFake(epoch)
	fake := slackfake.New(t, slackfake.WithNow(clk.Now),
		slackfake.WithUser(slackfake.User{ID: alice, Name: "alice"}),
		slackfake.WithUser(slackfake.User{ID: bob, Name: "bob"}),
		slackfake.WithUser(slackfake.User{ID: carol, Name: "carol", Admin: true}),
		slackfake.WithUser(slackfake.User{ID: dave, Name: "dave", Owner: true}),
	)
	// The facts evaluator arms a timer on the fake clock for each room's
	// message; the tests that count the clock's waiters turn it on
	// themselves.
	vars := map[string]string{"TASKLOOM_DATA_DIR": t.TempDir(), "TASKLOOM_FACTS": "false"}
	for k, v := range extra {
		vars[k] = v
	}
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	model := testkit.NewScriptedModel()
	var st domain.Store = teststore.SQLite(t)
	if wrap != nil {
		st = wrap(st)
	}
	co := app.CoreOptions{Config: cfg, Store: st, Model: model, Clock: clk, Logger: log, Owner: "test"}
	if coreOpts != nil {
		coreOpts(&co)
	}
	core := app.NewCore(co)
	opts := slack.Options{BotToken: fake.BotToken(), APIURL: fake.APIURL(), Runtime: core.Runtime}
	if mode == socketMode {
		opts.AppToken = fake.AppToken()
	} else {
		opts.SigningSecret = fake.SigningSecret()
	}
	for _, w := range with {
		w(&opts)
	}
	a, err := slack.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := core.Runtime.Register(a.Plugin()); err != nil {
		t.Fatal(err)
	}
	if err := core.Runtime.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stop, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		// The last flush sends what people wait for as each room's
		// window allows: time passes meanwhile, as it would.
		defer testkit.Tick(clk, 100*time.Millisecond)()
		if err := core.Runtime.Stop(stop); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	// Iterations run when the test says (step), not when a worker wants.
	if err := core.Tasks.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if mode == socketMode && a.Connected() {
		if err := fake.WaitConnections(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}
	return &env{t: t, mode: mode, ctx: ctx, clk: clk, fake: fake, model: model, core: core, slack: a, http: a.HTTPHandler()}
}

// delivery is what Slack got back for a payload.
type delivery struct {
	status   int                // HTTP mode: the response status
	body     []byte             // the response body, or the ack's payload
	envelope slackfake.Envelope // Socket Mode: the envelope sent
}

// deliver sends p the way the mode does — a signed request to the
// adapter's handler, or an envelope over Socket Mode — and returns the
// acknowledgement, once the adapter has taken in what p asked for.
func (e *env) deliver(p slackfake.Payload, opts ...slackfake.RequestOption) delivery {
	e.t.Helper()
	d := <-e.deliverAsync(p, opts...)
	if e.mode == httpMode && d.status != http.StatusOK {
		e.t.Fatalf("%T: HTTP %d: %s", p, d.status, d.body)
	}
	return d
}

func (e *env) deliverAsync(p slackfake.Payload, opts ...slackfake.RequestOption) <-chan delivery {
	e.t.Helper()
	out := make(chan delivery, 1)
	if e.mode == httpMode {
		req, err := e.fake.Request(e.ctx, "http://taskloom.test", p, opts...)
		if err != nil {
			e.t.Fatal(err)
		}
		go func() {
			rec := httptest.NewRecorder()
			e.http.ServeHTTP(rec, req)
			out <- delivery{status: rec.Code, body: rec.Body.Bytes()}
		}()
		return out
	}
	env, err := e.fake.Deliver(e.ctx, p)
	if err != nil {
		e.t.Fatal(err)
	}
	go func() {
		ack, err := e.fake.WaitAck(e.ctx, env.ID)
		if err != nil {
			e.t.Error(err)
		}
		out <- delivery{body: ack.Payload, envelope: env}
	}()
	return out
}

// redeliver sends p again as Slack's retry: X-Slack-Retry-Num over HTTP, a
// new envelope with retry_attempt over Socket Mode.
func (e *env) redeliver(p slackfake.Payload, first delivery) delivery {
	e.t.Helper()
	if e.mode == httpMode {
		return e.deliver(p, slackfake.Retry(1, "http_timeout"))
	}
	env, err := e.fake.Redeliver(e.ctx, first.envelope)
	if err != nil {
		e.t.Fatal(err)
	}
	ack, err := e.fake.WaitAck(e.ctx, env.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return delivery{body: ack.Payload, envelope: env}
}

// settle waits until the adapter has handled everything delivered.
func (e *env) settle() {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, wait)
	defer cancel()
	if err := e.slack.Drain(ctx); err != nil {
		e.t.Fatalf("messages still being handled: %v", err)
	}
}

// waitMessages waits for n messages that match. While it waits, time
// passes as far as a message the pacer left to the outbox asks
// (testkit.PacedDue): Slack takes four messages in 4.4 s in a channel,
// and these tests say more than that there with the clock still.
func (e *env) waitMessages(n int, match func(slackfake.Message) bool) []slackfake.Message {
	e.t.Helper()
	deadline := time.Now().Add(wait)
	for {
		ctx, cancel := context.WithTimeout(e.ctx, 250*time.Millisecond)
		got, err := e.fake.WaitMessages(ctx, n, match)
		cancel()
		switch {
		case err == nil:
			return got
		case time.Now().After(deadline) || e.ctx.Err() != nil:
			e.t.Fatalf("%v; messages so far:\n%s", err, dump(e.fake.Messages()))
		}
		if due, ok := testkit.PacedDue(e.ctx, e.core.Runtime.Store(), e.clk.Now(), 10*time.Second); ok {
			e.clk.Advance(due.Sub(e.clk.Now()))
		}
	}
}

// waitCalls waits until the fake has had at least n calls to method
// (a send the notification service's own schedule started), and returns
// them.
func (e *env) waitCalls(method string, n int) []slackfake.Call {
	e.t.Helper()
	deadline := time.Now().Add(wait)
	for {
		calls := e.fake.CallsTo(method)
		if len(calls) >= n || time.Now().After(deadline) {
			return calls
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// step runs one iteration of the next task in the queue.
func (e *env) step() {
	e.t.Helper()
	did, err := e.core.Tasks.Step(e.ctx, "test")
	if err != nil || !did {
		e.t.Fatalf("step: did %v, err %v", did, err)
	}
}

func (e *env) task(n int64) domain.Task {
	e.t.Helper()
	task, err := e.core.Runtime.Store().GetTask(e.ctx, n)
	if err != nil {
		e.t.Fatalf("task #%d: %v", n, err)
	}
	return task
}

func (e *env) countTasks() int {
	e.t.Helper()
	n, err := e.core.Runtime.Store().CountTasks(e.ctx, domain.TaskFilter{})
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// immediate reads the answer a delivery's acknowledgement carried.
func (e *env) immediate(d delivery) (slackfake.Message, bool) {
	e.t.Helper()
	m, ok, err := slackfake.ParseResponse(d.body)
	if err != nil {
		e.t.Fatalf("acknowledgement body %q: %v", d.body, err)
	}
	return m, ok
}

// Matchers.

func inThread(channel, thread string) func(slackfake.Message) bool {
	return func(m slackfake.Message) bool { return m.Channel == channel && m.ThreadTS == thread }
}

func both(a, b func(slackfake.Message) bool) func(slackfake.Message) bool {
	return func(m slackfake.Message) bool { return a(m) && b(m) }
}

func saying(s string) func(slackfake.Message) bool {
	return func(m slackfake.Message) bool { return strings.Contains(m.Text, s) }
}

func kind(k string) func(slackfake.Message) bool {
	return func(m slackfake.Message) bool { return m.Kind == k }
}

func dump(ms []slackfake.Message) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString("  [" + m.Kind + " " + m.Channel + " thread=" + m.ThreadTS + " user=" + m.User + "] " + strings.ReplaceAll(m.Text, "\n", "⏎") + "\n")
	}
	return b.String()
}

// testLogger logs through t while the test runs.
func testLogger(t *testing.T) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct {
	t    *testing.T
	mu   sync.Mutex
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}
