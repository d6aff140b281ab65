package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/adapters/httpapi"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/tasks"
)

var t0 = time.Date(2026, 5, 6, 7, 0, 0, 0, time.UTC)

// discord is a platform that accepts everything, so rooms "discord:…"
// are served.
type discord struct{}

func (discord) Name() string { return "discord" }
func (discord) Send(context.Context, string, plugin.Outgoing) (plugin.SentMessage, error) {
	return plugin.SentMessage{}, nil
}

// fixture is a runtime with the tools, a scripted model and the task
// service (not started: tests drive iterations with Step), with the API
// mounted on a Server.
type fixture struct {
	t     testing.TB
	ctx   context.Context
	clk   *clock.Fake
	store domain.Store
	rt    *plugin.Runtime
	model *testkit.ScriptedModel
	tasks *tasks.Service
	srv   *httpapi.Server
	api   *httpapi.API
	opts  httpapi.APIOptions
	ts    *httptest.Server // started by net
	// bearer, when set, is sent as the API token with every request
	// whose header pairs do not set Authorization themselves.
	bearer string
}

// testToken is the API token of fixtures made by tokenFixture.
const testToken = "httpapi-test-token-0123456789abcdef"

// tokenFixture is newFixture with the API token configured, and sent by
// do and net, as by a client holding it.
func tokenFixture(t *testing.T, open teststore.Opener, configure ...func(*httpapi.APIOptions)) *fixture {
	t.Helper()
	f := newFixture(t, open, append(configure, func(o *httpapi.APIOptions) { o.Token = testToken })...)
	f.bearer = testToken
	return f
}

func newFixture(t *testing.T, open teststore.Opener, configure ...func(*httpapi.APIOptions)) *fixture {
	t.Helper()
	return newFixtureAt(t, open, t0, configure...)
}

// newFixtureAt is newFixture with the fake clock starting at start.
func newFixtureAt(t testing.TB, open teststore.Opener, start time.Time, configure ...func(*httpapi.APIOptions)) *fixture {
	t.Helper()
	f := &fixture{t: t, ctx: context.Background(), clk: clock.NewFake(start), store: open(t), model: testkit.NewScriptedModel()}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.rt = plugin.New(plugin.Options{Store: f.store, Clock: f.clk, Logger: log})
	err := f.rt.Register(
		&plugin.Plugin{Name: "model", Models: map[plugin.ModelType]plugin.Model{plugin.ModelText: f.model}},
		&plugin.Plugin{Name: "tools", Actions: actions.Tools(actions.ToolConfig{Workspaces: actions.Workspaces{Root: t.TempDir()}}),
			Platforms: []plugin.Platform{discord{}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.rt.Start(f.ctx); err != nil {
		t.Fatal(err)
	}
	// http_get waits for a person's approval, as run_command does by
	// default; no other test here uses it. Tasks get a token budget of
	// defaultBudget unless they ask for another.
	f.tasks = tasks.New(tasks.Options{Runtime: f.rt, Lease: time.Minute, Owner: "worker-1",
		ApproveTools: []string{"http_get"}, MaxTokens: defaultBudget})
	f.opts = httpapi.APIOptions{Store: f.store, Tasks: f.tasks, Clock: f.clk, Logger: log, Runtime: f.rt,
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "# metrics\n") })}
	for _, c := range configure {
		c(&f.opts)
	}
	f.srv = httpapi.New(log, nil)
	f.api = httpapi.NewAPI(f.opts)
	f.api.Mount(f.srv)
	return f
}

// defaultBudget is the token budget of the fixture's tasks
// (TASKLOOM_MAX_TOKENS).
const defaultBudget = 1_000_000

// create makes a task through the service, as chat would.
func (f *fixture) create(goal string) domain.Task {
	f.t.Helper()
	task, err := f.tasks.Create(f.ctx, domain.NewTask{Goal: goal, RequestorID: "u1", Platform: "console", RoomID: "console", Actor: "u1"})
	if err != nil {
		f.t.Fatal(err)
	}
	return task
}

// step runs one iteration and moves the clock on a second.
func (f *fixture) step() {
	f.t.Helper()
	if _, err := f.tasks.Step(f.ctx, "worker-1"); err != nil {
		f.t.Fatalf("step: %v", err)
	}
	f.clk.Advance(time.Second)
}

// net sends one request over a real connection to an httptest server of
// the fixture's Server, as a client on the same machine does (Host
// 127.0.0.1:port; Content-Type application/json for a change; the token,
// when the fixture has one). The header pairs add to it.
func (f *fixture) net(method, path, body string, header ...string) response {
	f.t.Helper()
	if f.ts == nil {
		f.ts = httptest.NewServer(f.srv)
		f.t.Cleanup(f.ts.Close)
	}
	req, err := http.NewRequestWithContext(f.ctx, method, f.ts.URL+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	if method != "GET" && method != "HEAD" {
		req.Header.Set("Content-Type", "application/json")
	}
	if f.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+f.bearer)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatalf("%s %s: read the answer: %v", method, path, err)
	}
	r := response{code: resp.StatusCode, header: resp.Header, raw: string(raw)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &r.body); err != nil {
			f.t.Fatalf("%s %s: body %q is not a JSON object: %v", method, path, r.raw, err)
		}
	}
	return r
}

type response struct {
	code   int
	header http.Header
	raw    string
	body   map[string]any
}

// do sends one request to the server in process, as a well-behaved
// client on the same machine does: to Host localhost and, for a change,
// with Content-Type application/json (and the token, when the fixture has
// one). The header pairs override these ("Host" sets the request's host).
func (f *fixture) do(method, path string, body io.Reader, header ...string) response {
	f.t.Helper()
	req := httptest.NewRequest(method, path, body)
	req.Host = "localhost"
	if method != "GET" && method != "HEAD" {
		req.Header.Set("Content-Type", "application/json")
	}
	if f.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+f.bearer)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if http.CanonicalHeaderKey(header[i]) == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	f.srv.ServeHTTP(rec, req)
	r := response{code: rec.Code, header: rec.Header(), raw: rec.Body.String()}
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(rec.Body.Bytes(), &r.body); err != nil {
			f.t.Fatalf("%s %s: body %q is not a JSON object: %v", method, path, r.raw, err)
		}
	}
	return r
}

func (r response) tasks() []map[string]any {
	var out []map[string]any
	for _, t := range r.body["tasks"].([]any) {
		out = append(out, t.(map[string]any))
	}
	return out
}

func numbers(ts []map[string]any) []int {
	var out []int
	for _, t := range ts {
		out = append(out, int(t["number"].(float64)))
	}
	return out
}
