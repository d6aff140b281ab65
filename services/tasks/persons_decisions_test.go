package tasks_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/tasks"
)

// TestTasksCannotMakeAPersonsDecision: a task's model is never offered a
// person's decision as a tool, and naming one anyway — task #2 approving
// the call task #1 waits on, cancelling it, forgetting its requestor — is
// a failed step that changes nothing. People want this because a task is
// work a model steers from what it reads (pages, files, other people's
// words): it must not approve, cancel or delete with its requestor's
// authority.
func TestTasksCannotMakeAPersonsDecision(t *testing.T) {
	f := &fixture{t: t, ctx: context.Background(), clk: clock.NewFake(t0), store: teststore.SQLite(t), model: testkit.NewScriptedModel()}
	f.rt = plugin.New(plugin.Options{Store: f.store, Clock: f.clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	chat := &actions.Chat{}
	if err := f.rt.Register(
		&plugin.Plugin{Name: "model", Models: map[plugin.ModelType]plugin.Model{plugin.ModelText: f.model}},
		&plugin.Plugin{Name: "tools", Actions: actions.Tools(actions.ToolConfig{})},
		&plugin.Plugin{Name: "chat", Actions: actions.Commands(chat)},
	); err != nil {
		t.Fatal(err)
	}
	if err := f.rt.Start(f.ctx); err != nil {
		t.Fatal(err)
	}
	f.svc = tasks.New(tasks.Options{Runtime: f.rt, Lease: lease, Owner: "test", ApproveTools: []string{"write_file"}})
	chat.Tasks = f.svc

	var decisions []string
	for _, a := range f.rt.Actions() {
		if a.Info().Decision {
			decisions = append(decisions, a.Info().Name)
		}
	}
	if len(decisions) != 7 {
		t.Fatalf("decisions = %q; want approve, deny, cancel, unschedule, pause and resume schedule, forget me", decisions)
	}

	f.model.Decide("write_file", map[string]string{"path": "deploy.sh", "content": "make deploy"}, 10, "continue")
	first := f.create("Deploy")
	f.step("test")
	pending := f.task(first.Number)
	if pending.WaitingOn != domain.WaitApproval {
		t.Fatalf("task #1 waits on %q; want an approval", pending.WaitingOn)
	}

	for _, d := range decisions {
		// A task of its own for each: three failed steps in a row end a
		// task as stalled.
		other := f.create("Tidy up", func(in *domain.NewTask) { in.RequestorID = "u-" + d })
		for _, tool := range tasks.ToolsOf(f.rt, other) {
			if slices.Contains(decisions, tool.Name) {
				t.Fatalf("task #%d is offered %s", other.Number, tool.Name)
			}
		}
		var prompt string
		f.model.Then(func(_ context.Context, r plugin.ModelRequest) (plugin.ModelResponse, error) {
			prompt = r.Messages[0].Content
			return plugin.ModelResponse{Text: testkit.DecisionJSON(d, map[string]any{"number": first.Number}, 20, "continue")}, nil
		})
		f.step("test")
		steps := f.steps(other.Number)
		if len(steps) != 1 || steps[0].Action != d || steps[0].Success || !strings.Contains(steps[0].Error, "is not a tool this task can use") {
			t.Fatalf("task #%d naming %s: %+v", other.Number, d, steps)
		}
		if strings.Contains(prompt, "- "+d+":") || !strings.Contains(prompt, "- write_file:") {
			t.Fatalf("the iteration prompt offers %s:\n%s", d, prompt)
		}
	}
	if after := f.task(first.Number); after.EventSeq != pending.EventSeq || after.ApprovalGranted || after.Status != pending.Status {
		t.Fatalf("task #2's decisions changed task #1: %+v", after)
	}
}
