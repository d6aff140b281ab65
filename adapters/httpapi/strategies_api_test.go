package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/httpapi"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/services/tasks"
)

// TestAPIListsTheServicesStrategies: GET /api/strategies lists the task
// service's strategies, one a plugin added (tasks.Options.Strategies)
// last, and POST /api/tasks takes it; a name it lacks is refused and
// creates nothing.
func TestAPIListsTheServicesStrategies(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		var svc *tasks.Service
		f := newFixture(t, open, func(o *httpapi.APIOptions) {
			svc = tasks.New(tasks.Options{Runtime: o.Runtime, Lease: time.Minute, Owner: "worker-1",
				Strategies: map[string]tasks.Strategy{"echo": tasks.StrategyFunc(func(_ context.Context, t *tasks.Turn) (domain.Outcome, error) {
					return t.Outcome(), nil
				})}})
			o.Tasks = svc
		})
		r := f.do("GET", "/api/strategies", nil)
		got := fmt.Sprint(r.body["strategies"])
		if want := fmt.Sprint(svc.Strategies()); r.code != 200 || got != want || !strings.HasSuffix(got, " echo]") || !strings.HasPrefix(got, "[loop ") {
			t.Fatalf("GET /api/strategies = %d %s; want %s, loop first and echo last", r.code, r.raw, want)
		}
		r = f.do("POST", "/api/tasks", strings.NewReader(`{"goal":"Say it back","strategy":"echo"}`))
		if r.code != 201 || r.body["strategy"] != "echo" {
			t.Fatalf("create with echo = %d %s", r.code, r.raw)
		}
		r = f.do("POST", "/api/tasks", strings.NewReader(`{"goal":"Nope","strategy":"chaos"}`))
		if r.code != 400 || !strings.Contains(fmt.Sprint(r.body["error"]), "chaos") {
			t.Fatalf("create with chaos = %d %s; want 400 naming it", r.code, r.raw)
		}
		if n, err := f.store.CountTasks(f.ctx, domain.TaskFilter{}); err != nil || n != 1 {
			t.Errorf("%d tasks (%v), want the one echo task", n, err)
		}
	})
}
