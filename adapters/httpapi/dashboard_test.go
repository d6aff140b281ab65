package httpapi_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/taskloom/taskloom/adapters/httpapi"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
)

var (
	screenshotFile = flag.String("screenshot", "", "write the dashboard screenshot to this PNG file, e.g. ../../docs/dashboard.png")
	colorScheme    = flag.String("color-scheme", "light", "the color scheme the browser prefers: light or dark")
)

// chromium finds Debian's Chromium. The browser test fails without it
// rather than skipping: .ci/run installs it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("the dashboard test drives a real browser and found no Chromium on PATH: " +
		"install Debian's package (apt-get install chromium), as .ci/run does")
	return ""
}

// browser starts a headless Chromium with a fresh profile and any extra
// options.
func browser(t *testing.T, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("mute-audio", true),
		chromedp.WindowSize(1440, 900),
	}
	opts = append(opts, extra...)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	// A bound for the whole test, not a wait for time to pass; each run
	// has a shorter one (stepBound), so that a step that hangs leaves
	// time to report what the page shows.
	ctx, cancelTimeout := context.WithTimeout(ctx, 120*time.Second)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	// Start the browser on this context: the first Run starts it on the
	// context it is given, and run's are canceled after their steps.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// run runs browser steps, failing the test with what they were for.
func run(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, stepBound)
	defer cancel()
	if err := chromedp.Do(sctx, steps...); err != nil {
		t.Fatalf("%s: %v\nthe page then: %s", what, err, pageState(ctx))
	}
}

// stepBound bounds one run of browser steps.
const stepBound = 45 * time.Second

// pageState says what the dashboard shows — the stream's state, the
// queue's rows, the selected task's status and decision box — for a
// failure's message.
func pageState(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify({
		conn: document.querySelector('#conn')?.dataset.state,
		queue: [...document.querySelectorAll('#queue li')].map((li) => li.dataset.task + ": " + li.innerText.replace(/\s+/g, " ")),
		status: document.querySelector('#d-status')?.textContent,
		decide: document.querySelector('#d-decide')?.hidden ? "hidden" : document.querySelector('#d-decide')?.innerText,
	})`))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return v
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// poll waits (up to the bound) for a JavaScript expression to be true.
func poll(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(20*time.Second))
}

// media makes the page see these CSS media features.
func media(features map[string]string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		p := emulation.SetEmulatedMediaParams{}
		for k, v := range features {
			p.Features = append(p.Features, &emulation.MediaFeature{Name: k, Value: v})
		}
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, p)
		return err
	})
}

// TestDashboardInABrowser opens the dashboard in Chromium with a token
// configured: the page asks for it once, a task created through the API
// appears without a reload, its bar moves as iterations commit, and Pause
// pauses it.
func TestDashboardInABrowser(t *testing.T) {
	const token = "dashboard-secret"
	start := time.Now().UTC().Add(-20 * time.Minute).Truncate(time.Second)
	f := newFixtureAt(t, teststore.SQLite, start, func(o *httpapi.APIOptions) { o.Token = token })
	ts := httptest.NewServer(f.srv)
	t.Cleanup(ts.Close)
	auth := []string{"Authorization", "Bearer " + token}
	ctx := browser(t)

	run(t, ctx, "open the dashboard and give it the token",
		chromedp.EmulateViewport(1440, 900),
		// No transitions: what the page shows is what it has.
		media(map[string]string{"prefers-reduced-motion": "reduce", "prefers-color-scheme": *colorScheme}),
		chromedp.Navigate(ts.URL),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS("#token-form button")),
		chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)),
		chromedp.WaitNotPresent(chromedp.CSS("#token-dialog[open]")),
		// Marks this page load: a reload would lose it.
		chromedp.Evaluate[chromedp.Void](`window.sameLoad = true`),
	)

	r := f.do("POST", "/api/tasks", body(`{"goal": "Build the login page with email and password"}`), auth...)
	if r.code != 201 {
		t.Fatalf("create = %d %s", r.code, r.raw)
	}
	bar := `document.querySelector('#queue li[data-task="1"] .bar > span').style.width`
	run(t, ctx, "the new task's row appears", chromedp.WaitVisible(chromedp.CSS(`#queue li[data-task="1"]`)))
	if width := eval[string](t, ctx, bar); width != "0%" {
		t.Fatalf("bar width of a new task = %q", width)
	}

	f.model.Decide("write_file", map[string]string{"path": "login.html", "content": "<form>…</form>"}, 40, "continue")
	f.step()
	run(t, ctx, "the bar moves to 40% without a reload", poll(bar+` === "40%"`))
	// No worker holds it between iterations: it waits its turn, and the
	// row says so rather than "Running" (a person wants to see which task
	// a worker is on).
	run(t, ctx, "the row says it waits its turn",
		poll(`document.querySelector('#queue li[data-task="1"] .chip').textContent === "Queued (in rotation)"`),
		poll(`document.querySelector('#counts').textContent === "1queued0running"`))
	if !eval[bool](t, ctx, `window.sameLoad === true`) {
		t.Fatal("the page was reloaded")
	}

	run(t, ctx, "press Pause",
		chromedp.Click(chromedp.CSS(`#queue li[data-task="1"] button[data-action="pause"]`)),
		poll(`document.querySelector('#queue li[data-task="1"] .chip').textContent === "Paused"`),
	)
	if task, err := f.store.GetTask(f.ctx, 1); err != nil || task.Status != domain.StatusPaused {
		t.Fatalf("after Pause the task is %v (%v)", task.Status, err)
	}
	if !eval[bool](t, ctx, `!!document.querySelector('#queue li[data-task="1"] button[data-action="resume"]')`) {
		t.Fatal("no Resume button on the paused task")
	}

	screenshot(t, ctx, f, auth)
}

// TestWebPagesCannotDriveTheAPI lets Chromium do what a hostile web page
// can do to a token-less API on 127.0.0.1: post a task from another site
// the way a form does (a no-cors fetch with a text/plain body), and load
// itself from a name that resolves to the API's address (DNS rebinding:
// the browser's resolver maps evil.example to 127.0.0.1), after which the
// API is its own origin. The API answers 403 and 421 and creates nothing.
func TestWebPagesCannotDriveTheAPI(t *testing.T) {
	f := newFixture(t, teststore.SQLite) // no token: the API trusts the machine
	var (
		mu       sync.Mutex
		answered []string // "METHOD /path status", in order
	)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.srv.ServeHTTP(statusWriter{w, func(code int) {
			mu.Lock()
			defer mu.Unlock()
			answered = append(answered, fmt.Sprintf("%s %s %d", r.Method, r.URL.Path, code))
		}}, r)
	}))
	t.Cleanup(ts.Close)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "<!doctype html><title>cute cats</title>")
	}))
	t.Cleanup(evil.Close)
	port := func(s *httptest.Server) string { _, p, _ := net.SplitHostPort(s.Listener.Addr().String()); return p }
	ctx := browser(t, chromedp.Flag("host-resolver-rules", "MAP evil.example 127.0.0.1"))

	// Cross-site request forgery from http://evil.example:<other port>.
	run(t, ctx, "open the other site", chromedp.Navigate("http://evil.example:"+port(evil)+"/"))
	sent, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch("`+ts.URL+`/api/tasks", {method: "POST", mode: "no-cors",
		headers: {"Content-Type": "text/plain"}, body: JSON.stringify({goal: "planted by a web page"})}).then(() => "sent", (e) => "failed: " + e)`,
		chromedp.EvalAwaitPromise))
	if err != nil || sent != "sent" {
		t.Fatalf("the page's POST: %q, %v", sent, err)
	}
	if n := f.count(); n != 0 {
		t.Fatalf("the other site's POST created %d tasks", n)
	}

	// DNS rebinding: the page is now on the API's address under its own name.
	rebound := "http://evil.example:" + port(ts)
	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(rebound+"/"))
	if err != nil || resp.Status != http.StatusMisdirectedRequest {
		t.Fatalf("the dashboard under a rebound name: %v, %v", resp, err)
	}
	statuses, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](`Promise.all([
		fetch("/api/tasks").then((r) => r.status),
		fetch("/api/tasks", {method: "POST", headers: {"Content-Type": "application/json"},
			body: JSON.stringify({goal: "planted by a rebound page"})}).then((r) => r.status),
	])`, chromedp.EvalAwaitPromise))
	if err != nil || len(statuses) != 2 || statuses[0] != 421 || statuses[1] != 421 {
		t.Fatalf("the rebound page's read and POST: %v, %v", statuses, err)
	}

	if n := f.count(); n != 0 {
		t.Fatalf("the rebound page's POST created %d tasks", n)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{"POST /api/tasks 403", "GET / 421", "GET /api/tasks 421", "POST /api/tasks 421"} {
		if !slices.Contains(answered, want) {
			t.Errorf("the API never answered %q; it answered %v", want, answered)
		}
	}
}

// statusWriter tells onHeader the status of the answer before it is sent.
type statusWriter struct {
	http.ResponseWriter
	onHeader func(code int)
}

func (w statusWriter) WriteHeader(code int) {
	w.onHeader(code)
	w.ResponseWriter.WriteHeader(code)
}

func (w statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// decision is one scripted answer of the model for the screenshot.
type decision struct {
	action   string
	params   map[string]string
	progress int
	status   string
	summary  string
}

// screenshot fills the queue with tasks in every state, selects the one
// with the richest timeline and captures the page: into -screenshot when
// given (docs/dashboard.png), else into the test's temporary directory.
func screenshot(t *testing.T, ctx context.Context, f *fixture, auth []string) {
	t.Helper()
	plans := map[int64][]decision{
		2: { // Summarise the open issues: completes
			{"list_files", nil, 20, "continue", ""},
			{"write_file", map[string]string{"path": "issues.md", "content": "# Open issues\n"}, 65, "continue", ""},
			{"", nil, 100, "done", "Grouped the 14 open issues into four themes (auth, flaky CI, docs, performance) and wrote issues.md with a suggested order."},
		},
		3: { // Migrate CI: running, rich timeline
			{"list_files", nil, 10, "continue", ""},
			{"read_file", map[string]string{"path": ".ci/pipeline.yml"}, 10, "continue", ""},
			{"write_file", map[string]string{"path": "ci/workflow.yml", "content": "on: [push]\njobs: {}\n"}, 30, "continue", ""},
			{"write_file", map[string]string{"path": "ci/cache.yml", "content": "paths: [~/.cache/go-build]\n"}, 50, "continue", ""},
			{"write_file", map[string]string{"path": "ci/matrix.yml", "content": "go: ['1.25', '1.26']\n"}, 65, "continue", ""},
		},
		4: { // Fix the flaky test: one iteration
			{"list_files", nil, 20, "continue", ""},
		},
		6: { // Benchmark: stalls
			{"list_files", nil, 10, "continue", ""},
			{"read_file", map[string]string{"path": "bench.txt"}, 10, "continue", ""},
			{"read_file", map[string]string{"path": "bench/results.txt"}, 10, "continue", ""},
			{"read_file", map[string]string{"path": "bench/old.txt"}, 10, "continue", ""},
		},
	}
	f.model.Default(func(_ context.Context, req plugin.ModelRequest) (plugin.ModelResponse, error) {
		plan := plans[req.Task.Number]
		i := req.Task.Iteration - 1
		if i >= len(plan) {
			return plugin.ModelResponse{}, fmt.Errorf("no plan for #%d iteration %d", req.Task.Number, req.Task.Iteration)
		}
		d := plan[i]
		params := map[string]any{}
		for k, v := range d.params {
			params[k] = v
		}
		raw, _ := json.Marshal(map[string]any{"thought": "next step", "action": d.action, "params": params,
			"progress": d.progress, "status": d.status, "summary": d.summary})
		return plugin.ModelResponse{Text: string(raw), Usage: plugin.Usage{PromptTokens: 1900 + int64(120*i), CompletionTokens: 140}}, nil
	})
	for _, nt := range []struct{ name, goal, room string }{
		{"Summarise this week's open issues", "Summarise this week's open issues and group them by theme, with a suggested order.", "discord:1042"},
		{"Migrate CI to the new runner", "Migrate the CI pipeline to the new runner, with build caching and a Go version matrix.", "discord:1042"},
		{"Fix the flaky database test", "Find out why TestConnectionPool fails one run in twenty, and fix it.", ""},
		{"Draft release notes for v1.4", "Draft the release notes for v1.4 from the merged pull requests.", "discord:1042"},
		{"Benchmark the SQLite store", "Benchmark the SQLite store under load and report iterations per second.", ""},
	} {
		raw, _ := json.Marshal(map[string]string{"name": nt.name, "goal": nt.goal, "room": nt.room})
		if r := f.do("POST", "/api/tasks", body(strings.Replace(string(raw), `,"room":""`, "", 1)), auth...); r.code != 201 {
			t.Fatalf("create = %d %s", r.code, r.raw)
		}
	}
	control := func(op string, n int) {
		t.Helper()
		if r := f.do("POST", fmt.Sprintf("/api/tasks/%d/%s", n, op), nil, auth...); r.code != 200 {
			t.Fatalf("%s #%d = %d %s", op, n, r.code, r.raw)
		}
	}
	step := func() {
		t.Helper()
		f.clk.Advance(37 * time.Second)
		if _, err := f.tasks.Step(f.ctx, "worker-1"); err != nil {
			t.Fatal(err)
		}
		f.clk.Advance(4 * time.Second)
	}
	control("pause", 4)
	control("pause", 5)
	for range 3 * 3 { // three rounds over #2, #3, #6: #2 completes
		step()
	}
	step() // #3's fourth
	step() // #6's fourth: no progress three times, stalled
	control("resume", 4)
	step() // #4, never served, goes first
	step() // then #3
	control("resume", 5)

	want := map[int64]domain.Status{1: domain.StatusPaused, 2: domain.StatusCompleted, 3: domain.StatusRunning,
		4: domain.StatusRunning, 5: domain.StatusQueued, 6: domain.StatusStalemate}
	for n, st := range want {
		if task, err := f.store.GetTask(f.ctx, n); err != nil || task.Status != st {
			t.Fatalf("screenshot scene: #%d is %s (%v), want %s", n, task.Status, err, st)
		}
	}

	run(t, ctx, "select #3",
		poll(`document.querySelectorAll('#queue li.task').length === 4 && document.querySelectorAll('#ended li.task').length === 2`),
		chromedp.Click(chromedp.CSS(`#queue li[data-task="3"] .name`)),
		poll(`document.querySelectorAll('#d-timeline li[data-type="iterated"]').length === 5`),
		poll(`document.querySelector('#queue li[data-task="5"] .badge').hidden === false`),
		// The chart as it stands now, not as it was read at load.
		chromedp.Evaluate[chromedp.Void](`loadStats()`),
		poll(`document.querySelector('#chart-legend').textContent.startsWith("queue 4 ")`),
		chromedp.Evaluate[chromedp.Void](`document.activeElement && document.activeElement.blur()`),
	)
	// An ended row has no controls: its metadata takes their room and
	// wraps rather than being cut off ("ended 15m a…"): what ended when is
	// what a person reads an ended row for.
	clipped := `[...document.querySelectorAll('#ended li.task .sub')].filter((e) => e.scrollWidth > e.clientWidth + 1).map((e) => e.textContent).join(" | ")`
	if cut := eval[string](t, ctx, clipped); cut != "" {
		t.Errorf("ended rows cut their metadata off: %s", cut)
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	out := *screenshotFile
	if out == "" {
		out = filepath.Join(t.TempDir(), "dashboard.png")
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("dashboard screenshot: %s", out)
}

// TestDashboardDecides: in Chromium, a person answers a task's question
// through the answer box, approves the exact call a task waits to make,
// denies another — which came to wait while the page was open — with a
// reason, and retries an ended task with more context: each a same-origin
// JSON POST the guard lets through, each seen in the store.
func TestDashboardDecides(t *testing.T) {
	f := newFixtureAt(t, teststore.SQLite, time.Now().UTC().Add(-time.Minute).Truncate(time.Second))
	f.model.
		Decide("ask_user", map[string]string{"question": "Which database should the service use?"}, 10, "continue").
		Decide("http_get", map[string]string{"url": "https://example.com/status"}, 20, "continue").
		Decide("http_get", map[string]string{"url": "https://example.com/admin"}, 20, "continue")
	for _, goal := range []string{"Pick a database", "Check the status page"} {
		f.create(goal)
		f.step() // the new task, the only one the queue may serve: it waits
	}
	f.create("Write the release notes")
	if _, err := f.tasks.Cancel(f.ctx, 3, "u1"); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(f.srv)
	t.Cleanup(ts.Close)
	ctx := browser(t)
	row := func(n int) string { return fmt.Sprintf(`#queue li[data-task="%d"] .name`, n) }
	chip := `document.querySelector('#d-status').textContent`

	run(t, ctx, "open the dashboard and select the task that asks",
		chromedp.EmulateViewport(1440, 900), // the size of docs/dashboard-approval.png
		media(map[string]string{"prefers-reduced-motion": "reduce"}),
		chromedp.Navigate(ts.URL),
		chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)),
		chromedp.Click(chromedp.CSS(row(1))),
		poll(chip+` === "Needs an answer"`),
		chromedp.WaitVisible(chromedp.CSS("#d-answer-text")),
		poll(`document.querySelector('#d-question').textContent === "Which database should the service use?"`),
	)
	run(t, ctx, "answer it through the box",
		chromedp.SendKeys(chromedp.CSS("#d-answer-text"), "PostgreSQL, please"),
		chromedp.Click(chromedp.CSS(`#d-answer button[data-action="answer"]`)),
		poll(chip+` === "Queued"`),
		chromedp.WaitNotPresent(chromedp.CSS("#d-answer-text")),
	)
	if task := f.task(1); task.Status != domain.StatusQueued || task.WaitingOn != domain.WaitNone {
		t.Fatalf("after the answer #1 is %s on %q", task.Status, task.WaitingOn)
	}
	if ev := f.lastEvent(1); ev.Type != domain.EventAnswered || !strings.Contains(string(ev.Payload), `"answer":"PostgreSQL, please"`) {
		t.Fatalf("after the answer #1's last event is %s: %s", ev.Type, ev.Payload)
	}

	run(t, ctx, "select the task that waits on an approval",
		chromedp.Click(chromedp.CSS(row(2))),
		poll(chip+` === "Needs approval"`),
		chromedp.WaitVisible(chromedp.CSS(`#d-decide button[data-action="approve"]`)),
	)
	if call := eval[string](t, ctx, `document.querySelector('#d-call').textContent`); !strings.HasPrefix(call, "http_get\n") ||
		!strings.Contains(call, `"url": "https://example.com/status"`) {
		t.Fatalf("the call shown = %q; want http_get with its exact params", call)
	}
	shoot(t, ctx, "dashboard-approval.png")
	run(t, ctx, "approve it",
		chromedp.Click(chromedp.CSS(`#d-decide button[data-action="approve"]`)),
		poll(`document.querySelector('#d-decide').dataset.mode === "granted"`),
		poll(chip+` === "Queued"`),
	)
	if task := f.task(2); task.Status != domain.StatusQueued || !task.ApprovalGranted || task.ApprovalAction != "http_get" {
		t.Fatalf("after Approve #2 is %s, granted %v, action %q", task.Status, task.ApprovalGranted, task.ApprovalAction)
	}

	// #4 asks while the page is open: its call comes by the event stream.
	// Its row first shows at the top of the queue (a new task is served
	// first) and moves below the queued ones when the stream brings its
	// question, which may come in a later batch: the click waits for that,
	// or it may land where the row was, on another task.
	f.create("Check the admin page")
	f.step()
	run(t, ctx, "deny the other, with a reason",
		poll(`document.querySelector('#queue li[data-task="4"]')?.innerText.includes("Needs approval")`),
		chromedp.Click(chromedp.CSS(row(4))),
		poll(`document.querySelector('#d-name').textContent === "Check the admin page"`),
		chromedp.WaitVisible(chromedp.CSS("#d-deny-reason")),
		poll(`document.querySelector('#d-call').textContent.includes('"url": "https://example.com/admin"')`),
		// The reason and the press in one turn of the page's loop: the
		// event stream may redraw the panel between two commands of the
		// browser, which then act on a node that is gone.
		poll(`(() => {
			const reason = document.querySelector('#d-deny-reason');
			const deny = document.querySelector('#d-decide button[data-action="deny"]');
			if (!reason || !deny || reason.offsetParent === null || deny.disabled) return false;
			reason.value = "not the admin pages";
			reason.dispatchEvent(new Event("input", { bubbles: true }));
			deny.click();
			return true;
		})()`),
		poll(chip+` === "Queued"`),
		poll(`document.querySelector('#d-decide').hidden`),
	)
	if ev := f.lastEvent(4); ev.Type != domain.EventDenied || !strings.Contains(string(ev.Payload), "not the admin pages") {
		t.Fatalf("after Deny #4's last event is %s: %s", ev.Type, ev.Payload)
	}

	run(t, ctx, "retry the ended task with more context",
		chromedp.Click(chromedp.CSS(`#ended li[data-task="3"] .name`)),
		chromedp.WaitVisible(chromedp.CSS("#d-retry-context")),
		chromedp.SendKeys(chromedp.CSS("#d-retry-context"), "start from the changelog"),
		chromedp.Click(chromedp.CSS(`#d-retry button[data-action="retry"]`)),
		poll(`document.querySelector('#d-num').textContent === "#5"`),
		chromedp.WaitVisible(chromedp.CSS(`#queue li[data-task="5"]`)),
	)
	if task := f.task(5); task.ContinuesNumber != 3 || task.Goal != "Write the release notes" || task.Status != domain.StatusQueued {
		t.Fatalf("the retry is %+v", task)
	}
	if ev := f.lastEvent(5); ev.Type != domain.EventCreated || !strings.Contains(string(ev.Payload), "start from the changelog") {
		t.Fatalf("the retry's created event: %s", ev.Payload)
	}
}

// TestDashboardShowsFiles: the selected task's files are listed, and a
// click shows one as text — what a task wrote is never markup.
func TestDashboardShowsFiles(t *testing.T) {
	f := newFixtureAt(t, teststore.SQLite, time.Now().UTC().Add(-time.Minute).Truncate(time.Second))
	f.model.Decide("write_file", map[string]string{"path": "notes/plan.md", "content": "<b>bold</b> plan"}, 30, "continue")
	f.create("Write the plan")
	f.step()
	ts := httptest.NewServer(f.srv)
	t.Cleanup(ts.Close)
	ctx := browser(t)
	run(t, ctx, "select the task and open its file",
		chromedp.Navigate(ts.URL),
		chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)),
		chromedp.Click(chromedp.CSS(`#queue li[data-task="1"] .name`)),
		poll(`[...document.querySelectorAll('#d-files .file')].map((b) => b.textContent).join() === "notes/plan.md"`),
		chromedp.Click(chromedp.CSS(`#d-files .file`)),
		poll(`!document.querySelector('#d-preview').hidden`),
	)
	if text := eval[string](t, ctx, `document.querySelector('#d-preview').textContent`); !strings.Contains(text, "<b>bold</b> plan") {
		t.Fatalf("the preview = %q; want the file's text", text)
	}
	if n := eval[float64](t, ctx, `document.querySelectorAll('#d-preview b').length`); n != 0 {
		t.Fatal("the file's text was rendered as markup")
	}
}
