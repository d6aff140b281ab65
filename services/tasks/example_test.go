package tasks_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/taskloom/taskloom/adapters/sqlite"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/tasks"
)

// A strategy is one method: given the claimed task, make at most one
// model call and say what became of the claim. This one, "haiku", asks
// the model for a poem about the goal and completes the task with it. A
// plugin adds it through Options.Strategies; `create haiku task …` in
// chat, or {"strategy": "haiku"} on the API, then chooses it, and the
// fair queue, leases, budgets and notifications work as for any task.
func ExampleStrategy() {
	haiku := tasks.StrategyFunc(func(ctx context.Context, turn *tasks.Turn) (domain.Outcome, error) {
		o := turn.Outcome()
		o.Step.Role = "poet"
		resp, err := turn.Ask(ctx, &o, tasks.Request{Role: "poet", Instruction: "Write a haiku about the goal."})
		if err != nil {
			return domain.Outcome{}, err // the model could not be used: the task is released unchanged
		}
		o.Step.Success, o.Step.Result = true, resp.Text
		o.Verdict, o.Summary, o.Progress = domain.VerdictDone, resp.Text, 100
		return o, nil
	})

	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	store, err := sqlite.Open(ctx, filepath.Join(dir, "tasks.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	_ = store.Migrate(ctx)
	poet := plugin.ModelFunc(func(_ context.Context, req plugin.ModelRequest) (plugin.ModelResponse, error) {
		last := req.Messages[len(req.Messages)-1].Content
		if !strings.HasSuffix(strings.TrimSpace(last), "\nRole: poet") {
			return plugin.ModelResponse{}, fmt.Errorf("not the poet's turn")
		}
		return plugin.ModelResponse{Text: "Queues wait in line / each task served in its own turn / the oldest goes first"}, nil
	})
	rt := plugin.New(plugin.Options{Store: store, Clock: clock.Real{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	_ = rt.Register(&plugin.Plugin{Name: "poetry", Models: map[plugin.ModelType]plugin.Model{plugin.ModelText: poet}})
	_ = rt.Start(ctx)

	svc := tasks.New(tasks.Options{Runtime: rt, Strategies: map[string]tasks.Strategy{"haiku": haiku}})
	fmt.Println(svc.Strategies())
	task, _ := svc.Create(ctx, domain.NewTask{Goal: "A poem about fair queues", Strategy: "haiku"})
	_, _ = svc.Step(ctx, "worker-1")
	task, _ = store.GetTask(ctx, task.Number)
	fmt.Println(task.Status, "—", task.Summary)
	_, err = svc.Create(ctx, domain.NewTask{Goal: "A limerick", Strategy: "limerick"})
	fmt.Println(err)
	// Output:
	// [loop react tools review supervisor magentic group_chat haiku]
	// completed — Queues wait in line / each task served in its own turn / the oldest goes first
	// create task: invalid input: there is no strategy "limerick"; the strategies are loop, react, tools, review, supervisor, magentic, group_chat, haiku
}
