package actions

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/render"
	"github.com/taskloom/taskloom/plugin"
)

// TaskStatus shows one task in detail: `status #1`.
type TaskStatus struct{ *Chat }

var (
	_ plugin.Action         = TaskStatus{}
	_ plugin.CommandMatcher = TaskStatus{}
)

func (TaskStatus) Info() plugin.ActionInfo {
	return plugin.ActionInfo{
		Name:        "task_status",
		Similes:     []string{"status", "how is task"},
		Description: "Show one task in detail: status, progress, its latest steps, summary or error.",
		Examples:    []string{"status #1", "/task status 1"},
		Parameters:  numberSchema(""),
	}
}

func (TaskStatus) MatchCommand(msg *plugin.Message) (json.RawMessage, bool) {
	return match(msg, CmdStatus)
}

func (a TaskStatus) Handle(ctx context.Context, call *plugin.Call) (plugin.Result, error) {
	msg, refused := chatMessage(call)
	if refused != nil {
		return *refused, nil
	}
	var p numberParams
	if r := decode(call.Params, &p); r != nil {
		return *r, nil
	}
	t, missing, err := a.namedTask(ctx, call, p, "Which task? Say `status #3`.")
	if missing != nil || err != nil {
		return derefResult(missing), err
	}
	// The last few steps and the count, without results: what Status
	// shows, however many steps the task has.
	page, err := call.Runtime.Store().PageSteps(ctx, t.Number, domain.StepQuery{Limit: render.StatusSteps})
	if err != nil {
		return plugin.Result{}, fmt.Errorf("status of task #%d: %w", t.Number, err)
	}
	return plugin.Result{Success: true, TaskNumber: t.Number, Text: render.Status(render.ForPlatform(msg.Platform), t, page)}, nil
}

func derefResult(r *plugin.Result) plugin.Result {
	if r == nil {
		return plugin.Result{}
	}
	return *r
}
