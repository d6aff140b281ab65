package httpapi_test

import (
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/taskloom/taskloom/adapters/httpapi"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/services/schedules"
)

// TestDashboardSchedules opens the dashboard in Chromium: the Schedules
// list shows a schedule with its cron expression and next run time, and
// its Pause, Resume and Delete buttons change it through the API.
func TestDashboardSchedules(t *testing.T) {
	var sched *schedules.Service
	f := newFixtureAt(t, teststore.SQLite, time.Now().UTC().Truncate(time.Second), func(o *httpapi.APIOptions) {
		sched = schedules.New(schedules.Options{Runtime: o.Runtime})
		o.Schedules = sched
	})
	sc, err := sched.Create(f.ctx, domain.NewSchedule{Cron: "0 9 * * 1-5", Goal: "Summarise yesterday's alerts", RequestorID: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(f.srv)
	t.Cleanup(ts.Close)
	ctx := browser(t)
	row := `#schedules li[data-id="1"]`
	run(t, ctx, "open the dashboard: the schedule is listed",
		chromedp.Navigate(ts.URL),
		chromedp.WaitVisible(chromedp.CSS(row)),
		poll(`document.querySelector('`+row+` .cron').textContent === "0 9 * * 1-5"`),
		poll(`document.querySelector('`+row+` .sub').textContent.startsWith("next run ")`),
	)
	// The next run names its time zone: a person reads it against the
	// cron expression, whose zone may not be theirs.
	if sub := eval[string](t, ctx, `document.querySelector('`+row+` .sub').textContent`); !regexp.MustCompile(`^next run .*\d\d:\d\d,? (UTC|GMT[+-]?[\d:]*|[A-Z]{3,5})$`).MatchString(sub) {
		t.Fatalf("the schedule's next run reads %q: no time zone", sub)
	}
	run(t, ctx, "press Pause",
		chromedp.Click(chromedp.CSS(row+` button[data-action="pause"]`)),
		poll(`document.querySelector('`+row+` .sub').textContent === "paused"`),
	)
	if got, _ := f.store.GetSchedule(f.ctx, sc.ID); !got.Paused {
		t.Fatal("Pause did not pause the schedule")
	}
	run(t, ctx, "press Resume",
		chromedp.Click(chromedp.CSS(row+` button[data-action="resume"]`)),
		poll(`document.querySelector('`+row+` .sub').textContent.startsWith("next run ")`),
	)
	run(t, ctx, "press Delete and confirm",
		chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`),
		chromedp.Click(chromedp.CSS(row+` button[data-action="delete"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#schedules-empty`)),
	)
	if list, _ := f.store.ListSchedules(f.ctx, domain.ScheduleFilter{}); len(list) != 0 {
		t.Fatalf("%d schedules after Delete", len(list))
	}
}
