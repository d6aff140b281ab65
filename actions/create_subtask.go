package actions

import (
	"context"
	"errors"
	"fmt"

	"github.com/taskloom/taskloom/plugin"
)

// CreateSubtask starts a child task in the same room and parks the parent
// in waiting until every child has ended; it then resumes with their
// outcomes. The store refuses, atomically, a subtask past the limits of
// PRODUCT §9 (the requestor's active tasks, plugin.MaxSubtasks children,
// plugin.MaxSubtaskDepth levels) and caps its token budget at what the
// parent has left.
type CreateSubtask struct {
	MaxActive int
	MaxTokens int64
}

var _ plugin.Action = CreateSubtask{}

func (CreateSubtask) Info() plugin.ActionInfo {
	return plugin.ActionInfo{
		Name:        "create_subtask",
		Description: "Split off part of the work as a subtask; this task waits until its subtasks have ended, then sees their outcomes.",
		Examples:    []string{`{"goal":"Write unit tests for the login endpoint","name":"Login tests"}`},
		Parameters:  schema(`{"type":"object","additionalProperties":false,"required":["goal"],"properties":{"goal":{"type":"string"},"name":{"type":"string"}}}`),
		Tool:        true,
	}
}

func (a CreateSubtask) Handle(ctx context.Context, call *plugin.Call) (plugin.Result, error) {
	task, refused := taskOf(call)
	if refused != nil {
		return *refused, nil
	}
	var p struct {
		Goal string `json:"goal"`
		Name string `json:"name"`
	}
	if r := decode(call.Params, &p); r != nil {
		return *r, nil
	}
	st := call.Runtime.Store()
	budget := a.MaxTokens
	maxActive := a.MaxActive
	if maxActive == 0 {
		maxActive = plugin.DefaultMaxActive
	}
	child, err := st.CreateTask(ctx, plugin.NewTask{
		Name: p.Name, Goal: p.Goal, RequestorID: task.RequestorID, Platform: task.Platform,
		RoomID: task.RoomID, WorkspaceID: task.WorkspaceID, ParentNumber: task.Number,
		MaxIterations: task.MaxIterations, MaxStaleIterations: task.MaxStaleIterations,
		MaxTokens: &budget, MaxActive: maxActive,
		Actor: fmt.Sprintf("task #%d", task.Number), Now: call.Runtime.Clock().Now(),
	})
	switch {
	case errors.Is(err, plugin.ErrLimit), errors.Is(err, plugin.ErrInvalid):
		return fail("Cannot create the subtask: %s.", reason(err))
	case err != nil:
		return plugin.Result{}, fmt.Errorf("create a subtask of #%d: %w", task.Number, err)
	}
	return plugin.Result{
		Success: true, TaskNumber: child.Number,
		Text: fmt.Sprintf("created subtask #%d %q", child.Number, child.Name),
		Wait: plugin.WaitSubtasks,
	}, nil
}
