package metrics_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/metrics"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/notify"
	"github.com/taskloom/taskloom/services/tasks"
)

// The Recorder is what the services are given.
var (
	_ tasks.Metrics  = (*metrics.Recorder)(nil)
	_ notify.Metrics = (*metrics.Recorder)(nil)
)

var t0 = time.Date(2026, 5, 6, 7, 0, 0, 0, time.UTC)

const lease = time.Minute

// chat is a platform that fails its first n sends.
type chat struct{ failures int }

func (c *chat) Name() string { return "chat" }
func (c *chat) Send(context.Context, string, plugin.Outgoing) (plugin.SentMessage, error) {
	if c.failures > 0 {
		c.failures--
		return plugin.SentMessage{}, errors.New("chat is down")
	}
	return plugin.SentMessage{IDs: []string{"1"}}, nil
}

type fixture struct {
	ctx    context.Context
	clk    *clock.Fake
	store  domain.Store
	model  *testkit.ScriptedModel
	rec    *metrics.Recorder
	tasks  *tasks.Service
	notify *notify.Service
	chat   *chat
}

func newFixture(t *testing.T, open teststore.Opener) *fixture {
	t.Helper()
	f := &fixture{ctx: context.Background(), clk: clock.NewFake(t0), store: open(t), model: testkit.NewScriptedModel(), chat: &chat{}}
	rt := plugin.New(plugin.Options{Store: f.store, Clock: f.clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	err := rt.Register(
		&plugin.Plugin{Name: "model", Models: map[plugin.ModelType]plugin.Model{plugin.ModelText: f.model}},
		&plugin.Plugin{Name: "tools", Actions: actions.Tools(actions.ToolConfig{Workspaces: actions.Workspaces{Root: t.TempDir()}}),
			Platforms: []plugin.Platform{f.chat}},
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(f.ctx); err != nil {
		t.Fatal(err)
	}
	f.rec = metrics.New(metrics.Options{Store: f.store, NoRuntime: true})
	f.notify = notify.New(notify.Options{Runtime: rt, Owner: "test", Metrics: f.rec})
	f.tasks = tasks.New(tasks.Options{Runtime: rt, Lease: lease, Owner: "test", Notify: f.notify.Outbox, Metrics: f.rec})
	return f
}

func (f *fixture) create(t *testing.T, room string) int64 {
	t.Helper()
	task, err := f.tasks.Create(f.ctx, domain.NewTask{Goal: "count things", RoomID: room, RequestorID: "u1", Now: f.clk.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return task.Number
}

func (f *fixture) step(t *testing.T, owner string) {
	t.Helper()
	if _, err := f.tasks.Step(f.ctx, owner); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(time.Second)
}

// scrape returns the exposition text the /metrics handler serves.
func scrape(t *testing.T, r *metrics.Recorder) string {
	t.Helper()
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /metrics = %d: %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

func TestServicesReportIterationsTokensAndNotifications(t *testing.T) {
	f := newFixture(t, teststore.SQLite)
	// Two iterations: one goes on, one completes; the model reports
	// cached prompt tokens on the second.
	f.model.Decide("", nil, 40, "continue")
	f.model.Then(func(context.Context, plugin.ModelRequest) (plugin.ModelResponse, error) {
		return plugin.ModelResponse{Text: testkit.DecisionJSON("", nil, 100, "done"),
			Usage: plugin.Usage{PromptTokens: 300, CompletionTokens: 30, CachedTokens: 256}}, nil
	})
	f.create(t, "chat:general")
	f.step(t, "test")
	f.step(t, "test")

	// The room's first message fails, the retry goes out.
	f.chat.failures = 1
	if _, err := f.notify.Flush(f.ctx); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(time.Hour)
	if _, err := f.notify.Flush(f.ctx); err != nil {
		t.Fatal(err)
	}

	body := scrape(t, f.rec)
	for _, want := range []string{
		`taskloom_iterations_total{outcome="continued"} 1`,
		`taskloom_iterations_total{outcome="completed"} 1`,
		`taskloom_model_tokens_total{kind="prompt"} 400`,
		`taskloom_model_tokens_total{kind="completion"} 50`,
		`taskloom_model_tokens_total{kind="cached"} 256`,
		`taskloom_model_request_duration_seconds_count 2`,
		`taskloom_claim_duration_seconds_count 2`,
		`taskloom_notifications_sent_total{platform="chat"} 1`,
		`taskloom_notifications_failed_total{platform="chat"} 1`,
		`taskloom_notifications_pending 0`,
		`taskloom_tasks{status="completed"} 1`,
		`taskloom_tasks{status="queued"} 0`,
		`taskloom_lease_losses_total 0`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("scrape lacks %q:\n%s", want, body)
		}
	}
}

func TestQueueDepthAndPendingAreReadAtScrape(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		f.model.Default(func(context.Context, plugin.ModelRequest) (plugin.ModelResponse, error) {
			return plugin.ModelResponse{Text: testkit.DecisionJSON("", nil, 10, "continue")}, nil
		})
		for range 3 {
			f.create(t, "chat:general")
		}
		paused := f.create(t, "")
		if _, err := f.tasks.Pause(f.ctx, paused, "u1"); err != nil {
			t.Fatal(err)
		}
		f.step(t, "test") // #1 runs once: progress and action rows wait for the flush

		tests := []struct {
			status domain.Status
			want   float64
		}{
			{domain.StatusQueued, 2},
			{domain.StatusRunning, 1},
			{domain.StatusPaused, 1},
			{domain.StatusCompleted, 0},
		}
		body := scrape(t, f.rec)
		for _, tc := range tests {
			want := `taskloom_tasks{status="` + string(tc.status) + `"} ` + ftoa(tc.want) + "\n"
			if !strings.Contains(body, want) {
				t.Errorf("scrape lacks %q", want)
			}
		}
		pending, err := f.store.Pending(f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if pending == 0 || !strings.Contains(body, "taskloom_notifications_pending "+ftoa(float64(pending))+"\n") {
			t.Errorf("pending = %d; scrape:\n%s", pending, body)
		}
	})
}

func TestLeaseLossIsCounted(t *testing.T) {
	f := newFixture(t, teststore.SQLite)
	gate, called := make(chan struct{}), make(chan struct{})
	f.model.Then(func(context.Context, plugin.ModelRequest) (plugin.ModelResponse, error) {
		close(called)
		<-gate
		return plugin.ModelResponse{Text: testkit.DecisionJSON("", nil, 90, "continue")}, nil
	})
	f.model.Decide("", nil, 30, "continue")
	f.create(t, "")
	done := make(chan error)
	go func() { _, err := f.tasks.Step(f.ctx, "A"); done <- err }()
	<-called
	f.clk.Advance(lease + time.Second)
	f.step(t, "B")
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	reg := f.rec.Registry()
	if got := count(t, reg, "taskloom_lease_losses_total"); got != 1 {
		t.Errorf("lease losses = %v, want 1", got)
	}
	body := scrape(t, f.rec)
	if !strings.Contains(body, `taskloom_iterations_total{outcome="rejected"} 1`) {
		t.Errorf("no rejected iteration:\n%s", body)
	}
}

func TestNilRecorderRecordsNothing(t *testing.T) {
	var r *metrics.Recorder
	r.Iteration("completed")
	r.Claim(time.Second)
	r.ModelRequest(time.Second, plugin.Usage{PromptTokens: 1})
	r.LeaseLost()
	r.NotificationSent("discord")
	r.NotificationFailed("discord")
	r.NotificationsDead("discord", 1)
}

func TestDeadNotificationsAreCountedByPlatform(t *testing.T) {
	r := metrics.New(metrics.Options{NoRuntime: true})
	if strings.Contains(scrape(t, r), "taskloom_notifications_dead_total{") {
		t.Fatal("a dead-letter series before any dead letter")
	}
	r.NotificationsDead("slack", 2)
	r.NotificationsDead("slack", 1)
	r.NotificationsDead("", 1)
	body := scrape(t, r)
	for _, want := range []string{`taskloom_notifications_dead_total{platform="slack"} 3`, `taskloom_notifications_dead_total{platform="unknown"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %s:\n%s", want, body)
		}
	}
}

func TestRecordersAreIsolated(t *testing.T) {
	a, b := metrics.New(metrics.Options{NoRuntime: true}), metrics.New(metrics.Options{NoRuntime: true})
	a.LeaseLost()
	a.NotificationSent("")
	if got := count(t, b.Registry(), "taskloom_lease_losses_total"); got != 0 {
		t.Fatalf("b saw a's lease loss: %v", got)
	}
	if !strings.Contains(scrape(t, a), `taskloom_notifications_sent_total{platform="unknown"} 1`) {
		t.Fatal("a platform-less send is not labelled unknown")
	}
	// The runtime collectors come with a default recorder.
	if !strings.Contains(scrape(t, metrics.New(metrics.Options{})), "go_goroutines") {
		t.Fatal("no Go runtime metrics")
	}
}

// count reads an unlabelled series' value from a registry.
func count(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			m := mf.GetMetric()[0]
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no series %s", name)
	return 0
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// TestTaskloomListsEverySeries records one of everything on a Recorder
// with a store and checks that the families it exports are Taskloom's,
// by name and type, and no others.
func TestTaskloomListsEverySeries(t *testing.T) {
	r := metrics.New(metrics.Options{Store: teststore.SQLite(t), NoRuntime: true})
	r.Iteration("completed")
	r.Claim(time.Millisecond)
	r.ModelRequest(time.Second, plugin.Usage{PromptTokens: 1})
	r.ModelUp(false)
	r.LeaseLost()
	r.NotificationSent("chat")
	r.NotificationFailed("chat")
	r.NotificationsDead("chat", 1)
	mfs, err := r.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, mf := range mfs {
		got[mf.GetName()] = strings.ToLower(mf.GetType().String())
	}
	want := map[string]string{}
	for _, s := range metrics.Taskloom {
		want[s.Name] = s.Type
	}
	for name, typ := range got {
		if want[name] != typ {
			t.Errorf("the Recorder exports %s, a %s, which metrics.Taskloom does not list as such (%q)", name, typ, want[name])
		}
	}
	for name, typ := range want {
		if got[name] == "" {
			t.Errorf("metrics.Taskloom lists %s (%s), which the Recorder does not export", name, typ)
		}
	}
}
