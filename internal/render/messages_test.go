package render

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

func TestProgressLines(t *testing.T) {
	t.Parallel()
	task := fixtureTask(1, "Build auth", domain.StatusRunning)
	task.Progress, task.Iteration = 35, 4
	act := step(4, "write_file", map[string]any{"path": "a.ts"}, true)
	for _, tc := range []struct {
		name      string
		u         Update
		want, not []string
	}{
		{"delta", Update{Task: task, From: 15, LastAction: &act},
			[]string{"   Progress: 15% → 35%", "   Last action: `write_file a.ts` ✓", "   Iteration: 4"}, nil},
		{"no delta with action", Update{Task: task, From: 35, LastAction: &act},
			[]string{"Last action:"}, []string{"Progress"}},
		{"no delta, no action", Update{Task: task, From: 35},
			[]string{"   Progress: 35%"}, []string{"→", "Last action"}},
		{"clamped", Update{Task: domain.Task{Number: 2, Progress: 140}, From: -3},
			[]string{"Progress: 0% → 100%"}, []string{"Iteration"}},
		{"errors each on a line", Update{Task: task, From: 35, Errors: []string{"one\ntwo", " ", "three"}},
			[]string{"   ⚠️ Error: one two\n   ⚠️ Error: three"}, nil},
		{"failed action", Update{Task: task, From: 35, LastAction: &domain.Step{Action: "read_file"}},
			[]string{"`read_file` ✗"}, nil},
		{"paused", Update{Task: domain.Task{Number: 3, Status: domain.StatusPaused}},
			[]string{"   Status: Paused"}, nil},
	} {
		got := Progress(Plain, []Update{tc.u})
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: want %q in\n%s", tc.name, w, got)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(got, n) {
				t.Errorf("%s: want no %q in\n%s", tc.name, n, got)
			}
		}
	}
	if got := Progress(Plain, []Update{{Task: task, From: 1}, {Task: task, From: 2}}); strings.Count(got, "\n\n") != 1 {
		t.Errorf("two blocks should be separated by one blank line:\n%s", got)
	}
}

func TestCompletedDuration(t *testing.T) {
	t.Parallel()
	base := fixtureTask(1, "x", domain.StatusCompleted)
	started := base
	started.StartedAt = t0.Add(time.Minute)
	started.CompletedAt = t0.Add(9*time.Minute + 23*time.Second)
	never := base
	never.CompletedAt = t0.Add(45 * time.Second)
	unknown := base
	for _, tc := range []struct {
		name string
		task domain.Task
		want string
	}{
		{"from start", started, "   Duration: 8m 23s"},
		{"from creation", never, "   Duration: 45s"},
		{"no end", unknown, ""},
	} {
		got := Completed(Plain, tc.task, 3)
		if tc.want == "" {
			if strings.Contains(got, "Duration") {
				t.Errorf("%s: want no duration in\n%s", tc.name, got)
			}
		} else if !strings.Contains(got, tc.want+"\n") && !strings.HasSuffix(got, tc.want) {
			t.Errorf("%s: want %q in\n%s", tc.name, tc.want, got)
		}
	}
	if got := Completed(Plain, unknown, 3); strings.Contains(got, "Summary") {
		t.Errorf("an empty summary should leave no Summary line:\n%s", got)
	}
}

func TestCompletedKeepsWholeSummary(t *testing.T) {
	t.Parallel()
	task := completedTask()
	task.Summary = strings.Repeat("a long line of summary text\n", 500) + "THE END"
	got := Completed(Plain, task, 1)
	if !strings.HasSuffix(got, "\n   THE END") || strings.Count(got, "a long line") != 500 {
		t.Errorf("summary was not kept whole (%d runes)", len(got))
	}
}

func TestStalledReason(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		iter, stale   int
		want, advice  string
		notAttemptsOf bool
	}{
		{"stale", 9, 3, "   Attempts without progress: 3", "for the steps, or create a narrower task.", false},
		{"iteration limit", 50, 1, "   Reached the limit of 50 iterations", "to see how far it got", true},
		{"both: stale wins", 50, 3, "   Attempts without progress: 3", "create a narrower task", false},
	} {
		task := fixtureTask(2, "Fix db", domain.StatusStalemate)
		task.Iteration, task.StaleCounter, task.Progress = tc.iter, tc.stale, 40
		got := Stalled(Plain, task, nil)
		for _, w := range []string{"⚠️ Task #2 \"Fix db\" stalled\n   Progress stuck at: 40%\n", tc.want, "`status #2`", tc.advice} {
			if !strings.Contains(got, w) {
				t.Errorf("%s: want %q in\n%s", tc.name, w, got)
			}
		}
		if tc.notAttemptsOf && strings.Contains(got, "Attempts") {
			t.Errorf("%s: want no Attempts line in\n%s", tc.name, got)
		}
		if strings.Contains(got, "Last action") {
			t.Errorf("%s: no last step, but a Last action line:\n%s", tc.name, got)
		}
	}
}

func TestFailedWithoutError(t *testing.T) {
	t.Parallel()
	got := Failed(Plain, fixtureTask(3, "Add tests", domain.StatusFailed))
	if want := "❌ Task #3 \"Add tests\" failed\n   Error: no reason was recorded."; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestTerminal(t *testing.T) {
	t.Parallel()
	last := step(3, "read_file", map[string]any{"path": "a"}, true)
	for _, tc := range []struct {
		status domain.Status
		prefix string
	}{
		{domain.StatusCompleted, "✅ "},
		{domain.StatusFailed, "❌ "},
		{domain.StatusStalemate, "⚠️ "},
		{domain.StatusCanceled, "🛑 "},
		{domain.StatusRunning, "📋 "},
		{domain.StatusPaused, "📋 "},
	} {
		task := fixtureTask(7, "x", tc.status)
		got := Terminal(Plain, task, 3, &last)
		if !strings.HasPrefix(got, tc.prefix+"Task #7") {
			t.Errorf("Terminal(%s) = %q, want prefix %q", tc.status, got, tc.prefix)
		}
	}
}

func TestQueue(t *testing.T) {
	t.Parallel()
	now := t0
	leased := fixtureTask(1, "leased", domain.StatusRunning)
	leased.LeaseOwner, leased.LeaseExpiresAt = "w", now.Add(time.Second)
	expired := fixtureTask(2, "expired lease", domain.StatusRunning)
	expired.LeaseOwner, expired.LeaseExpiresAt = "w", now.Add(-time.Second)
	paused := fixtureTask(3, "paused", domain.StatusPaused)
	waiting := fixtureTask(4, "waiting", domain.StatusWaiting)
	queued := fixtureTask(5, "queued", domain.StatusQueued)
	for _, tc := range []struct {
		name     string
		tasks    []domain.Task
		total    int
		want     []string
		not      []string
		complete string
	}{
		{name: "empty", complete: "📊 Task Queue is empty. Say `create task <goal>` to start one."},
		{name: "leased is skipped", tasks: []domain.Task{leased, paused, queued}, total: 3,
			want: []string{"📊 Task Queue (3 tasks)\n\n#1", "\n\nNext: #5 \"queued\" (fair scheduling)"}},
		{name: "expired lease is next", tasks: []domain.Task{leased, expired, queued}, total: 3,
			want: []string{"Next: #2 \"expired lease\""}},
		{name: "nothing runnable", tasks: []domain.Task{leased, paused, waiting}, total: 3,
			not: []string{"Next"}},
		{name: "one task", tasks: []domain.Task{queued}, total: 1,
			want: []string{"📊 Task Queue (1 task)"}, not: []string{"more"}},
		{name: "more than shown", tasks: []domain.Task{queued}, total: 4,
			want: []string{"(4 tasks)", "\n…and 3 more\n\nNext:"}},
		{name: "total below shown", tasks: []domain.Task{queued, paused}, total: 0,
			want: []string{"(2 tasks)"}, not: []string{"more"}},
	} {
		got := Queue(Plain, tc.tasks, tc.total, now)
		if tc.complete != "" && got != tc.complete {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.complete)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: want %q in\n%s", tc.name, w, got)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(got, n) {
				t.Errorf("%s: want no %q in\n%s", tc.name, n, got)
			}
		}
	}
}

// TestQueueAligned checks that the bars and percentages start in the same
// display column on every row, whatever the names are made of.
func TestQueueAligned(t *testing.T) {
	t.Parallel()
	names := []string{"a", "Build auth", "日本語のドキュメントを翻訳する", "👨‍👩‍👧 family 🇫🇷", "e\u0301te\u0301",
		"a name that is much too long to show whole", "*markdown* <@1>", ""}
	var tasks []domain.Task
	for i, n := range names {
		task := fixtureTask(int64(i+1)*int64(i+1)*7, n, domain.StatusQueued)
		task.Progress = []int{0, 5, 50, 100}[i%4]
		tasks = append(tasks, task)
	}
	for _, f := range []Flavor{Plain, Discord, Slack} {
		got := Queue(f, tasks, len(tasks), t0)
		lines := strings.Split(got, "\n")[2 : 2+len(tasks)]
		barCol, pctCol := -1, -1
		for i, l := range lines {
			// Measure as the reader sees it: escapes take no room.
			seen := l
			switch f {
			case Discord:
				seen = regexp.MustCompile(`\\(.)`).ReplaceAllString(seen, "$1")
			case Slack:
				seen = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(seen)
			}
			bc := width(seen[:strings.Index(seen, "[")])
			pc := width(seen[:strings.Index(seen, "%")])
			if i == 0 {
				barCol, pctCol = bc, pc
			}
			if bc != barCol || pc != pctCol {
				t.Errorf("%v: row %d %q: bar at column %d, %% at %d; row 0 has %d, %d", f, i, l, bc, pc, barCol, pctCol)
			}
		}
		if !strings.Contains(got, "\"a name that is much too…\"") {
			t.Errorf("%v: long name not clipped to 24 runes:\n%s", f, got)
		}
	}
}

func TestStatusSteps(t *testing.T) {
	t.Parallel()
	var steps []domain.Step
	for i := range 12 {
		steps = append(steps, step(i+1, "read_file", map[string]any{"path": "f" + itoa(i+1)}, i%2 == 0))
	}
	// Every step, or only the page of the last five a caller reads: the
	// same view.
	for _, page := range []domain.StepPage{everyStep(steps), {Total: 12, Steps: steps[7:]}} {
		got := Status(Plain, statusTask(), page)
		for _, w := range []string{"Steps (last 5 of 12):", "Step 8: `read_file f8` ✗ — file does not exist", "Step 12: `read_file f12` ✗", "Step 11: `read_file f11` ✓"} {
			if !strings.Contains(got, w) {
				t.Errorf("%d steps read: want %q in\n%s", len(page.Steps), w, got)
			}
		}
		if strings.Contains(got, "Step 7:") {
			t.Errorf("%d steps read: only the last 5 steps should show:\n%s", len(page.Steps), got)
		}
	}
	if got := Status(Plain, domain.Task{Number: 9}, domain.StepPage{}); strings.Contains(got, "Steps") || strings.Contains(got, "Created") {
		t.Errorf("empty sections should be left out:\n%s", got)
	}
}

func TestParamSummary(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		params string
		want   string
	}{
		{`{"path":"src/a.ts","content":"x"}`, "src/a.ts"},
		{`{"content":"x","path":"src/a.ts"}`, "src/a.ts"},
		{`{"url":"https://e.com"}`, "https://e.com"},
		{`{"command":"go test ./..."}`, "go test ./..."},
		{`{"question":"Jest or\nVitest?"}`, "Jest or Vitest?"},
		{`{"goal":"write docs","name":"Docs"}`, "write docs"},
		{`{"text":"hello"}`, "hello"},
		{`{"b":"second","a":"first"}`, "first"},
		{`{"path":"","other":"x"}`, "x"},
		{`{"number":3}`, "3"},
		{`{"nested":{"a":1}}`, ""},
		{`{}`, ""},
		{`null`, ""},
		{`not json`, ""},
		{``, ""},
	} {
		if got := paramSummary(json.RawMessage(tc.params)); got != tc.want {
			t.Errorf("paramSummary(%s) = %q, want %q", tc.params, got, tc.want)
		}
	}
	long := step(1, "write_file", map[string]any{"path": strings.Repeat("dir/", 30) + "file.ts"}, true)
	got := action(Plain, long)
	if n := len([]rune(got)); n > len("`write_file `")+paramRunes+len(" ✓") {
		t.Errorf("action not clipped: %d runes: %q", n, got)
	}
	if !strings.Contains(got, "…` ✓") {
		t.Errorf("clipped action should end in …: %q", got)
	}
	if got := action(Plain, domain.Step{Success: true}); got != "`(no action)` ✓" {
		t.Errorf("empty action = %q", got)
	}
}

// TestMessagesHostile renders every shape with hostile text in every field
// and checks that nothing in Discord or Slack output can ping.
func TestMessagesHostile(t *testing.T) {
	t.Parallel()
	task := hostileTask()
	task.Goal, task.Summary = hostileText+"\n@here", hostileText+"\n<!here>"
	last := step(1, hostileText, map[string]any{"path": hostileText}, false)
	last.Error = hostileText
	render := func(f Flavor) []string {
		return []string{
			Progress(f, []Update{{Task: task, LastAction: &last, Errors: []string{hostileText}}}),
			Completed(f, task, 1), Stalled(f, task, &last), Failed(f, task), Canceled(f, task),
			Queue(f, []domain.Task{task}, 1, t0), Status(f, task, everyStep([]domain.Step{last})),
		}
	}
	discord := regexp.MustCompile(`<[@#!&/]|(?i)@(everyone|here)`)
	// <!date^…> is ours; every other <! is a special mention.
	slack := regexp.MustCompile(`<[@#]|<!(?:[^d]|d[^a])|(?i)@(everyone|here|channel)`)
	for _, msg := range render(Discord) {
		if m := discord.FindString(msg); m != "" {
			t.Errorf("Discord message has live %q:\n%s", m, msg)
		}
	}
	for _, msg := range render(Slack) {
		if m := slack.FindString(msg); m != "" {
			t.Errorf("Slack message has live %q:\n%s", m, msg)
		}
	}
}

func TestBlock(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		f        Flavor
		in, want string
	}{
		{Plain, "", ""},
		{Plain, " \n\t\n", ""},
		{Plain, "one", "   Summary: one"},
		{Plain, "\n  one\r\ntwo  \n\n\nthree\n", "   Summary: one\n   two\n\n\n   three"},
		{Discord, "one\n# two\n> three", "   Summary: one\n   \\# two\n   \\> three"},
		{Slack, "one\n> two", "   Summary: one\n   " + z + "&gt; two"},
	} {
		if got := block(tc.f, "Summary: ", tc.in); got != tc.want {
			t.Errorf("block(%v, %q) = %q, want %q", tc.f, tc.in, got, tc.want)
		}
	}
}

// TestStatusStrategy: status #N names a strategy other than loop and
// where it stands; a loop task's status says nothing of it.
func TestStatusStrategy(t *testing.T) {
	t.Parallel()
	task := statusTask()
	task.Strategy, task.Phase = domain.StrategyReview, "execution"
	if got := Status(Plain, task, domain.StepPage{}); !strings.Contains(got, "Strategy: review, phase: execution") {
		t.Errorf("want the strategy and phase in\n%s", got)
	}
	task.Strategy, task.Phase = domain.StrategyLoop, ""
	if got := Status(Plain, task, domain.StepPage{}); strings.Contains(got, "Strategy") {
		t.Errorf("a loop task's status names its strategy:\n%s", got)
	}
}

// TestRunningMeansHeld: with one worker and seven started tasks, the queue
// shows one "Running" and six "Queued (in rotation)": a person reading the
// list wants to know which task a worker is on now, not which have started.
// The stored status stays running (the API and the store's names are fixed).
func TestRunningMeansHeld(t *testing.T) {
	t.Parallel()
	var tasks []domain.Task
	for n := int64(1); n <= 7; n++ {
		task := fixtureTask(n, fmt.Sprintf("task %d", n), domain.StatusRunning)
		task.Iteration = 2
		if n == 3 {
			task.LeaseOwner, task.LeaseExpiresAt = "worker-1", t0.Add(time.Minute)
		}
		tasks = append(tasks, task)
	}
	got := Queue(Plain, tasks, len(tasks), t0)
	if n := strings.Count(got, "Running"); n != 1 {
		t.Errorf("%d tasks read Running, want 1 (the one a worker holds):\n%s", n, got)
	}
	if n := strings.Count(got, InRotation); n != 6 {
		t.Errorf("%d tasks read %q, want 6:\n%s", n, InRotation, got)
	}
	if !strings.Contains(got, `#3 "task 3"`) || !strings.Contains(got, "Running (iter 2)") {
		t.Errorf("the held task does not read Running:\n%s", got)
	}
	if st := Status(Plain, tasks[0], domain.StepPage{}); !strings.Contains(st, "Status: "+InRotation) {
		t.Errorf("status of a task in rotation:\n%s", st)
	}
	if st := Status(Plain, tasks[2], domain.StepPage{}); !strings.Contains(st, "Status: Running") {
		t.Errorf("status of the held task:\n%s", st)
	}
}
