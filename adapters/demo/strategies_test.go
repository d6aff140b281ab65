package demo_test

import (
	"context"
	"testing"
	"time"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/tasks"
)

// TestEveryStrategyCompletesOnTheDemoModel: with no model configured, a
// task of each strategy plays the rehearsal plan to completion through the
// task service — the demo model answers each role in its shape.
func TestEveryStrategyCompletesOnTheDemoModel(t *testing.T) {
	ctx := context.Background()
	st := teststore.SQLite(t)
	rt := plugin.New(plugin.Options{Store: st, Clock: clock.Real{}, Logger: quiet})
	if err := rt.Register(
		&plugin.Plugin{Name: "model", Models: map[plugin.ModelType]plugin.Model{plugin.ModelText: instant()}},
		&plugin.Plugin{Name: "tools", Actions: actions.Tools(actions.ToolConfig{})},
	); err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	svc := tasks.New(tasks.Options{Runtime: rt, Lease: time.Minute, Owner: "demo"})
	numbers := map[string]int64{}
	for _, s := range svc.Strategies() {
		task, err := svc.Create(ctx, domain.NewTask{Goal: "Plan the launch of " + s, Strategy: s})
		if err != nil {
			t.Fatal(err)
		}
		numbers[s] = task.Number
	}
	for range 400 {
		if ok, err := svc.Step(ctx, "w"); err != nil {
			t.Fatal(err)
		} else if !ok {
			break
		}
	}
	for s, n := range numbers {
		task, err := st.GetTask(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		steps, err := st.Steps(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if task.Status != domain.StatusCompleted {
			t.Errorf("%s task #%d: %s (%s) after %d claims; want completed; steps: %+v", s, n, task.Status, task.Error, task.Iteration, steps)
		}
		for _, step := range steps {
			if !step.Success {
				t.Errorf("%s task #%d: step %d (%s, %s) failed: %s", s, n, step.Iteration, step.Role, step.Action, step.Error)
			}
		}
	}
}
