package actions_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/tasks"
)

// TestStrategiesAreTheServices: a strategy a plugin adds
// (tasks.Options.Strategies) is in create_task's schema, in the help, and
// in what the runtime's create_task lists for the adapters — the task
// service's one list; without a service only loop is offered.
func TestStrategiesAreTheServices(t *testing.T) {
	rt := plugin.New(plugin.Options{Store: teststore.SQLite(t), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	svc := tasks.New(tasks.Options{Runtime: rt, Lease: time.Minute, Owner: "w",
		Strategies: map[string]tasks.Strategy{"echo": tasks.StrategyFunc(func(_ context.Context, t *tasks.Turn) (domain.Outcome, error) {
			return t.Outcome(), nil
		})}})
	chat := &actions.Chat{Tasks: svc}
	if err := rt.Register(&plugin.Plugin{Name: "chat", Actions: actions.Commands(chat)}); err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(t.Context()); err != nil { // the runtime has its actions once started
		t.Fatal(err)
	}
	want := svc.Strategies()
	if !slices.Contains(want, "echo") || want[0] != domain.StrategyLoop {
		t.Fatalf("the service's strategies = %q", want)
	}
	if got := actions.Strategies(rt); !slices.Equal(got, want) {
		t.Errorf("actions.Strategies = %q, want the service's %q", got, want)
	}

	act, _ := rt.Action("create_task")
	var schema struct {
		Properties struct {
			Strategy struct {
				Enum        []string `json:"enum"`
				Description string   `json:"description"`
			} `json:"strategy"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(act.Info().Parameters, &schema); err != nil {
		t.Fatalf("create_task's schema: %v", err)
	}
	if s := schema.Properties.Strategy; !slices.Equal(s.Enum, want) || !strings.Contains(s.Description, "loop (default), react") || !strings.HasSuffix(s.Description, ", echo") {
		t.Errorf("create_task's strategy = %+v; want the service's %q", s, want)
	}

	res, err := rt.RunAction(t.Context(), "help", &plugin.Call{Message: &plugin.Message{Platform: "console", Text: "help"}})
	if err != nil || !strings.Contains(res.Text, "`echo`") || !strings.Contains(res.Text, "Strategies: `loop`, `react`") {
		t.Errorf("help = %q, %v; want the strategies, echo among them", res.Text, err)
	}

	if got := actions.Strategies(plugin.New(plugin.Options{})); !slices.Equal(got, []string{domain.StrategyLoop}) {
		t.Errorf("without a task service: %q, want only loop", got)
	}
}
