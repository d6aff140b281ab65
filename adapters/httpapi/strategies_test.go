package httpapi_test

import (
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// TestDashboardOffersTheServersStrategies: the create form's strategy
// picker, written in index.html, lists exactly the strategies the task
// service has built in, in its order: a strategy added to one and not the
// other fails here.
func TestDashboardOffersTheServersStrategies(t *testing.T) {
	page, err := os.ReadFile("dashboard/index.html")
	if err != nil {
		t.Fatal(err)
	}
	sel := regexp.MustCompile(`(?s)<select id="strategy".*?</select>`).Find(page)
	if sel == nil {
		t.Fatal("index.html has no strategy picker")
	}
	var offered []string
	for _, m := range regexp.MustCompile(`<option value="([^"]+)"`).FindAllSubmatch(sel, -1) {
		offered = append(offered, string(m[1]))
	}
	f := newFixture(t, func(t testing.TB) domain.Store { return teststore.SQLite(t) })
	if want := f.tasks.Strategies(); !slices.Equal(offered, want) {
		t.Errorf("the dashboard offers %q; the server's strategies are %q", offered, want)
	}
}
