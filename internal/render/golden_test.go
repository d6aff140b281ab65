package render

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// goldenShapes are the messages kept as golden files, one file per flavor:
// testdata/<name>.<flavor>.golden.
var goldenShapes = []struct {
	name   string
	render func(Flavor) string
}{
	{"progress_1_task", func(f Flavor) string { return Progress(f, progressUpdates()[:1]) }},
	{"progress_3_tasks", func(f Flavor) string { return Progress(f, progressUpdates()) }},
	{"completed", func(f Flavor) string { return Completed(f, completedTask(), 12) }},
	{"stalled_stale", func(f Flavor) string {
		last := step(9, "read_file", map[string]any{"path": "config/db.ts"}, true)
		return Stalled(f, staleTask(), &last)
	}},
	{"stalled_max_iterations", func(f Flavor) string {
		last := step(50, "run_command", map[string]any{"command": "go test ./billing/... -run TestInvoiceTotals -count=1 -v -timeout 10m -race"}, false)
		return Stalled(f, limitTask(), &last)
	}},
	{"failed", func(f Flavor) string { return Failed(f, failedTask()) }},
	{"canceled", func(f Flavor) string { return Canceled(f, fixtureTask(4, "Old idea", domain.StatusCanceled)) }},
	{"queue_3_tasks", func(f Flavor) string { return Queue(f, queueTasks(), 3, t0) }},
	{"queue_wide_names", func(f Flavor) string { return Queue(f, wideQueueTasks(), 5, t0) }},
	{"queue_empty", func(f Flavor) string { return Queue(f, nil, 0, t0) }},
	{"status_running", func(f Flavor) string { return Status(f, statusTask(), everyStep(statusSteps())) }},
	{"status_failed", func(f Flavor) string { return Status(f, failedTask(), everyStep(statusSteps()[:2])) }},
	// help.*.golden is the help as actions' table of commands makes it:
	// actions' TestHelpFromTheTable checks it.
	{"hostile_progress", func(f Flavor) string { return Progress(f, hostileUpdates()) }},
	{"hostile_failed", func(f Flavor) string { return Failed(f, hostileTask()) }},
	{"hostile_queue", func(f Flavor) string { return Queue(f, []domain.Task{hostileTask()}, 1, t0) }},
}

func TestGolden(t *testing.T) {
	for _, shape := range goldenShapes {
		for _, f := range []Flavor{Plain, Discord, Slack} {
			name := shape.name + "." + f.String()
			t.Run(name, func(t *testing.T) {
				got := shape.render(f) + "\n"
				path := filepath.Join("testdata", name+".golden")
				if *update {
					if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test -update to create it)", err)
				}
				if got != string(want) {
					t.Errorf("%s differs from %s (run go test -update and review the diff)\n--- got ---\n%s--- want ---\n%s",
						name, path, got, want)
				}
			})
		}
	}
}

// TestGoldenFilesUsed catches golden files no shape writes any more.
func TestGoldenFilesUsed(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.golden"))
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, shape := range goldenShapes {
		for _, f := range []Flavor{Plain, Discord, Slack} {
			known[filepath.Join("testdata", shape.name+"."+f.String()+".golden")] = true
		}
	}
	for _, file := range files {
		if !known[file] {
			t.Errorf("%s is not written by any shape; delete it", file)
		}
	}
}

func progressUpdates() []Update {
	t1 := fixtureTask(1, "Build auth feature", domain.StatusRunning)
	t1.Progress, t1.Iteration = 35, 4
	write := step(4, "write_file", map[string]any{"path": "src/auth/login.ts", "content": "export function login() {}"}, true)

	t2 := fixtureTask(2, "Fix database connection", domain.StatusRunning)
	t2.Progress, t2.Iteration, t2.StaleCounter = 40, 7, 2
	read := step(7, "read_file", map[string]any{"path": "config/db.ts"}, false)

	t3 := fixtureTask(3, "Add tests", domain.StatusWaiting)
	t3.Progress, t3.Iteration = 10, 2
	ask := step(2, "ask_user", map[string]any{"question": "Which test framework should I use, Jest or Vitest? The repo has config files for both."}, true)

	return []Update{
		{Task: t1, From: 15, LastAction: &write},
		{Task: t2, From: 40, LastAction: &read, Errors: []string{
			"read_file config/db.ts: file does not exist",
			"model reply was not JSON:\nunexpected token '}' at offset 12",
		}},
		{Task: t3, From: 0, LastAction: &ask},
	}
}

func completedTask() domain.Task {
	t := fixtureTask(1, "Build auth feature", domain.StatusCompleted)
	t.Progress, t.Iteration = 100, 12
	t.StartedAt = t0.Add(5 * time.Second)
	t.CompletedAt = t.StartedAt.Add(8*time.Minute + 23*time.Second)
	t.Summary = strings.Join([]string{
		"Created login/logout endpoints and session handling.",
		"",
		"Files:",
		"- src/auth/login.ts: POST /login checks the password with *bcrypt* and sets the session_id cookie",
		"- src/auth/logout.ts: POST /logout clears it",
		"- src/auth/middleware.ts: requireUser() guards /api/* routes",
		"",
		"Run `npm test` to check: 14 tests pass.",
		"# Next steps",
		"> Add rate limiting to /login (see https://owasp.org/www-community/controls/Blocking_Brute_Force_Attacks).",
		"",
	}, "\n")
	return t
}

func staleTask() domain.Task {
	t := fixtureTask(2, "Fix database connection", domain.StatusStalemate)
	t.Progress, t.Iteration, t.StaleCounter = 40, 9, 3
	return t
}

func limitTask() domain.Task {
	t := fixtureTask(5, "Migrate the billing service", domain.StatusStalemate)
	t.Progress, t.Iteration, t.StaleCounter = 70, 50, 1
	return t
}

func failedTask() domain.Task {
	t := fixtureTask(3, "Add tests", domain.StatusFailed)
	t.Goal = "Add unit tests for the auth module"
	t.Progress, t.Iteration = 20, 2
	t.StartedAt = t0.Add(time.Minute)
	t.LastProcessedAt = t0.Add(2 * time.Minute)
	t.CompletedAt = t0.Add(2*time.Minute + 45*time.Second)
	t.Error = "The model gave up: the repository has no test runner.\npackage.json is missing, so neither Jest nor Vitest can run."
	return t
}

func queueTasks() []domain.Task {
	t1 := fixtureTask(1, "Build auth", domain.StatusRunning)
	t1.Progress, t1.Iteration = 80, 12
	t1.LeaseOwner, t1.LeaseExpiresAt = "worker-1", t0.Add(time.Minute) // busy now
	t2 := fixtureTask(2, "Fix bug", domain.StatusQueued)
	t2.Progress = 20
	t3 := fixtureTask(3, "Add tests", domain.StatusQueued)
	return []domain.Task{t1, t2, t3}
}

func wideQueueTasks() []domain.Task {
	a := fixtureTask(7, "日本語のドキュメントを翻訳する", domain.StatusRunning)
	a.Progress, a.Iteration, a.LeaseOwner = 45, 5, "w"
	b := fixtureTask(8, "🚀 Launch the v2 marketing site with the new pricing page", domain.StatusPaused)
	b.Progress, b.Iteration = 60, 9
	c := fixtureTask(12, "Fix 👨‍👩‍👧 names", domain.StatusWaiting)
	c.Progress, c.Iteration = 100, 3
	return []domain.Task{a, b, c}
}

func statusTask() domain.Task {
	t := fixtureTask(1, "Build auth feature", domain.StatusRunning)
	t.LeaseOwner = "w"
	t.Goal = "Build the auth feature:\n- login and logout endpoints\n- a session cookie"
	t.Progress, t.Iteration, t.StaleCounter = 80, 12, 1
	t.StartedAt = t0.Add(5 * time.Second)
	t.LastProcessedAt = t0.Add(6 * time.Minute)
	t.PromptTokens, t.CompletionTokens = 12345, 2345
	return t
}

func statusSteps() []domain.Step {
	return []domain.Step{
		step(1, "list_files", map[string]any{}, true),
		step(2, "write_file", map[string]any{"path": "notes/plan.md", "content": "# Plan"}, true),
		step(3, "read_file", map[string]any{"path": "package.json"}, false),
		step(4, "write_file", map[string]any{"path": "src/auth/login.ts", "content": "…"}, true),
		step(5, "http_get", map[string]any{"url": "https://example.com/docs/auth?lang=en&v=2"}, true),
		step(6, "run_command", map[string]any{"command": "npm test -- --grep `login`"}, false),
		step(7, "write_file", map[string]any{"path": "src/auth/logout.ts", "content": "…"}, true),
	}
}

const hostileText = "@everyone <@123> *bold* <!channel> & friends"

func hostileTask() domain.Task {
	t := fixtureTask(6, "@everyone hello <@123> *bold*", domain.StatusFailed)
	t.Progress = 50
	t.Error = hostileText + "\n# not a heading\n> not a quote\n||spoiler|| ~~gone~~ _it_ `code`"
	return t
}

func hostileUpdates() []Update {
	t := hostileTask()
	t.Status, t.Iteration = domain.StatusRunning, 3
	post := step(3, "post_message", map[string]any{"text": "<@123> @here `rm -rf /` <!channel>"}, true)
	return []Update{{Task: t, From: 20, LastAction: &post, Errors: []string{hostileText}}}
}

// everyStep is a page holding every step of a task.
func everyStep(steps []domain.Step) domain.StepPage {
	return domain.StepPage{Total: len(steps), Steps: steps}
}
