package actions

import (
	"context"
	"fmt"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// CreateSubtask asks for a child task in the same room and parks the
// parent in waiting until every child has ended; it then resumes with
// their outcomes.
//
// The child is not created while the tool runs: it goes with the
// iteration's result (plugin.Result.Subtasks) and the store creates it in
// the iteration's commit, so a worker that lost its lease creates nothing
// and a re-run iteration cannot make a second child. The store checks
// there, atomically, the limits of subtasks — the requestor's active
// tasks, domain.MaxSubtasks children, domain.MaxSubtaskDepth levels — and
// reserves the child's token budget from what the parent has left; it
// notes on the step the child's number, or why it was not created. The
// tool checks the same limits first, as the task stood when its iteration
// began, so that a request bound to be refused fails at once.
type CreateSubtask struct {
	MaxActive int
	MaxTokens int64
}

var _ plugin.Action = CreateSubtask{}

func (CreateSubtask) Info() plugin.ActionInfo {
	return plugin.ActionInfo{
		Name: "create_subtask",
		Description: "Split off part of the work as a subtask; this task waits until its subtasks have ended, then sees their outcomes. " +
			"A subtask's token budget (max_tokens; by default an even share of what this task has left, split among the subtasks asked in the same step, or a quarter of it for one asked alone) is held from this task's until the subtask ends.",
		Examples:   []string{`{"goal":"Write unit tests for the login endpoint","name":"Login tests"}`},
		Parameters: schema(`{"type":"object","additionalProperties":false,"required":["goal"],"properties":{"goal":{"type":"string"},"name":{"type":"string"},"max_tokens":{"type":"integer","minimum":1}}}`),
		Tool:       true,
		TaskOnly:   true,
	}
}

func (a CreateSubtask) Handle(ctx context.Context, call *plugin.Call) (plugin.Result, error) {
	task, refused := taskOf(call)
	if refused != nil {
		return *refused, nil
	}
	var p struct {
		Goal      string `json:"goal"`
		Name      string `json:"name"`
		MaxTokens int64  `json:"max_tokens"`
	}
	if r := decode(call.Params, &p); r != nil {
		return *r, nil
	}
	if p.MaxTokens < 0 {
		return fail("Cannot create the subtask: max_tokens is %d; leave it out or give a positive number.", p.MaxTokens)
	}
	// A subtask that names no budget under a parent that has one gets
	// its share of what the parent has left, split by the store among
	// the subtasks asked in the same step (domain.SubtaskBudgets): nil
	// says so. Under a parent without a budget it gets the default.
	budget := a.MaxTokens
	if p.MaxTokens > 0 && (budget == 0 || p.MaxTokens < budget) {
		budget = p.MaxTokens
	}
	maxTokens := &budget
	if p.MaxTokens == 0 && task.MaxTokens > 0 {
		maxTokens = nil
	}
	maxActive := a.MaxActive
	if maxActive == 0 {
		maxActive = domain.DefaultMaxActive
	}
	in := domain.NewTask{
		Name: p.Name, Goal: p.Goal, RequestorID: task.RequestorID, Platform: task.Platform,
		RoomID: task.RoomID, WorkspaceID: task.WorkspaceID, ParentNumber: task.Number,
		MaxIterations: task.MaxIterations, MaxStaleIterations: task.MaxStaleIterations,
		MaxTokens: maxTokens, MaxActive: maxActive,
		Actor: fmt.Sprintf("task #%d", task.Number), Now: call.Runtime.Clock().Now(),
	}
	row, err := domain.NewTaskRow(in)
	if err != nil {
		return fail("Cannot create the subtask: %s.", reason(err))
	}
	if why, err := subtaskRefusal(ctx, call.Runtime.Store(), *task, maxActive); err != nil {
		return plugin.Result{}, fmt.Errorf("check the limits of a subtask of #%d: %w", task.Number, err)
	} else if why != "" {
		return fail("Cannot create the subtask: %s.", why)
	}
	return plugin.Result{
		Success: true,
		Text:    fmt.Sprintf("subtask %q requested: it is created when this step is recorded, and its number is noted here then", row.Name),
		Wait:    domain.WaitSubtasks, Subtasks: []domain.NewTask{in},
	}, nil
}

// subtaskRefusal says why a subtask of task would be refused, as far as
// the store shows now ("" when it would not): the store checks again
// when it creates the child.
func subtaskRefusal(ctx context.Context, st domain.Store, task domain.Task, maxActive int) (string, error) {
	children, err := st.ListTasks(ctx, domain.TaskFilter{ParentNumber: task.Number})
	if err != nil {
		return "", err
	}
	if len(children) >= domain.MaxSubtasks {
		return fmt.Sprintf("task #%d already has %d subtasks (the limit is %d)", task.Number, len(children), domain.MaxSubtasks), nil
	}
	depth := 1
	for up := task; up.ParentNumber != 0; depth++ {
		if depth >= domain.MaxSubtaskDepth {
			return fmt.Sprintf("subtasks nest at most %d levels deep", domain.MaxSubtaskDepth), nil
		}
		if up, err = st.GetTask(ctx, up.ParentNumber); err != nil {
			return "", err
		}
	}
	if task.MaxTokens > 0 && domain.TokensLeft(task, children) <= 0 {
		return fmt.Sprintf("task #%d has no token budget left for a subtask (%d of its %d tokens spent, %d held by its running subtasks)",
			task.Number, task.Tokens(), task.MaxTokens, domain.TokensReserved(children)), nil
	}
	if task.RequestorID != "" && maxActive > 0 {
		n, err := st.CountTasks(ctx, domain.TaskFilter{RequestorID: task.RequestorID,
			Statuses: []domain.Status{domain.StatusQueued, domain.StatusRunning, domain.StatusPaused, domain.StatusWaiting}})
		if err != nil {
			return "", err
		}
		if n >= maxActive {
			return fmt.Sprintf("the requestor already has %d tasks that have not ended (the limit is %d)", n, maxActive), nil
		}
	}
	return "", nil
}
