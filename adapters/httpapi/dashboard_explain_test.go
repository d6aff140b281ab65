package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// shoot writes the page to name in the directory TASKLOOM_SCREENSHOTS
// names, when it names one; nothing otherwise.
func shoot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("TASKLOOM_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	out := filepath.Join(dir, name)
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", out)
}

// TestDashboardCreatesWithAStrategy: in Chromium, a task created with the
// strategy picker has that strategy, the address names it, and the chart
// of the last hour shows a point a minute.
func TestDashboardCreatesWithAStrategy(t *testing.T) {
	f := newFixtureAt(t, teststore.SQLite, time.Now().UTC().Add(-time.Minute).Truncate(time.Second))
	ts := httptest.NewServer(f.srv)
	t.Cleanup(ts.Close)
	ctx := browser(t)
	run(t, ctx, "create a review task through the form",
		media(map[string]string{"prefers-reduced-motion": "reduce"}),
		chromedp.Navigate(ts.URL),
		chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)),
		chromedp.SetValue(chromedp.CSS("#strategy"), "review"),
		chromedp.SendKeys(chromedp.CSS("#goal"), "Review the login page"),
		chromedp.Click(chromedp.CSS(`#create button[type="submit"]`)),
		poll(`document.querySelector('#d-num').textContent === "#1"`),
		poll(`[...document.querySelectorAll('#d-facts div')].some((d) => d.innerText.includes("review"))`),
	)
	if task := f.task(1); task.Strategy != domain.StrategyReview || task.Goal != "Review the login page" {
		t.Fatalf("the created task has strategy %q, goal %q", task.Strategy, task.Goal)
	}
	if hash := eval[string](t, ctx, `location.hash`); hash != "#/tasks/1" {
		t.Fatalf("after creating #1 the address ends in %q", hash)
	}
	run(t, ctx, "the chart draws the last hour",
		poll(`document.querySelector('#chart').dataset.points === "60"`),
		poll(`!!document.querySelector('#chart path.depth')`),
		poll(`document.querySelector('#chart-legend').textContent.startsWith("queue 1 ")`),
		// Its scale: the value of the chart's top, for each series.
		poll(`document.querySelector('#chart-scale-depth').textContent === "— queue, top 1 task"`),
		poll(`document.querySelector('#chart-scale-its').textContent.startsWith("▮ iterations, top ")`),
	)
	// Its minutes are the clock's: the axis names them, the last with its
	// zone, one hour apart.
	from, to := eval[string](t, ctx, `document.querySelector('#chart-from').textContent`), eval[string](t, ctx, `document.querySelector('#chart-to').textContent`)
	if !regexp.MustCompile(`^\d\d:\d\d$`).MatchString(from) || !regexp.MustCompile(`^\d\d:\d\d .+$`).MatchString(to) || from[3:5] != to[3:5] {
		t.Fatalf("the chart's axis runs from %q to %q; want clock minutes an hour apart", from, to)
	}
}

// TestDashboardExplainsAReactTask: /#/tasks/N opens task N, whose
// timeline says what a ReAct task thought, did with which parameters,
// found and observed; a long result shows its first lines until "Show
// all". Selecting another task moves the address, and Back returns.
func TestDashboardExplainsAReactTask(t *testing.T) {
	f := newFixtureAt(t, teststore.SQLite, time.Now().UTC().Add(-time.Minute).Truncate(time.Second))
	var lines []string
	for i := 1; i <= 30; i++ {
		lines = append(lines, fmt.Sprintf("finding %d: the queue is fair", i))
	}
	notes := strings.Join(lines, "\n")
	reply := func(v map[string]any) {
		raw, _ := json.Marshal(v)
		f.model.Reply(string(raw))
	}
	reply(map[string]any{"thought": "The notes file has to exist before I can read it back"})
	reply(map[string]any{"action": "write_file", "params": map[string]string{"path": "notes.md", "content": notes}})
	reply(map[string]any{"observation": "notes.md now holds thirty findings", "progress": 40, "status": "continue"})
	reply(map[string]any{"thought": "Read the notes back to check them"})
	reply(map[string]any{"action": "read_file", "params": map[string]string{"path": "notes.md"}})
	reply(map[string]any{"observation": "All thirty findings read back intact", "progress": 70, "status": "continue"})
	if _, err := f.tasks.Create(f.ctx, domain.NewTask{Goal: "Keep notes on the queue", Strategy: domain.StrategyReact,
		RequestorID: "u1", Platform: "console", RoomID: "console", Actor: "u1"}); err != nil {
		t.Fatal(err)
	}
	for range 6 {
		f.step()
	}
	f.create("Write the plan") // #2, never served: the page would select it first
	ts := httptest.NewServer(f.srv)
	t.Cleanup(ts.Close)
	ctx := browser(t)

	timeline := `document.querySelector('#d-timeline').textContent`
	run(t, ctx, "open /#/tasks/1",
		chromedp.EmulateViewport(1440, 1000),
		media(map[string]string{"prefers-reduced-motion": "reduce"}),
		chromedp.Navigate(ts.URL+"/#/tasks/1"),
		chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)),
		poll(`document.querySelector('#d-num').textContent === "#1"`),
		poll(`document.querySelectorAll('#d-timeline li[data-type="iterated"]').length === 6`),
		poll(`document.querySelectorAll('#d-timeline .step-result').length === 2`),
	)
	text := eval[string](t, ctx, timeline)
	for _, want := range []string{
		"Thought: The notes file has to exist before I can read it back",
		"Observation: notes.md now holds thirty findings",
		"Thought: Read the notes back to check them",
		"Observation: All thirty findings read back intact",
		"action →read_file", "finding 1: the queue is fair",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the timeline does not say %q; it reads:\n%s", want, text)
		}
	}
	if strings.Contains(text, "no action") {
		t.Errorf("the timeline of a ReAct task says \"no action\":\n%s", text)
	}
	params := eval[string](t, ctx, `document.querySelector('#d-timeline .step-params pre').textContent`)
	if !strings.Contains(params, `"path": "notes.md"`) {
		t.Errorf("the read_file step's parameters = %q", params)
	}
	result := `[...document.querySelectorAll('#d-timeline .step-result')].map((e) => e.textContent).join("\n---\n")`
	if got := eval[string](t, ctx, result); strings.Contains(got, "finding 30") {
		t.Fatalf("the long result is shown whole before Show all:\n%s", got)
	}
	run(t, ctx, "show the whole result",
		chromedp.Click(chromedp.CSS(`#d-timeline li[data-type="iterated"] button.more`)),
		poll(result+`.includes("finding 30: the queue is fair")`),
	)
	shoot(t, ctx, "dash-react.png")

	run(t, ctx, "select #2, then go back",
		chromedp.Click(chromedp.CSS(`#queue li[data-task="2"] .name`)),
		poll(`location.hash === "#/tasks/2" && document.querySelector('#d-num').textContent === "#2"`),
		chromedp.NavigateBack(),
		poll(`location.hash === "#/tasks/1" && document.querySelector('#d-num').textContent === "#1"`),
	)
}

// TestDashboardFiltersEndedTasks: ended tasks are paged twenty at a
// time, and filtered by status and by text, by the list API.
func TestDashboardFiltersEndedTasks(t *testing.T) {
	f := newFixtureAt(t, teststore.SQLite, time.Now().UTC().Add(-time.Hour).Truncate(time.Second))
	f.model.Decide("", nil, 100, "done")
	f.create("Ship the beta")
	f.step()
	for i := 2; i <= 22; i++ {
		f.clk.Advance(time.Minute)
		f.create(fmt.Sprintf("Sweep the chores, round %d", i))
		if _, err := f.tasks.Cancel(f.ctx, int64(i), "u1"); err != nil {
			t.Fatal(err)
		}
	}
	if task := f.task(1); task.Status != domain.StatusCompleted {
		t.Fatalf("#1 is %s", task.Status)
	}
	ts := httptest.NewServer(f.srv)
	t.Cleanup(ts.Close)
	ctx := browser(t)
	ended := `[...document.querySelectorAll('#ended li.task')].map((li) => li.dataset.task).join()`
	count := `document.querySelector('#ended-count').textContent`
	run(t, ctx, "open the dashboard: the first page of ended tasks",
		media(map[string]string{"prefers-reduced-motion": "reduce"}),
		chromedp.Navigate(ts.URL),
		chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)),
		poll(`document.querySelectorAll('#ended li.task').length === 20`),
		poll(count+` === "1–20 of 22"`),
	)
	run(t, ctx, "the next page",
		chromedp.Click(chromedp.CSS("#ended-older")),
		poll(ended+` === "2,1"`),
		poll(count+` === "21–22 of 22"`),
	)
	run(t, ctx, "back to the first",
		chromedp.Click(chromedp.CSS("#ended-newer")),
		poll(`document.querySelectorAll('#ended li.task').length === 20`),
		poll(`document.querySelector('#ended li.task').dataset.task === "22"`),
	)
	run(t, ctx, "only the completed ones",
		chromedp.Evaluate[chromedp.Void](`(() => { const s = document.querySelector('#ended-status'); s.value = "completed"; s.dispatchEvent(new Event("change")); })()`),
		poll(ended+` === "1"`),
		poll(`document.querySelector('#ended-pager').hidden`),
	)
	run(t, ctx, "every ended one whose name says round 1",
		chromedp.Evaluate[chromedp.Void](`(() => { const s = document.querySelector('#ended-status'); s.selectedIndex = 0; s.dispatchEvent(new Event("change")); })()`),
		chromedp.SendKeys(chromedp.CSS("#ended-q"), "round 1"),
		poll(ended+` === "19,18,17,16,15,14,13,12,11,10"`),
		poll(count+` === "1–10 of 10"`),
	)
	run(t, ctx, "a text nothing matches",
		chromedp.SendKeys(chromedp.CSS("#ended-q"), "zzz"),
		poll(`!document.querySelector('#ended-empty').hidden && document.querySelectorAll('#ended li.task').length === 0`),
		poll(count+` === "none match"`),
	)
	run(t, ctx, "a link opens an ended task on another page",
		chromedp.Navigate(ts.URL+"/#/tasks/2"),
		poll(`document.querySelector('#d-num').textContent === "#2" && document.querySelector('#d-status').textContent === "Canceled"`),
		poll(`document.querySelector('#d-timeline').textContent.includes("Canceled by u1")`),
	)
	shoot(t, ctx, "dash-ended.png")
}
