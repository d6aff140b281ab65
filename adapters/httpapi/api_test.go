package httpapi_test

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/taskloom/taskloom/adapters/httpapi"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

func body(s string) io.Reader { return strings.NewReader(s) }

// TestEndpoints walks every endpoint through its success and failure
// codes, in order: each case sees what the ones before it did.
//
// Tasks at the start: #1 "Build auth" queued with one step, #2 paused,
// #3 completed.
func TestEndpoints(t *testing.T) {
	f := newFixture(t, teststore.SQLite)
	f.model.Decide("write_file", map[string]string{"path": "auth.md", "content": "plan"}, 30, "continue")
	f.model.Decide("", nil, 100, "done")
	f.create("Build auth for the admin pages")
	f.step() // #1: one iteration, 30%
	f.create("Fix the flaky test")
	if _, err := f.tasks.Pause(f.ctx, 2, "u1"); err != nil {
		t.Fatal(err)
	}
	f.create("Write the changelog")
	f.step() // #2 is paused, #1 was served: #3 runs and is done

	long := strings.Repeat("é", 4000)
	tests := []struct {
		name   string
		method string
		path   string
		body   io.Reader
		header []string
		code   int
		check  func(t *testing.T, r response)
	}{
		{name: "list all", method: "GET", path: "/api/tasks", code: 200, check: func(t *testing.T, r response) {
			if got := numbers(r.tasks()); !slices.Equal(got, []int{1, 2, 3}) || r.body["total"] != 3.0 || r.body["next"] != nil {
				t.Errorf("tasks %v total %v next %v", got, r.body["total"], r.body["next"])
			}
		}},
		{name: "list by status", method: "GET", path: "/api/tasks?status=paused,completed", code: 200, check: func(t *testing.T, r response) {
			if got := numbers(r.tasks()); !slices.Equal(got, []int{2, 3}) {
				t.Errorf("tasks %v", got)
			}
		}},
		{name: "list by query", method: "GET", path: "/api/tasks?q=FLAKY", code: 200, check: func(t *testing.T, r response) {
			if got := numbers(r.tasks()); !slices.Equal(got, []int{2}) {
				t.Errorf("tasks %v", got)
			}
		}},
		{name: "list in queue order", method: "GET", path: "/api/tasks?order=queue&status=queued,running", code: 200, check: func(t *testing.T, r response) {
			if got := numbers(r.tasks()); !slices.Equal(got, []int{1}) {
				t.Errorf("tasks %v", got)
			}
		}},
		{name: "list recent first", method: "GET", path: "/api/tasks?order=recent&limit=2", code: 200, check: func(t *testing.T, r response) {
			if got := numbers(r.tasks()); !slices.Equal(got, []int{3, 2}) || r.body["next"] != 2.0 {
				t.Errorf("tasks %v next %v", got, r.body["next"])
			}
		}},
		{name: "list unknown status", method: "GET", path: "/api/tasks?status=running,sleeping", code: 400},
		{name: "list bad limit", method: "GET", path: "/api/tasks?limit=0", code: 400},
		{name: "list limit too big", method: "GET", path: "/api/tasks?limit=501", code: 400},
		{name: "list bad cursor", method: "GET", path: "/api/tasks?after=x", code: 400},
		{name: "list queue order has no cursor", method: "GET", path: "/api/tasks?order=queue&after=1", code: 400},
		{name: "list unknown order", method: "GET", path: "/api/tasks?order=sideways", code: 400},
		{name: "list query too long", method: "GET", path: "/api/tasks?q=" + strings.Repeat("a", 201), code: 400},

		{name: "get one with steps", method: "GET", path: "/api/tasks/1", code: 200, check: func(t *testing.T, r response) {
			b := r.body
			steps := b["steps"].([]any)
			if b["number"] != 1.0 || b["status"] != "running" || b["progress"] != 30.0 || b["iteration"] != 1.0 || len(steps) != 1 {
				t.Fatalf("task = %v", b)
			}
			for _, col := range []string{"name", "goal", "previous_progress", "stale_counter", "max_iterations", "max_stale_iterations",
				"requestor_id", "platform", "room_id", "workspace_id", "last_processed_at", "created_at", "started_at", "completed_at",
				"summary", "error", "prompt_tokens", "completion_tokens", "lease_owner", "lease_expires_at", "fence",
				"waiting_on", "next_attempt_at", "max_tokens", "continues_number", "approval"} {
				if _, ok := b[col]; !ok {
					t.Errorf("task has no %q", col)
				}
			}
			if b["completed_at"] != nil || b["lease_owner"] != "" {
				t.Errorf("unset columns: completed_at %v lease_owner %v", b["completed_at"], b["lease_owner"])
			}
			if b["waiting_on"] != "" || b["next_attempt_at"] != nil || b["continues_number"] != nil || b["approval"] != nil || b["max_tokens"] != float64(defaultBudget) {
				t.Errorf("wave-2 columns: waiting_on %v next_attempt_at %v continues_number %v approval %v max_tokens %v",
					b["waiting_on"], b["next_attempt_at"], b["continues_number"], b["approval"], b["max_tokens"])
			}
			s := steps[0].(map[string]any)
			if s["iteration"] != 1.0 || s["action"] != "write_file" || s["success"] != true || s["params"].(map[string]any)["path"] != "auth.md" || s["time"] == nil || s["result"] == "" {
				t.Errorf("step = %v", s)
			}
		}},
		{name: "get one: a task with no steps has an empty list", method: "GET", path: "/api/tasks/2", code: 200, check: func(t *testing.T, r response) {
			if s, ok := r.body["steps"].([]any); !ok || len(s) != 0 {
				t.Errorf("steps = %#v", r.body["steps"])
			}
		}},
		{name: "get unknown", method: "GET", path: "/api/tasks/99", code: 404, check: wantError("there is no task #99")},
		{name: "get not a number", method: "GET", path: "/api/tasks/abc", code: 400},
		{name: "get zero", method: "GET", path: "/api/tasks/0", code: 400},

		{name: "events", method: "GET", path: "/api/tasks/1/events", code: 200, check: func(t *testing.T, r response) {
			evs := r.body["events"].([]any)
			var types []string
			for i, e := range evs {
				m := e.(map[string]any)
				if m["sequence"] != float64(i+1) || m["time"] == nil || m["payload"] == nil {
					t.Errorf("event %d = %v", i, m)
				}
				types = append(types, m["type"].(string))
			}
			if !slices.Equal(types, []string{"created", "claimed", "iterated"}) {
				t.Errorf("types = %v", types)
			}
		}},
		{name: "events after a sequence", method: "GET", path: "/api/tasks/1/events?after=2", code: 200, check: func(t *testing.T, r response) {
			if evs := r.body["events"].([]any); len(evs) != 1 {
				t.Errorf("events = %v", evs)
			}
		}},
		{name: "events of unknown task", method: "GET", path: "/api/tasks/99/events", code: 404},
		{name: "events bad after", method: "GET", path: "/api/tasks/1/events?after=-1", code: 400},

		{name: "create", method: "POST", path: "/api/tasks", body: body(`{"goal": "Summarise the open issues", "max_iterations": 7}`), code: 201, check: func(t *testing.T, r response) {
			b := r.body
			if b["number"] != 4.0 || b["status"] != "queued" || b["name"] != "Summarise the open issues" || b["max_iterations"] != 7.0 ||
				b["requestor_id"] != "api" || b["workspace_id"] != "local" || b["room_id"] != "" || b["platform"] != "api" {
				t.Errorf("task = %v", b)
			}
			if r.header.Get("Location") != "/api/tasks/4" {
				t.Errorf("Location = %q", r.header.Get("Location"))
			}
		}},
		{name: "create in a room (a requestor header without a token is ignored)", method: "POST", path: "/api/tasks",
			body:   body(`{"goal": "Watch the deploy", "name": "Deploy watch", "room": "discord:123", "max_stale_iterations": 5}`),
			header: []string{httpapi.RequestorHeader, "ops-bot"}, code: 201, check: func(t *testing.T, r response) {
				b := r.body
				if b["room_id"] != "discord:123" || b["platform"] != "discord" || b["requestor_id"] != "api" || b["name"] != "Deploy watch" || b["max_stale_iterations"] != 5.0 {
					t.Errorf("task = %v", b)
				}
			}},
		{name: "create with a goal of 4000 characters", method: "POST", path: "/api/tasks", body: body(`{"goal": "` + long + `"}`), code: 201},
		{name: "create with a goal of 4001 characters", method: "POST", path: "/api/tasks", body: body(`{"goal": "` + long + `x"}`), code: 400, check: wantError("4001 characters")},
		{name: "create with a blank goal", method: "POST", path: "/api/tasks", body: body(`{"goal": " \n\t "}`), code: 400, check: wantError("goal is empty")},
		// Fillers, zero-width and Braille blanks read as nothing in the
		// queue: a task no one can tell from another.
		{name: "create with an invisible goal", method: "POST", path: "/api/tasks", body: body(`{"goal": "\u3164\u200b\u2800\ufe0f"}`), code: 400, check: wantError("the goal shows nothing")},
		{name: "create without a goal", method: "POST", path: "/api/tasks", body: body(`{"name": "x"}`), code: 400},
		{name: "create with an empty body", method: "POST", path: "/api/tasks", body: body(``), code: 400},
		{name: "create with broken JSON", method: "POST", path: "/api/tasks", body: body(`{"goal": "x"`), code: 400},
		{name: "create with an unknown field", method: "POST", path: "/api/tasks", body: body(`{"goal": "x", "priority": 1}`), code: 400, check: wantError(`unknown field "priority"`)},
		{name: "create with a goal that is a number", method: "POST", path: "/api/tasks", body: body(`{"goal": 42}`), code: 400},
		{name: "create with trailing data", method: "POST", path: "/api/tasks", body: body(`{"goal": "x"} {"goal": "y"}`), code: 400},
		{name: "create with zero iterations", method: "POST", path: "/api/tasks", body: body(`{"goal": "x", "max_iterations": 0}`), code: 400},
		{name: "create with a name too long", method: "POST", path: "/api/tasks", body: body(`{"goal": "x", "name": "` + strings.Repeat("n", 81) + `"}`), code: 400},
		{name: "create in a malformed room", method: "POST", path: "/api/tasks", body: body(`{"goal": "x", "room": "discord::1"}`), code: 400},
		{name: "create in a room no platform serves", method: "POST", path: "/api/tasks", body: body(`{"goal": "x", "room": "slack:C42"}`), code: 400, check: wantError(`no "slack" platform`)},
		{name: "create with a body over 64 KiB", method: "POST", path: "/api/tasks",
			body: body(`{"goal": "x", "name": "` + strings.Repeat("n", 64<<10) + `"}`), code: 413},
		{name: "create with a chunked body over 64 KiB", method: "POST", path: "/api/tasks",
			body: iotest.OneByteReader(body(`{"goal": "` + strings.Repeat("g", 64<<10) + `"}`)), code: 413},

		{name: "pause a queued task", method: "POST", path: "/api/tasks/4/pause", code: 200, check: func(t *testing.T, r response) {
			if r.body["status"] != "paused" {
				t.Errorf("task = %v", r.body)
			}
		}},
		{name: "pause it again", method: "POST", path: "/api/tasks/4/pause", code: 409},
		{name: "resume it", method: "POST", path: "/api/tasks/4/resume", code: 200, check: func(t *testing.T, r response) {
			if r.body["status"] != "queued" {
				t.Errorf("task = %v", r.body)
			}
		}},
		{name: "resume a task that is not paused", method: "POST", path: "/api/tasks/4/resume", code: 409},
		{name: "pause a running task", method: "POST", path: "/api/tasks/1/pause", code: 200},
		{name: "cancel a paused task", method: "POST", path: "/api/tasks/2/cancel", header: []string{httpapi.RequestorHeader, "alice"}, code: 200, check: func(t *testing.T, r response) {
			if r.body["status"] != "canceled" || r.body["completed_at"] == nil {
				t.Errorf("task = %v", r.body)
			}
		}},
		{name: "cancel a completed task", method: "POST", path: "/api/tasks/3/cancel", code: 409, check: wantError("task has ended")},
		{name: "pause a canceled task", method: "POST", path: "/api/tasks/2/pause", code: 409},
		{name: "pause an unknown task", method: "POST", path: "/api/tasks/99/pause", code: 404, check: wantError("there is no task #99")},
		{name: "cancel not a number", method: "POST", path: "/api/tasks/x/cancel", code: 400},
		{name: "control with a body over 64 KiB", method: "POST", path: "/api/tasks/4/pause", body: body(strings.Repeat(" ", 64<<10+1)), code: 413},

		{name: "unknown endpoint", method: "GET", path: "/api/nothing", code: 404, check: wantError("no such endpoint")},
		{name: "wrong method", method: "DELETE", path: "/api/tasks/1", code: 405, check: func(t *testing.T, r response) {
			if r.header.Get("Allow") != "GET" || r.body["error"] == nil {
				t.Errorf("Allow %q body %v", r.header.Get("Allow"), r.body)
			}
		}},
		{name: "wrong method on an action", method: "GET", path: "/api/tasks/1/pause", code: 405},
		{name: "dashboard", method: "GET", path: "/", code: 200, check: func(t *testing.T, r response) {
			if !strings.Contains(r.raw, "<title>Taskloom</title>") || !strings.Contains(r.header.Get("Content-Security-Policy"), "default-src 'none'") {
				t.Errorf("page %.80q CSP %q", r.raw, r.header.Get("Content-Security-Policy"))
			}
		}},
		{name: "dashboard script", method: "GET", path: "/dashboard/app.js", code: 200, check: func(t *testing.T, r response) {
			if !strings.Contains(r.header.Get("Content-Type"), "javascript") {
				t.Errorf("Content-Type %q", r.header.Get("Content-Type"))
			}
		}},
		{name: "dashboard asset missing", method: "GET", path: "/dashboard/nope.js", code: 404},
		{name: "no other page", method: "GET", path: "/admin", code: 404},
		{name: "metrics", method: "GET", path: "/metrics", code: 200},
	}
	for _, tc := range tests {
		r := f.do(tc.method, tc.path, tc.body, tc.header...)
		if r.code != tc.code {
			t.Errorf("%s: %s %s = %d, want %d: %s", tc.name, tc.method, tc.path, r.code, tc.code, r.raw)
			continue
		}
		if tc.code >= 400 && strings.HasPrefix(tc.path, "/api/") {
			if msg, _ := r.body["error"].(string); msg == "" {
				t.Errorf("%s: error body = %q, want {\"error\": \"...\"}", tc.name, r.raw)
			}
		}
		if tc.check != nil {
			t.Run(tc.name, func(t *testing.T) { tc.check(t, r) })
		}
	}
}

func wantError(part string) func(t *testing.T, r response) {
	return func(t *testing.T, r response) {
		t.Helper()
		if msg, _ := r.body["error"].(string); !strings.Contains(msg, part) {
			t.Errorf("error = %q, want it to say %q", msg, part)
		}
	}
}

// TestCreateAndListOnBothStores runs the create and paged list path on
// SQLite and PostgreSQL.
func TestCreateAndListOnBothStores(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		for i := 1; i <= 5; i++ {
			r := f.do("POST", "/api/tasks", body(fmt.Sprintf(`{"goal": "task number %d"}`, i)))
			if r.code != 201 || r.body["number"] != float64(i) {
				t.Fatalf("create %d = %d %s", i, r.code, r.raw)
			}
		}
		var pages [][]int
		for after := ""; ; {
			r := f.do("GET", "/api/tasks?limit=2"+after, nil)
			if r.code != 200 || r.body["total"] != 5.0 {
				t.Fatalf("list = %d %s", r.code, r.raw)
			}
			pages = append(pages, numbers(r.tasks()))
			next, ok := r.body["next"].(float64)
			if !ok {
				break
			}
			after = fmt.Sprintf("&after=%d", int(next))
		}
		if fmt.Sprint(pages) != "[[1 2] [3 4] [5]]" {
			t.Errorf("pages = %v", pages)
		}
		r := f.do("GET", "/api/tasks?q=NUMBER%204", nil)
		if got := numbers(r.tasks()); !slices.Equal(got, []int{4}) {
			t.Errorf("q: %v", got)
		}
		if r := f.do("POST", "/api/tasks", body(`{"goal": ""}`)); r.code != 400 {
			t.Errorf("empty goal = %d", r.code)
		}
	})
}

// TestCreateWithStrategy: the API's strategy field chooses how a task is
// worked; an unknown one is a 400 that lists the strategies and creates
// nothing.
func TestCreateWithStrategy(t *testing.T) {
	f := newFixture(t, teststore.SQLite)
	r := f.do("POST", "/api/tasks", body(`{"goal": "Compare the queues", "strategy": "nonsense"}`))
	if r.code != 400 || !strings.Contains(r.raw, `there is no strategy \"nonsense\"; the strategies are loop`) {
		t.Fatalf("unknown strategy = %d %s", r.code, r.raw)
	}
	if tasks, err := f.store.ListTasks(f.ctx, domain.TaskFilter{}); err != nil || len(tasks) != 0 {
		t.Fatalf("after the refusal the store holds %d tasks (%v)", len(tasks), err)
	}
	r = f.do("POST", "/api/tasks", body(`{"goal": "Compare the queues", "strategy": "loop"}`))
	if r.code != 201 || r.body["strategy"] != "loop" || r.body["phase"] != "" || r.body["ledger"] != nil {
		t.Fatalf("create with strategy loop = %d %s", r.code, r.raw)
	}
	if r := f.do("POST", "/api/tasks", body(`{"goal": "No strategy"}`)); r.code != 201 || r.body["strategy"] != "loop" {
		t.Fatalf("create without a strategy = %d %s", r.code, r.raw)
	}
}

// TestTooManyActiveTasks: the task service's per-requestor limit is a 429
// with its sentence.
func TestTooManyActiveTasks(t *testing.T) {
	f := tokenFixture(t, teststore.SQLite)
	for i := range 20 {
		if r := f.do("POST", "/api/tasks", body(`{"goal": "g"}`)); r.code != 201 {
			t.Fatalf("create %d = %d %s", i, r.code, r.raw)
		}
	}
	r := f.do("POST", "/api/tasks", body(`{"goal": "one too many"}`))
	if r.code != 429 || !strings.Contains(r.body["error"].(string), "limit is 20") {
		t.Fatalf("21st = %d %s", r.code, r.raw)
	}
	// Another requestor is not limited by "api"'s tasks.
	if r := f.do("POST", "/api/tasks", body(`{"goal": "g"}`), httpapi.RequestorHeader, "someone-else"); r.code != 201 {
		t.Fatalf("other requestor = %d %s", r.code, r.raw)
	}
}

// TestRequestorNeedsTheToken: X-Taskloom-Requestor names whom a caller
// speaks for only when the call carried the API token, and then as
// "api:<name>", never as a chat user's id; without a token configured
// every caller is "api", whatever it sends. The task's requestor and the
// actor of its events agree.
func TestRequestorNeedsTheToken(t *testing.T) {
	tests := []struct {
		name   string
		token  bool
		header string
		code   int
		want   string
	}{
		{"with the token, a name", true, "ops-bot", 201, "api:ops-bot"},
		{"with the token, a chat user's id", true, "U012ABCDEF", 201, "api:U012ABCDEF"},
		{"with the token, no name", true, "", 201, "api"},
		{"with the token, a name too long", true, strings.Repeat("r", 101), 400, ""},
		// A name that hides characters could pass for another person's
		// in the timeline of who decided what.
		{"with the token, a bidirectional override", true, "alice\u202Eevil", 400, ""},
		{"with the token, a zero-width space", true, "ali\u200bce", 400, ""},
		{"with the token, a Hangul filler", true, "alice\u3164", 400, ""},
		{"with the token, a space inside", true, "ops bot", 201, "api:ops bot"},
		{"without a token, a name", false, "ops-bot", 201, "api"},
		{"without a token, a chat user's id", false, "U012ABCDEF", 201, "api"},
		{"without a token, a name too long", false, strings.Repeat("r", 101), 201, "api"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, teststore.SQLite)
			if tt.token {
				f = tokenFixture(t, teststore.SQLite)
			}
			var hdr []string
			if tt.header != "" {
				hdr = []string{httpapi.RequestorHeader, tt.header}
			}
			r := f.do("POST", "/api/tasks", body(`{"goal": "g"}`), hdr...)
			if r.code != tt.code {
				t.Fatalf("create = %d %s, want %d", r.code, r.raw, tt.code)
			}
			if tt.code != 201 {
				if f.count() != 0 {
					t.Fatal("a refused create made a task")
				}
				return
			}
			if r.body["requestor_id"] != tt.want {
				t.Errorf("requestor_id = %v, want %q", r.body["requestor_id"], tt.want)
			}
			if ev := f.lastEvent(1); ev.Actor != tt.want {
				t.Errorf("created by %q, want %q", ev.Actor, tt.want)
			}
			if r := f.do("POST", "/api/tasks/1/cancel", nil, hdr...); r.code != 200 {
				t.Fatalf("cancel = %d %s", r.code, r.raw)
			}
			if ev := f.lastEvent(1); ev.Type != domain.EventCanceled || ev.Actor != tt.want {
				t.Errorf("%s by %q, want canceled by %q", ev.Type, ev.Actor, tt.want)
			}
		})
	}
}

func TestAuth(t *testing.T) {
	const token = "s3cret-token"
	tests := []struct {
		name   string
		token  string // configured
		method string
		path   string
		auth   string // Authorization header sent
		code   int
	}{
		{"no token configured: API open", "", "GET", "/api/tasks", "", 200},
		{"missing", token, "GET", "/api/tasks", "", 401},
		{"wrong", token, "GET", "/api/tasks", "Bearer nope", 401},
		{"prefix of the token", token, "GET", "/api/tasks", "Bearer s3cret", 401},
		{"token with more", token, "GET", "/api/tasks", "Bearer " + token + "x", 401},
		{"not bearer", token, "GET", "/api/tasks", "Basic " + token, 401},
		{"right", token, "GET", "/api/tasks", "Bearer " + token, 200},
		{"scheme is case-insensitive", token, "GET", "/api/tasks", "bearer " + token, 200},
		{"create needs it", token, "POST", "/api/tasks", "", 401},
		{"control needs it", token, "POST", "/api/tasks/1/pause", "", 401},
		{"events need it", token, "GET", "/api/events", "", 401},
		{"unknown API paths need it", token, "GET", "/api/secret", "", 401},
		{"healthz is open", token, "GET", "/healthz", "", 200},
		{"readyz is open", token, "GET", "/readyz", "", 503}, // not ready, but not 401
		{"metrics are open", token, "GET", "/metrics", "", 200},
		{"the dashboard page is open", token, "GET", "/", "", 200},
		{"its script is open", token, "GET", "/dashboard/app.js", "", 200},
	}
	fixtures := map[string]*fixture{}
	for _, tok := range []string{"", token} {
		fixtures[tok] = newFixture(t, teststore.SQLite, func(o *httpapi.APIOptions) { o.Token = tok })
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b io.Reader
			if tc.method == "POST" {
				b = body(`{"goal": "g"}`)
			}
			var hdr []string
			if tc.auth != "" {
				hdr = []string{"Authorization", tc.auth}
			}
			r := fixtures[tc.token].do(tc.method, tc.path, b, hdr...)
			if r.code != tc.code {
				t.Fatalf("%s %s with %q = %d, want %d: %s", tc.method, tc.path, tc.auth, r.code, tc.code, r.raw)
			}
			if r.code == 401 {
				if r.header.Get("WWW-Authenticate") == "" || r.body["error"] == nil {
					t.Errorf("401 without WWW-Authenticate or error body: %v %s", r.header, r.raw)
				}
			}
		})
	}
}
