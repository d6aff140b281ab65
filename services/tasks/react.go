package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// react is xaibo's ReAct orchestrator as a strategy (docs/strategies.md): a
// task's claims cycle THOUGHT → ACTION → OBSERVATION, one model call
// each. A thought sees no tools; an action runs one tool (Turn.Act) or
// gives the final answer, which completes the task; an observation reads
// the action's result and estimates progress. Only observations are
// judged — the stale and done rules apply there — and max_iterations
// counts cycles.
//
// The task's Phase is the phase of its next claim ("" is a thought); its
// State (reactState) carries the cycle's thought to its action and
// observation, and the observation to the next cycle's thought.
type react struct{}

// The temperatures of react's phases (xaibo's): free thinking and
// observing, a careful action.
const (
	reactReasonTemperature = 0.7
	reactActTemperature    = 0.3
)

// reactState is what a react task keeps between its claims.
type reactState struct {
	// Cycle is the cycle the task's next claim belongs to, from 1.
	Cycle int `json:"cycle"`
	// Thought is this cycle's thought, for its action and observation.
	Thought string `json:"thought,omitempty"`
	// Observation is the last cycle's observation, for the next thought.
	Observation string `json:"observation,omitempty"`
	// Step and Action are this cycle's tool call (its step's iteration
	// and tool), for its observation; zero when none ran.
	Step   int    `json:"step,omitempty"`
	Action string `json:"action,omitempty"`
	// Repeated says this cycle's action repeats the last cycle's: its
	// observation counts no progress, whatever it claims (the stall
	// guard).
	Repeated bool `json:"repeated,omitempty"`
}

// The schemas of react's replies (docs/strategies.md's wire shapes).
var (
	reactThoughtSchema = &plugin.JSONSchema{Name: "react_thought", Strict: true, Schema: json.RawMessage(
		`{"type":"object","additionalProperties":false,"required":["thought"],` +
			`"properties":{"thought":{"type":"string","description":"what you know, what is missing, what to do next"}}}`)}
	// Params stay free-form (each tool has its own schema, in the
	// prompt), so this one is not strict.
	reactActionSchema = &plugin.JSONSchema{Name: "react_action", Schema: json.RawMessage(
		`{"type":"object","properties":{` +
			`"action":{"type":"string","description":"the tool to run"},` +
			`"params":{"type":"object","description":"the tool's parameters"},` +
			`"final_answer":{"type":"string","description":"only when the goal is met: what was achieved"}}}`)}
	reactObservationSchema = &plugin.JSONSchema{Name: "react_observation", Strict: true, Schema: json.RawMessage(
		`{"type":"object","additionalProperties":false,"required":["observation","progress","status"],` +
			`"properties":{` +
			`"observation":{"type":"string","description":"what the action's result shows"},` +
			`"progress":{"type":"integer","minimum":0,"maximum":100,"description":"estimated percent of the goal done now"},` +
			`"status":{"type":"string","enum":["continue","done","stuck"]}}}`)}
)

// Claim takes the task's next phase.
func (react) Claim(ctx context.Context, t *Turn) (domain.Outcome, error) {
	st := readReactState(t.Task.State)
	switch t.Task.Phase {
	case domain.RoleAction:
		return reactAct(ctx, t, st)
	case domain.RoleObservation:
		return reactObserve(ctx, t, st)
	default:
		return reactThink(ctx, t, st)
	}
}

// readReactState reads a react task's state; a task that has none (its
// first claim) or an unreadable one starts at cycle 1.
func readReactState(raw string) reactState {
	var st reactState
	if raw != "" {
		_ = json.Unmarshal([]byte(raw), &st)
	}
	st.Cycle = max(st.Cycle, 1)
	return st
}

// reactNext ends o's claim with the task at phase, keeping st.
func reactNext(o *domain.Outcome, phase string, st reactState) {
	raw, err := json.Marshal(st)
	if err != nil {
		raw = []byte(`{}`) // a struct of strings, ints and a bool always encodes
	}
	o.Phase, o.State = phase, string(raw)
}

// reactThink is a THOUGHT claim: no tools, no progress estimate.
func reactThink(ctx context.Context, t *Turn, st reactState) (domain.Outcome, error) {
	o := t.Outcome()
	o.Step.Role, o.Unjudged, o.Cycle = domain.RoleThought, true, st.Cycle
	notes := []string{reactCycleNote(t, st)}
	if st.Observation != "" {
		notes = append(notes, "Your observation at the end of the last cycle: "+st.Observation)
	}
	temp := reactReasonTemperature
	resp, err := t.Ask(ctx, &o, Request{
		Role: domain.RoleThought, System: "react_thought.tmpl", Tools: []Tool{}, Notes: notes,
		Instruction: `Think about the next step. Reply with {"thought": "…"}.`,
		Schema:      reactThoughtSchema, Temperature: &temp,
	})
	if err != nil {
		return domain.Outcome{}, err
	}
	thought, err := parseThought(resp.Text)
	st = reactState{Cycle: st.Cycle, Thought: thought}
	if err != nil {
		o.Step.Result = clip(resp.Text, 2000)
		t.Fail(&o, "", "the model's reply is not a usable thought: "+err.Error())
	} else {
		o.Step.Thought, o.Step.Success = thought, true
	}
	reactNext(&o, domain.RoleAction, st)
	return o, nil
}

// reactAct is an ACTION claim: one tool call, or the final answer that
// completes the task. It estimates no progress.
func reactAct(ctx context.Context, t *Turn, st reactState) (domain.Outcome, error) {
	o := t.Outcome()
	o.Step.Role, o.Unjudged, o.Cycle = domain.RoleAction, true, st.Cycle
	note := "You have no thought for this cycle: choose from where the task stands."
	if st.Thought != "" {
		note = "Your thought for this cycle: " + st.Thought
	}
	temp := reactActTemperature
	resp, err := t.Ask(ctx, &o, Request{
		Role: domain.RoleAction, System: "react_action.tmpl", Notes: []string{reactCycleNote(t, st), note},
		Instruction: `Carry out your thought with one tool call, or give the final answer if the goal is met. ` +
			`Reply with {"action": "…", "params": {…}} or {"final_answer": "…"}.`,
		Schema: reactActionSchema, Temperature: &temp,
	})
	if err != nil {
		return domain.Outcome{}, err
	}
	st.Step, st.Action, st.Repeated = 0, "", false
	mv, err := parseReactAction(resp.Text)
	switch {
	case err != nil:
		o.Step.Result = clip(resp.Text, 2000)
		t.Fail(&o, "", "the model's reply is not a usable action: "+err.Error())
	case mv.final != "":
		o.Step.Success, o.Step.Result = true, mv.final
		o.Verdict, o.Summary = domain.VerdictDone, mv.final
		return o, nil
	default:
		if prev, ok := lastStepOf(t.Steps, domain.RoleAction); ok && sameStep(prev, mv.action, mv.params) {
			st.Repeated = true
		}
		st.Step, st.Action = t.Task.Iteration+1, mv.action
		t.Act(ctx, &o, mv.action, mv.params)
	}
	reactNext(&o, domain.RoleObservation, st)
	return o, nil
}

// reactObserve is an OBSERVATION claim: the cycle's judged claim, which
// estimates progress and may end the task done or stuck.
func reactObserve(ctx context.Context, t *Turn, st reactState) (domain.Outcome, error) {
	o := t.Outcome()
	o.Step.Role, o.Cycle = domain.RoleObservation, st.Cycle
	notes := []string{reactCycleNote(t, st)}
	if st.Thought != "" {
		notes = append(notes, "Your thought for this cycle: "+st.Thought)
	}
	if st.Step > 0 {
		notes = append(notes, fmt.Sprintf("This cycle's action is step %d (%s): its result is the latest step above.", st.Step, st.Action))
	} else {
		notes = append(notes, "This cycle's action did not run a tool: the latest step above says why.")
	}
	temp := reactReasonTemperature
	resp, err := t.Ask(ctx, &o, Request{
		Role: domain.RoleObservation, System: "react_observation.tmpl", Tools: []Tool{}, Notes: notes,
		Instruction: `Observe what the action's result shows and judge how far the task has come. ` +
			`Reply with {"observation": "…", "progress": <0-100>, "status": "continue" | "done" | "stuck"}.`,
		Schema: reactObservationSchema, Temperature: &temp,
	})
	if err != nil {
		return domain.Outcome{}, err
	}
	obs, err := parseObservation(resp.Text)
	if err != nil {
		// A cycle whose observation is unusable made no progress.
		o.Step.Result = clip(resp.Text, 2000)
		t.Fail(&o, "", "the model's reply is not a usable observation: "+err.Error())
	} else {
		o.Step.Thought, o.Step.Success = obs.text, true
		o.Progress, o.Verdict, o.Repeated = obs.progress, obs.status, st.Repeated
		switch obs.status {
		case domain.VerdictDone:
			o.Summary = obs.text
		case domain.VerdictStuck:
			o.Reason = obs.text
		}
	}
	reactNext(&o, domain.RoleThought, reactState{Cycle: st.Cycle + 1, Observation: obs.text})
	return o, nil
}

// reactCycleNote says which cycle the claim belongs to: the prompt's
// iteration counts claims, the task's limit counts cycles.
func reactCycleNote(t *Turn, st reactState) string {
	return fmt.Sprintf("This is cycle %d of at most %d; each cycle is a thought, an action and an observation.", st.Cycle, t.Task.MaxIterations)
}

// lastStepOf is the latest of steps in role.
func lastStepOf(steps []domain.Step, role string) (domain.Step, bool) {
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i].Role == role {
			return steps[i], true
		}
	}
	return domain.Step{}, false
}

// parseThought reads a thought: {"thought": …}, fenced or embedded, or
// — from a model that ignores the format — the whole reply when it holds
// no JSON object.
func parseThought(text string) (string, error) {
	var raw struct {
		Thought any `json:"thought"`
	}
	if err := domain.DecodeJSONObject(text, &raw); err != nil {
		if s := strings.TrimSpace(text); s != "" && !strings.Contains(s, "{") {
			return s, nil
		}
		return "", fmt.Errorf("%w: %v", ErrBadDecision, err)
	}
	if s := textOf(raw.Thought); s != "" {
		return s, nil
	}
	return "", fmt.Errorf("%w: it has no thought", ErrBadDecision)
}

// reactMove is an ACTION reply: a tool call or the final answer.
type reactMove struct {
	action string
	params json.RawMessage
	final  string
}

// parseReactAction reads {"action": …, "params": {…}} or
// {"final_answer": …} as robustly as ParseDecision reads a decision.
func parseReactAction(text string) (reactMove, error) {
	var raw struct {
		Action      json.RawMessage `json:"action"`
		Params      json.RawMessage `json:"params"`
		FinalAnswer any             `json:"final_answer"`
	}
	if err := domain.DecodeJSONObject(text, &raw); err != nil {
		return reactMove{}, fmt.Errorf("%w: %v", ErrBadDecision, err)
	}
	if s := textOf(raw.FinalAnswer); s != "" {
		return reactMove{final: s}, nil
	}
	action, err := actionName(raw.Action)
	if err != nil {
		return reactMove{}, err
	}
	if action == "" {
		return reactMove{}, fmt.Errorf("%w: it names no action and gives no final answer", ErrBadDecision)
	}
	p, err := params(raw.Params)
	if err != nil {
		return reactMove{}, err
	}
	return reactMove{action: action, params: p}, nil
}

// observation is an OBSERVATION reply.
type observation struct {
	text     string
	progress int
	status   domain.Verdict
}

// parseObservation reads {"observation", "progress", "status"}, with
// progress and status read as ParseDecision reads them.
func parseObservation(text string) (observation, error) {
	var raw struct {
		Observation any             `json:"observation"`
		Progress    json.RawMessage `json:"progress"`
		Status      string          `json:"status"`
	}
	if err := domain.DecodeJSONObject(text, &raw); err != nil {
		return observation{}, fmt.Errorf("%w: %v", ErrBadDecision, err)
	}
	obs := observation{text: textOf(raw.Observation)}
	if obs.text == "" {
		return observation{}, fmt.Errorf("%w: it has no observation", ErrBadDecision)
	}
	var err error
	if obs.progress, err = progress(raw.Progress); err != nil {
		return observation{}, err
	}
	if obs.status, err = verdict(raw.Status); err != nil {
		return observation{}, err
	}
	return obs, nil
}

// textOf is a reply field as text: a string trimmed, anything else but
// null as its JSON.
func textOf(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return strings.TrimSpace(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}
