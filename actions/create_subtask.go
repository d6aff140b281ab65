package actions

import (
	"context"
	"fmt"

	"github.com/taskloom/taskloom/plugin"
)

// Limits on subtasks, so an agent cannot fork without bound.
const (
	MaxSubtasks     = 10 // children of one task
	MaxSubtaskDepth = 3  // levels below a task a person created
)

// CreateSubtask starts a child task in the same room and parks the parent
// in waiting until every child has ended; it then resumes with their
// outcomes.
type CreateSubtask struct{}

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

func (CreateSubtask) Handle(ctx context.Context, call *plugin.Call) (plugin.Result, error) {
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
	n, err := st.CountTasks(ctx, plugin.TaskFilter{ParentNumber: task.Number})
	if err != nil {
		return plugin.Result{}, fmt.Errorf("count subtasks of #%d: %w", task.Number, err)
	}
	if n >= MaxSubtasks {
		return fail("Task #%d already has %d subtasks, the limit.", task.Number, n)
	}
	depth := 0
	for parent := task.ParentNumber; parent != 0; depth++ {
		if depth >= MaxSubtaskDepth-1 {
			return fail("Subtasks may nest only %d levels deep.", MaxSubtaskDepth)
		}
		pt, err := st.GetTask(ctx, parent)
		if err != nil {
			return plugin.Result{}, fmt.Errorf("parent of #%d: %w", task.Number, err)
		}
		parent = pt.ParentNumber
	}
	child, err := st.CreateTask(ctx, plugin.NewTask{
		Name: p.Name, Goal: p.Goal, RequestorID: task.RequestorID, Platform: task.Platform,
		RoomID: task.RoomID, WorkspaceID: task.WorkspaceID, ParentNumber: task.Number,
		MaxIterations: task.MaxIterations, MaxStaleIterations: task.MaxStaleIterations,
		Actor: fmt.Sprintf("task #%d", task.Number), Now: call.Runtime.Clock().Now(),
	})
	if err != nil {
		return fail("Cannot create the subtask: %v.", err)
	}
	return plugin.Result{
		Success: true, TaskNumber: child.Number,
		Text: fmt.Sprintf("created subtask #%d %q", child.Number, child.Name),
		Wait: plugin.WaitSubtasks,
	}, nil
}
