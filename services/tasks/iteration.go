package tasks

import (
	"context"
	"errors"
	"fmt"

	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/plugin"
)

// Iterator runs one agent iteration of a claimed task. It does not commit:
// the caller applies the Outcome under its lease.
type Iterator struct {
	Runtime *plugin.Runtime
	History History
	// Metrics, when set, observes the model call.
	Metrics Metrics
}

// Run gives a claimed task one iteration: build the prompt, make the one
// model call, parse the decision, run the chosen tool, and return the
// outcome. Nothing here fails the task outright: a model error, a reply
// that is not a decision, an unknown tool or a tool error each become a
// failed step whose progress does not count, so the stale counter — not a
// crash — ends a task that cannot go on.
func (it *Iterator) Run(ctx context.Context, task plugin.Task) plugin.Outcome {
	rt := it.Runtime
	o := plugin.Outcome{Owner: task.LeaseOwner, Fence: task.Fence, Progress: task.Progress, Verdict: plugin.VerdictContinue}
	finish := func() plugin.Outcome {
		o.Now = rt.Clock().Now()
		return o
	}
	failStep := func(action, reason string) plugin.Outcome {
		o.Step.Action, o.Step.Success, o.Step.Error = action, false, reason
		o.Progress, o.Verdict = task.Progress, plugin.VerdictContinue
		return finish()
	}

	msgs, err := it.prompt(ctx, task)
	if err != nil {
		return failStep("", "could not build the prompt: "+err.Error())
	}
	start := rt.Clock().Now()
	resp, err := rt.UseModel(ctx, plugin.ModelText, plugin.ModelRequest{
		Messages: msgs,
		Schema:   DecisionSchema,
		Task:     &plugin.TaskRef{Number: task.Number, Goal: task.Goal, Iteration: task.Iteration + 1, Progress: task.Progress},
	})
	if it.Metrics != nil {
		it.Metrics.ModelRequest(rt.Clock().Now().Sub(start), resp.Usage)
	}
	o.PromptTokens, o.CompletionTokens = resp.Usage.PromptTokens, resp.Usage.CompletionTokens
	if err != nil {
		reason := "the model call failed: " + err.Error()
		if clock.TimedOut(ctx) {
			reason = "the model did not answer in time"
		}
		return failStep("", reason)
	}
	d, err := ParseDecision(resp.Text)
	if err != nil {
		o.Step.Result = clip(resp.Text, 2000)
		return failStep("", "the model's reply is not a usable decision: "+err.Error())
	}
	o.Step.Thought, o.Step.Action, o.Step.Params = d.Thought, d.Action, d.Params
	o.Progress, o.Verdict, o.Summary = d.Progress, d.Status, d.Summary
	if d.Status == plugin.VerdictStuck {
		o.Reason = firstNonEmpty(d.Summary, d.Thought)
	}
	if d.Action == "" {
		o.Step.Success = true
		o.Step.Result = "no action"
		return finish()
	}
	a, ok := rt.Action(d.Action)
	if !ok || !a.Info().Tool {
		return failStep(d.Action, fmt.Sprintf("%q is not a tool this task can use", d.Action))
	}
	t := task
	res, err := rt.RunAction(ctx, d.Action, &plugin.Call{Task: &t, Params: d.Params})
	switch {
	case err != nil:
		var ae *plugin.ActionError
		reason := err.Error()
		if errors.As(err, &ae) && ae.Refused {
			reason = ae.Err.Error()
		}
		o.Step.Result = res.Text
		return failStep(d.Action, reason)
	case !res.Success:
		o.Step.Result = res.Text
		return failStep(d.Action, firstNonEmpty(res.Error, "the tool reported a failure"))
	}
	o.Step.Success, o.Step.Result, o.Wait, o.Notifications = true, res.Text, res.Wait, res.Notifications
	return finish()
}

func (it *Iterator) prompt(ctx context.Context, task plugin.Task) ([]plugin.ChatMessage, error) {
	st := it.Runtime.Store()
	steps, err := st.Steps(ctx, task.Number)
	if err != nil {
		return nil, fmt.Errorf("steps of task #%d: %w", task.Number, err)
	}
	events, err := st.TaskEvents(ctx, task.Number, 0)
	if err != nil {
		return nil, fmt.Errorf("events of task #%d: %w", task.Number, err)
	}
	return BuildIterationPrompt(PromptInput{
		System:  it.Runtime.Character().SystemPrompt(),
		Tools:   ToolsOf(it.Runtime),
		Task:    task,
		Steps:   steps,
		Answers: answersFrom(events),
		History: it.History,
	})
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
