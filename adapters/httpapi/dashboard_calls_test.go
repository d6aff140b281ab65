package httpapi_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/taskloom/taskloom/adapters/httpapi"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/services/tasks"
)

// TestDashboardShowsEachCall: in Chromium, a tools reply of two calls,
// the write succeeded and the read failed, is one timeline entry with a
// line per call, each with its own mark; and the create form's picker
// offers the task service's strategies, one a plugin added included.
func TestDashboardShowsEachCall(t *testing.T) {
	f := newFixtureAt(t, teststore.SQLite, time.Now().UTC().Add(-time.Minute).Truncate(time.Second), func(o *httpapi.APIOptions) {
		o.Tasks = tasks.New(tasks.Options{Runtime: o.Runtime, Lease: time.Minute, Owner: "worker-1",
			Strategies: map[string]tasks.Strategy{"echo": tasks.StrategyFunc(func(_ context.Context, t *tasks.Turn) (domain.Outcome, error) {
				return t.Outcome(), nil
			})}})
	})
	n := f.create("Write then read").Number
	f.clk.Advance(time.Second)
	c, err := f.store.ClaimTask(f.ctx, domain.Claim{Owner: "w", Now: f.clk.Now(), Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	o := domain.Outcome{Owner: "w", Fence: c.Fence, Now: f.clk.Now(), Progress: 20, Verdict: domain.VerdictContinue,
		Step:  domain.Step{Action: "write_file", Params: []byte(`{"path":"a.md","content":"alpha"}`), Result: "wrote a.md", Success: true, Role: "agent"},
		Steps: []domain.Step{{Action: "read_file", Params: []byte(`{"path":"b.md"}`), Error: "no file b.md", Role: "agent"}}}
	if _, err := f.store.UpdateTask(f.ctx, n, func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, o) }); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(f.srv)
	t.Cleanup(ts.Close)
	ctx := browser(t)
	run(t, ctx, "select the task",
		chromedp.Navigate(ts.URL),
		chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="live"]`)),
		chromedp.Click(chromedp.CSS(`#queue li[data-task="1"] .name`)),
		poll(`document.querySelectorAll('#d-timeline li[data-type="iterated"] .line').length === 2`),
		poll(`document.querySelector('#d-timeline li[data-type="iterated"] .step-error') !== null`),
	)
	lines := eval[string](t, ctx, `[...document.querySelectorAll('#d-timeline li[data-type="iterated"] .line')].map((e) => e.textContent).join(" | ")`)
	if !strings.HasPrefix(lines, "write_file") || !strings.Contains(lines, "✓") || !strings.Contains(lines, "| read_file") || !strings.HasSuffix(lines, "✗") {
		t.Fatalf("the entry's lines read %q; want the write ✓, then the read ✗", lines)
	}
	if e := eval[string](t, ctx, `document.querySelector('#d-timeline li[data-type="iterated"] .step-error').textContent`); e != "no file b.md" {
		t.Errorf("the read's error reads %q", e)
	}
	run(t, ctx, "the picker is the service's", poll(`[...document.querySelectorAll('#strategy option')].some((o) => o.value === "echo")`))
	if got := eval[string](t, ctx, `[...document.querySelectorAll('#strategy option')].map((o) => o.value).join()`); got != "loop,react,tools,review,supervisor,magentic,group_chat,echo" {
		t.Errorf("the picker offers %q", got)
	}
}
