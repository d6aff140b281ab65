package httpapi_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/taskloom/taskloom/adapters/httpapi"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// TestDashboardMemoryTab: the Memory tab lists the remembered messages,
// searches them, lists the knowledge documents and deletes one.
func TestDashboardMemoryTab(t *testing.T) {
	const token = "dashboard-secret"
	f := newFixtureAt(t, teststore.SQLite, time.Now().UTC().Truncate(time.Second), func(o *httpapi.APIOptions) { o.Token = token })
	for i, m := range []domain.Memory{
		{Platform: "discord", MessageID: "1", Room: "discord:C1", AuthorID: "U1", AuthorName: "ann", Text: "the staging database is ORCA-7"},
		{Platform: "discord", MessageID: "2", Room: "discord:C1", AuthorID: "U2", AuthorName: "bob", Text: "lunch at noon"},
	} {
		m.CreatedAt = f.clk.Now()
		if _, _, err := f.store.SaveMemory(f.ctx, m); err != nil {
			t.Fatal(i, err)
		}
	}
	if _, err := f.store.AddDocument(f.ctx, domain.Document{Title: "Runbook", CreatedAt: f.clk.Now()}, "Drain the ingest queue first."); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(f.srv)
	t.Cleanup(ts.Close)
	ctx := browser(t)
	run(t, ctx, "open the dashboard, give it the token, open the Memory tab",
		chromedp.Navigate(ts.URL),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS("#token-form button")),
		chromedp.WaitNotPresent(chromedp.CSS("#token-dialog[open]")),
		chromedp.Click(chromedp.CSS("#tab-memory")),
		chromedp.WaitVisible(chromedp.CSS("#memory-view")),
		poll(`document.querySelectorAll('#memories li').length === 2`),
		poll(`document.querySelector('#knowledge li[data-document="1"]')?.innerText.includes("Runbook")`),
	)
	if !eval[bool](t, ctx, `document.querySelector('#tasks-view').hidden`) {
		t.Fatal("the task view is still shown")
	}
	run(t, ctx, "search the messages",
		chromedp.SendKeys(chromedp.CSS("#memory-q"), "staging"),
		chromedp.Click(chromedp.CSS("#memory-search button")),
		poll(`document.querySelectorAll('#memories li').length === 1 && document.querySelector('#memories li').innerText.includes("ORCA-7")`),
	)
	run(t, ctx, "delete the document",
		chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`),
		chromedp.Click(chromedp.CSS(`#knowledge li[data-document="1"] button`)),
		poll(`!document.querySelector('#knowledge li') && !document.querySelector('#knowledge-empty').hidden`),
	)
	if docs, err := f.store.Documents(f.ctx, ""); err != nil || len(docs) != 0 {
		t.Fatalf("documents left: %v %v", docs, err)
	}
	run(t, ctx, "back to the tasks", chromedp.Click(chromedp.CSS("#tab-tasks")), chromedp.WaitVisible(chromedp.CSS("#tasks-view")))
}
