package domain

import (
	"context"
	"encoding/json"
)

// A claim may run several tool calls (the tools strategy's reply of
// several calls, docs/strategies.md): each is a step of its own, with its
// own action, params, result and success, so a timeline can say that the
// write succeeded and the read after it failed. They share the claim's
// iteration and are told apart, in the order they ran, by Step.Call.
// Step(number, iteration) reads an iteration's first step, call 0, which
// is its only one unless a reply made several calls.

// StepCalls reads one step of an iteration that has several.
type StepCalls interface {
	// StepCall reads the step of task number's iteration whose Call is
	// call; ErrNotFound when there is none.
	StepCall(ctx context.Context, number int64, iteration, call int) (Step, error)
}

// callSteps completes the further steps of first's claim (Outcome.Steps)
// as Iterated completes first: same task, iteration, progress and time,
// numbered from call 1 in the order they ran.
func callSteps(first Step, more []Step) []Step {
	if len(more) == 0 {
		return nil
	}
	out := make([]Step, len(more))
	for i, s := range more {
		s.TaskNumber, s.Iteration, s.Progress, s.Time = first.TaskNumber, first.Iteration, first.Progress, first.Time
		s.Call = i + 1
		if len(s.Params) == 0 {
			s.Params = json.RawMessage(`{}`)
		}
		out[i] = s
	}
	return out
}

// SubtaskStep is the step of first's claim whose result tells of the
// subtasks the claim asked for: the last that ran create_subtask, or
// first when none did.
func SubtaskStep(first *Step, more []Step) *Step {
	for i := len(more) - 1; i >= 0; i-- {
		if more[i].Action == ActionCreateSubtask {
			return &more[i]
		}
	}
	return first
}

// ActionCreateSubtask is the action that asks for subtasks.
const ActionCreateSubtask = "create_subtask"
