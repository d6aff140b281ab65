package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/adapters/demo"
	"github.com/taskloom/taskloom/adapters/httpapi"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/cli"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/tasks"
)

var t0 = time.Date(2026, 5, 6, 7, 0, 0, 0, time.UTC)

func TestMain(m *testing.M) {
	time.Local = time.UTC // the client prints local times; the tests read UTC
	os.Exit(m.Run())
}

// wait bounds how long a test waits for the client's goroutine.
const wait = 10 * time.Second

// server is the real API over a real store, with a task service whose
// iterations the test runs with Step.
type server struct {
	t     *testing.T
	ctx   context.Context
	clk   *clock.Fake
	store domain.Store
	tasks *tasks.Service
	url   string
	token string
}

// newServer starts the API; configure changes its options. http_get
// waits for a person's approval (no other test here uses it), and tasks
// get a token budget of a million unless they ask for another.
func newServer(t *testing.T, model plugin.Model, token string, configure ...func(*httpapi.APIOptions)) *server {
	t.Helper()
	s := &server{t: t, ctx: context.Background(), clk: clock.NewFake(t0), store: teststore.SQLite(t), token: token}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rt := plugin.New(plugin.Options{Store: s.store, Clock: s.clk, Logger: log})
	err := rt.Register(
		&plugin.Plugin{Name: "model", Models: map[plugin.ModelType]plugin.Model{plugin.ModelText: model}},
		&plugin.Plugin{Name: "tools", Actions: actions.Tools(actions.ToolConfig{Workspaces: actions.Workspaces{Root: t.TempDir()}})},
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(s.ctx); err != nil {
		t.Fatal(err)
	}
	s.tasks = tasks.New(tasks.Options{Runtime: rt, Lease: time.Minute, Owner: "worker-1",
		ApproveTools: []string{"http_get"}, MaxTokens: 1_000_000})
	srv := httpapi.New(log, nil)
	opts := httpapi.APIOptions{Store: s.store, Tasks: s.tasks, Token: token, Clock: s.clk, Logger: log, Runtime: rt}
	for _, c := range configure {
		c(&opts)
	}
	httpapi.NewAPI(opts).Mount(srv)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	s.url = ts.URL
	return s
}

func (s *server) env(k string) string {
	switch k {
	case "TASKLOOM_URL":
		return s.url
	case "TASKLOOM_API_TOKEN":
		return s.token
	}
	return ""
}

// step runs one iteration, as a worker would.
func (s *server) step() {
	s.t.Helper()
	if _, err := s.tasks.Step(s.ctx, "worker-1"); err != nil {
		s.t.Fatalf("step: %v", err)
	}
	s.clk.Advance(3 * time.Second)
}

// syncBuffer is written by the client's goroutine and read by the test;
// waitFor blocks until it holds a string.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{}
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{changed: make(chan struct{})} }

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.changed)
	s.changed = make(chan struct{})
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(wait)
	for {
		s.mu.Lock()
		has, ch := strings.Contains(s.b.String(), want), s.changed
		s.mu.Unlock()
		if has {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("output never showed %q:\n%s", want, s.String())
		}
	}
}

// run runs the client to the end.
func run(t *testing.T, env func(string) string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Run(context.Background(), args, env, &out, &errOut)
	return code, out.String(), errOut.String()
}

// start runs the client in the background; the returned func waits for
// its exit code.
func start(t *testing.T, env func(string) string, out *syncBuffer, args ...string) func() int {
	t.Helper()
	done := make(chan int, 1)
	var errOut bytes.Buffer
	go func() { done <- cli.Run(context.Background(), args, env, out, &errOut) }()
	return func() int {
		t.Helper()
		select {
		case code := <-done:
			if code != 0 {
				t.Logf("stderr: %s", errOut.String())
			}
			return code
		case <-time.After(wait):
			t.Fatalf("%v did not end; output so far:\n%s", args, out.String())
			return -1
		}
	}
}

// TestCreateThenFollowToCompletion is `taskloom tasks create "…" &&
// taskloom tasks events 1 --follow` against the real API, with the
// iterations run from the test while the client follows.
func TestCreateThenFollowToCompletion(t *testing.T) {
	model := testkit.NewScriptedModel().
		Decide("write_file", map[string]string{"path": "haiku.txt", "content": "queues hum softly"}, 30, "continue").
		Decide("read_file", map[string]string{"path": "haiku.txt"}, 60, "continue")
	model.Then(func(context.Context, plugin.ModelRequest) (plugin.ModelResponse, error) {
		return plugin.ModelResponse{Text: `{"thought":"done","action":"","params":{},"progress":100,"status":"done","summary":"Wrote a haiku about queues to haiku.txt."}`}, nil
	})
	s := newServer(t, model, "")

	code, out, errOut := run(t, s.env, "create", "Write", "a haiku about queues")
	if code != 0 || !strings.Contains(out, `Created task #1 "Write a haiku about queues" (queued).`) {
		t.Fatalf("create = %d\n%s%s", code, out, errOut)
	}

	buf := newSyncBuffer()
	exit := start(t, s.env, buf, "events", "1", "--follow")
	buf.waitFor(t, "#1 [░░░░░░░░░░]   0%  queued  iteration 0/50")
	s.step()
	buf.waitFor(t, "#1 [███░░░░░░░]  30%  running  iteration 1/50")
	s.step()
	buf.waitFor(t, "60%  running  iteration 2/50")
	s.step()
	if code := exit(); code != 0 {
		t.Fatalf("follow exited %d:\n%s", code, buf.String())
	}
	got := buf.String()
	for _, want := range []string{
		"  1  07:00:00  created    by api",
		"write_file haiku.txt ✓  0% → 30%",
		"read_file haiku.txt ✓  30% → 60%",
		"(no action) ✓  60% → 100%  → completed",
		"#1 [██████████] 100%  completed  iteration 3/50",
		"✅ Task #1 completed in 6s.",
		"Summary: Wrote a haiku about queues to haiku.txt.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("follow output lacks %q:\n%s", want, got)
		}
	}
	// The bar line is printed once per change, in order.
	var bars []string
	for _, line := range strings.Split(got, "\n") {
		if strings.HasPrefix(line, "#1 [") {
			bars = append(bars, line[strings.Index(line, "]")+1:][:5])
		}
	}
	if strings.Join(bars, "|") != "   0%|   0%|  30%|  60%| 100%" { // queued, claimed, …
		t.Errorf("bar progression = %q", bars)
	}

	// A finished task's follow prints its log and ends at once.
	code, out, _ = run(t, s.env, "events", "#1", "--follow")
	if code != 0 || !strings.Contains(out, "✅ Task #1 completed") {
		t.Fatalf("follow of an ended task = %d:\n%s", code, out)
	}
}

// TestDemoModelTaskRunsToCompletion follows a task of the built-in demo
// model from creation to the end.
func TestDemoModelTaskRunsToCompletion(t *testing.T) {
	s := newServer(t, demo.New(demo.Options{Think: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}), "")
	if code, out, errOut := run(t, s.env, "create", "Plan a small launch party"); code != 0 {
		t.Fatalf("create = %d %s %s", code, out, errOut)
	}
	buf := newSyncBuffer()
	exit := start(t, s.env, buf, "events", "1", "--follow")
	buf.waitFor(t, "queued  iteration 0/50")
	for i := 0; i < demo.MaxPlan+1; i++ {
		task, err := s.store.GetTask(s.ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if task.Status.Terminal() {
			break
		}
		s.step()
	}
	if code := exit(); code != 0 {
		t.Fatalf("follow exited %d:\n%s", code, buf.String())
	}
	if out := buf.String(); !strings.Contains(out, "✅ Task #1 completed") || !strings.Contains(out, "write_file") {
		t.Fatalf("demo task did not complete:\n%s", out)
	}
}

func TestCommands(t *testing.T) {
	model := testkit.NewScriptedModel().
		Decide("write_file", map[string]string{"path": "a.txt", "content": "a"}, 40, "continue").
		Decide("", nil, 100, "done")
	s := newServer(t, model, "")
	for _, goal := range []string{"Build auth", "Fix the \x1b[31mflaky\x1b[0m test", "Write docs"} {
		if _, err := s.tasks.Create(s.ctx, domain.NewTask{Goal: goal, RequestorID: "u1", Actor: "u1", Now: t0}); err != nil {
			t.Fatal(err)
		}
	}
	s.step() // #1: 40%
	s.step() // #2: done
	s.step() // #3: no script left: a failed step

	tests := []struct {
		name string
		args []string
		code int
		out  []string // substrings of stdout (exit 0) or stderr (otherwise)
		json bool     // stdout is JSON
	}{
		{"list", []string{"list"}, 0, []string{"#  TASK", "PROGRESS", `1  Build auth`, "[████░░░░░░]  40%  queued (in rotation)", "completed", "3 tasks"}, false}, // no worker holds #1 between steps: it waits its turn
		{"list a status", []string{"list", "--status", "completed"}, 0, []string{"2  Fix the", "1 task"}, false},
		{"list a search", []string{"list", "--search", "DOCS"}, 0, []string{"3  Write docs"}, false},
		{"list no match", []string{"list", "--search", "nothing like this"}, 0, []string{"No tasks match."}, false},
		{"list pages", []string{"list", "--limit", "2"}, 0, []string{"2 of 3 tasks shown; the next page: --after 2"}, false},
		{"list as JSON", []string{"list", "--json"}, 0, []string{`"tasks"`, `"total": 3`}, true},
		{"list with a bad status", []string{"list", "--status", "sleeping"}, 1, []string{`unknown status "sleeping"`}, false},
		{"list with an argument", []string{"list", "everything"}, 2, []string{"list takes no arguments"}, false},
		{"show", []string{"show", "1"}, 0, []string{`Task #1 "Build auth" — queued (in rotation)`, "[████░░░░░░]  40%", "Steps (1):", "write_file a.txt", "✓"}, false},
		{"show with #", []string{"show", "#3", "--json"}, 0, []string{`"number": 3`, `"steps"`}, true},
		{"show unknown", []string{"show", "99"}, 1, []string{"there is no task #99"}, false},
		{"files", []string{"files", "1"}, 0, []string{"PATH", "SIZE", "a.txt", "1"}, false},
		{"a file", []string{"files", "1", "a.txt"}, 0, []string{"a"}, false},
		{"files as JSON", []string{"files", "1", "--json"}, 0, []string{`"files"`, `"path": "a.txt"`, `"sha256"`}, true},
		{"no files", []string{"files", "3"}, 0, []string{"Task #3 has no files."}, false},
		{"a file that is not there", []string{"files", "1", "b.txt"}, 1, []string{`task #1 has no file "b.txt"`}, false},
		{"files of an unknown task", []string{"files", "99"}, 1, []string{"there is no task #99"}, false},
		{"files without a number", []string{"files"}, 2, []string{"files takes a task number"}, false},
		{"show without a number", []string{"show"}, 2, []string{"show takes one task number"}, false},
		{"show not a number", []string{"show", "one"}, 2, []string{`"one" is not a task number`}, false},
		{"create without a goal", []string{"create"}, 2, []string{"create needs a goal"}, false},
		{"create a blank goal", []string{"create", "  "}, 1, []string{"the goal is empty"}, false},
		{"create with a bad flag value", []string{"create", "x", "--max-iterations", "many"}, 2, []string{`invalid argument "many" for "--max-iterations"`}, false},
		{"an unknown flag", []string{"list", "--colour"}, 2, []string{"unknown flag: --colour", "taskloom tasks list --help"}, false},
		{"create with options", []string{"create", "--name", "Docs pass", "Proofread", "the docs", "--max-iterations", "5", "--json"}, 0,
			[]string{`"name": "Docs pass"`, `"goal": "Proofread the docs"`, `"max_iterations": 5`}, true},
		{"pause", []string{"pause", "1"}, 0, []string{`Task #1 "Build auth" is paused.`}, false},
		{"pause again", []string{"pause", "1"}, 1, []string{"pause task #1: transition not allowed in this state (paused)"}, false},
		{"resume", []string{"resume", "1"}, 0, []string{"is queued."}, false},
		{"cancel an ended task", []string{"cancel", "2"}, 1, []string{"task has ended (completed)"}, false},
		{"cancel", []string{"cancel", "3", "--json"}, 0, []string{`"status": "canceled"`}, true},
		{"events", []string{"events", "1"}, 0, []string{"created    by u1", "iterated   write_file a.txt ✓  0% → 40%", "paused     by api", "resumed    by api"}, false},
		{"events as JSON", []string{"events", "2", "--json"}, 0, []string{`"events"`, `"sequence": 1`}, true},
		{"follow an ended task as JSON lines", []string{"events", "2", "--follow", "--json"}, 0, []string{`"type":"created"`}, false},
		{"unknown command", []string{"frobnicate"}, 2, []string{`unknown command "frobnicate"`}, false},
		{"nothing", nil, 2, []string{"Usage: taskloom tasks"}, false},
		{"help", []string{"help"}, 0, []string{"Usage: taskloom tasks", "events N", "files N [PATH]", "TASKLOOM_API_TOKEN"}, false},
		{"--help", []string{"--help"}, 0, []string{"Usage: taskloom tasks", "events N"}, false},
		{"a command's help", []string{"help", "events"}, 0, []string{"Usage: taskloom tasks events N [flags]", "--follow", "--json"}, false},
		{"a command's --help", []string{"files", "--help"}, 0, []string{"Usage: taskloom tasks files N [PATH] [flags]", "--raw"}, false},
		{"a command's -h", []string{"show", "-h"}, 0, []string{"Usage: taskloom tasks show N"}, false},
		{"help for an unknown command", []string{"help", "frobnicate"}, 2, []string{`no help for "frobnicate"`}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, s.env, tc.args...)
			if code != tc.code {
				t.Fatalf("taskloom tasks %q = %d, want %d\nstdout: %s\nstderr: %s", tc.args, code, tc.code, out, errOut)
			}
			text := out
			if code != 0 {
				text = errOut
			}
			for _, want := range tc.out {
				if !strings.Contains(text, want) {
					t.Errorf("output lacks %q:\n%s", want, text)
				}
			}
			if tc.json && !json.Valid([]byte(out)) {
				t.Errorf("--json output is not JSON:\n%s", out)
			}
			if strings.ContainsRune(out+errOut, '\x1b') {
				t.Errorf("output carries a terminal escape from a task's text:\n%q", out)
			}
		})
	}
}

func TestTokenAndReachability(t *testing.T) {
	s := newServer(t, testkit.NewScriptedModel(), "tok-123")
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	tests := []struct {
		name string
		env  map[string]string
		args []string
		code int
		msg  string
	}{
		{"no token", map[string]string{"TASKLOOM_URL": s.url}, []string{"list"}, 1, "this API needs a token"},
		{"wrong token", map[string]string{"TASKLOOM_URL": s.url, "TASKLOOM_API_TOKEN": "nope"}, []string{"list"}, 1, "the API token is wrong"},
		{"right token", map[string]string{"TASKLOOM_URL": s.url, "TASKLOOM_API_TOKEN": "tok-123"}, []string{"list"}, 0, ""},
		{"--url overrides", map[string]string{"TASKLOOM_URL": "http://127.0.0.1:1", "TASKLOOM_API_TOKEN": "tok-123"}, []string{"list", "--url", s.url}, 0, ""},
		{"nobody there", map[string]string{"TASKLOOM_URL": "http://127.0.0.1:1"}, []string{"list"}, 1, "cannot reach Taskloom at http://127.0.0.1:1"},
		{"the listen address when no URL", map[string]string{"TASKLOOM_HTTP_ADDR": ":1"}, []string{"list"}, 1, "cannot reach Taskloom at http://127.0.0.1:1"},
		{"not a URL", map[string]string{"TASKLOOM_URL": "ftp://example"}, []string{"list"}, 2, "is not an http:// or https:// URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, env(tc.env), tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.msg) {
				t.Fatalf("= %d, want %d with %q\nstdout: %s\nstderr: %s", code, tc.code, tc.msg, out, errOut)
			}
		})
	}
}
