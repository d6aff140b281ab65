package httpapi_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// TestDashboardTimelineShowsRoles: in Chromium, the timeline of a
// supervisor task says whose turn each step was (docs/strategies.md); a loop
// task's timeline names none.
func TestDashboardTimelineShowsRoles(t *testing.T) {
	f := newFixtureAt(t, teststore.SQLite, time.Now().UTC().Add(-time.Minute).Truncate(time.Second))
	f.model.Reply(`{"thought": "list first", "next": "researcher", "instruction": "List the files", "summary": ""}`)
	f.model.Decide("list_files", nil, 20, "continue")
	if _, err := f.tasks.Create(f.ctx, domain.NewTask{Goal: "Compare the queues", Strategy: domain.StrategySupervisor,
		RequestorID: "u1", Platform: "console", RoomID: "console", Actor: "u1"}); err != nil {
		t.Fatal(err)
	}
	f.step()
	f.step()
	f.model.Decide("list_files", nil, 20, "continue")
	f.create("Write the plan")
	f.step()
	ts := httptest.NewServer(f.srv)
	t.Cleanup(ts.Close)
	ctx := browser(t)
	roles := `[...document.querySelectorAll('#d-timeline li[data-type="iterated"] .role')].map((e) => e.textContent).join()`
	run(t, ctx, "select the supervisor task",
		chromedp.Navigate(ts.URL),
		chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)),
		chromedp.Click(chromedp.CSS(`#queue li[data-task="1"] .name`)),
		poll(`document.querySelectorAll('#d-timeline li[data-type="iterated"]').length === 2`),
	)
	// Newest first.
	if got := eval[string](t, ctx, roles); got != "researcher →,supervisor →" {
		t.Fatalf("the timeline's roles = %q", got)
	}
	line := eval[string](t, ctx, `document.querySelector('#d-timeline li[data-type="iterated"] .line').textContent`)
	if !strings.HasPrefix(line, "researcher →list_files") {
		t.Fatalf("the researcher's line reads %q", line)
	}
	run(t, ctx, "select the loop task",
		chromedp.Click(chromedp.CSS(`#queue li[data-task="2"] .name`)),
		poll(`document.querySelectorAll('#d-timeline li[data-type="iterated"]').length === 1`),
	)
	if got := eval[string](t, ctx, roles); got != "" {
		t.Fatalf("a loop task's timeline names roles: %q", got)
	}
}
