package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"unicode/utf8"

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
	// Temperature is the base temperature of a request; each failed step
	// in a row adds StressStep, up to 1 (xaibo's stress level).
	Temperature float64
}

// DefaultTemperature is TASKLOOM_TEMPERATURE's default; StressStep is what
// each failed step in a row adds to it.
const (
	DefaultTemperature = 0.2
	StressStep         = 0.1
)

// ModelFailure is the error Run returns when the model could not be used
// at all (it did not answer, or refused the request): not the task's
// failure, so no step is recorded and the caller releases the task.
type ModelFailure struct {
	Class plugin.ModelErrorClass
	Err   error
}

func (e *ModelFailure) Error() string { return fmt.Sprintf("model %s: %v", e.Class, e.Err) }
func (e *ModelFailure) Unwrap() error { return e.Err }

// Run gives a claimed task one iteration: build the prompt, make the one
// model call, parse the decision, run the chosen tool, and return the
// outcome. Nothing here fails the task outright: a reply that is not a
// decision, an unknown tool or a tool error each become a failed step
// whose progress does not count, so the stale counter — not a crash —
// ends a task that cannot go on. A model that cannot be used at all is
// not the task's doing: Run returns a *ModelFailure and no outcome.
func (it *Iterator) Run(ctx context.Context, task plugin.Task) (plugin.Outcome, error) {
	rt := it.Runtime
	o := plugin.Outcome{Owner: task.LeaseOwner, Fence: task.Fence, Progress: task.Progress, Verdict: plugin.VerdictContinue}
	finish := func() (plugin.Outcome, error) {
		o.Now = rt.Clock().Now()
		if len(o.Step.Result) > plugin.MaxResultBytes {
			o.Step.Result = clipBytes(o.Step.Result, plugin.MaxResultBytes)
		}
		return o, nil
	}
	failStep := func(action, reason string) (plugin.Outcome, error) {
		o.Step.Action, o.Step.Success, o.Step.Error = action, false, reason
		o.Progress, o.Verdict = task.Progress, plugin.VerdictContinue
		return finish()
	}

	msgs, steps, err := it.prompt(ctx, task)
	if err != nil {
		return failStep("", "could not build the prompt: "+err.Error())
	}
	temp := float32(StressTemperature(it.Temperature, steps))
	start := rt.Clock().Now()
	resp, err := rt.UseModel(ctx, plugin.ModelText, plugin.ModelRequest{
		Messages:    msgs,
		Schema:      DecisionSchema,
		Temperature: &temp,
		Task:        &plugin.TaskRef{Number: task.Number, Goal: task.Goal, Iteration: task.Iteration + 1, Progress: task.Progress},
	})
	if it.Metrics != nil {
		it.Metrics.ModelRequest(rt.Clock().Now().Sub(start), resp.Usage)
	}
	o.PromptTokens, o.CompletionTokens = resp.Usage.PromptTokens, resp.Usage.CompletionTokens
	if err != nil {
		class := plugin.ClassifyModelError(err)
		if class == plugin.ModelCanceled && clock.TimedOut(ctx) {
			class = plugin.ModelTransient // the iteration's own budget ran out
		}
		return plugin.Outcome{}, &ModelFailure{Class: class, Err: err}
	}
	d, err := ParseDecision(resp.Text)
	if err != nil {
		o.Step.Result = clip(resp.Text, 2000)
		return failStep("", "the model's reply is not a usable decision: "+err.Error())
	}
	o.Step.Thought, o.Step.Action, o.Step.Params = d.Thought, d.Action, d.Params
	o.Progress, o.Verdict, o.Summary = d.Progress, d.Status, d.Summary
	if len(steps) > 0 && d.Action != "" && sameStep(steps[len(steps)-1], d.Action, d.Params) {
		o.Repeated = true // the stall guard: the same step again is no progress
	}
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

func (it *Iterator) prompt(ctx context.Context, task plugin.Task) ([]plugin.ChatMessage, []plugin.Step, error) {
	st := it.Runtime.Store()
	steps, err := st.Steps(ctx, task.Number)
	if err != nil {
		return nil, nil, fmt.Errorf("steps of task #%d: %w", task.Number, err)
	}
	events, err := st.TaskEvents(ctx, task.Number, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("events of task #%d: %w", task.Number, err)
	}
	msgs, err := BuildIterationPrompt(PromptInput{
		System:  it.Runtime.Character().SystemPrompt(),
		Tools:   ToolsOf(it.Runtime),
		Task:    task,
		Steps:   steps,
		Answers: answersFrom(events),
		History: it.History,
	})
	return msgs, steps, err
}

// StressTemperature is base plus StressStep for every failed step at the
// end of steps, at most 1: a model that keeps failing is nudged off its
// rut, and back to base after a success.
func StressTemperature(base float64, steps []plugin.Step) float64 {
	t := base
	for i := len(steps) - 1; i >= 0 && !steps[i].Success; i-- {
		t += StressStep
	}
	return math.Round(min(t, 1)*100) / 100
}

// sameStep reports whether a decision repeats step: the same action with
// the same params, as JSON values.
func sameStep(step plugin.Step, action string, params json.RawMessage) bool {
	if step.Action != action {
		return false
	}
	var a, b any
	if json.Unmarshal(step.Params, &a) != nil || json.Unmarshal(params, &b) != nil {
		return bytes.Equal(step.Params, params)
	}
	return reflect.DeepEqual(a, b)
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// clipBytes cuts s to at most n bytes without splitting a UTF-8 sequence.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
