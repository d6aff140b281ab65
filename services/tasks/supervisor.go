package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// supervisor is ElGraph's supervisor (docs/strategies.md): claims alternate
// between the supervisor, who picks the agent that acts next and tells it
// what to do (or says DONE), and that agent's one step, taken with the
// shared transcript and only its own tools. The task's Phase says whose
// turn it is ("supervisor" or an agent's name) and its State holds the
// instruction until the agent's step commits, so a claim whose lease was
// lost is redone, never applied twice: its result is refused by the
// fence and the next claim finds the phase it left.
//
// With a ledger it is magentic (see magentic.go).
type supervisor struct{ magentic bool }

func (s supervisor) Claim(ctx context.Context, t *Turn) (domain.Outcome, error) {
	tt := newTeamTurn(t)
	switch phase := t.Task.Phase; phase {
	case "", domain.RoleSupervisor:
		return tt.decide(ctx, s.magentic)
	default:
		a, ok := tt.team.agent(phase)
		if !ok {
			// The team changed while the task waited for this agent.
			o := tt.Outcome()
			o.Step.Role = domain.RoleSupervisor
			tt.Fail(&o, phase, fmt.Sprintf("the supervisor handed the step to %q, which is no longer one of the agents (%s); it chooses again", phase, tt.team.listed()))
			st := tt.state
			st.Instruction = ""
			o.Phase, o.State = domain.RoleSupervisor, st.encode()
			return o, nil
		}
		return tt.supervised(ctx, a)
	}
}

// SupervisorDecision is the supervisor's reply (docs/strategies.md): the agent
// that acts next, or DONE, and what it should do; in magentic also the
// facts and the plan of its ledger.
type SupervisorDecision struct {
	Thought     string
	Next        string // an agent's name, or NextDone
	Instruction string
	Summary     string
	// Facts replace the ledger's when not nil; Plan replaces its plan
	// when not empty.
	Facts []string
	Plan  string
}

// ErrBadSupervisorDecision marks a supervisor's reply that is not a
// usable decision.
var ErrBadSupervisorDecision = errors.New("unusable supervisor decision")

// ParseSupervisorDecision reads a supervisor's reply as ParseDecision
// reads the loop's: a JSON object as is, fenced, or embedded in prose. next is
// required; "done" in any case is NextDone; an instruction left out is the
// thought. facts may be a list or one string, plan a string or a list of
// steps. It never panics; anything unusable is an
// ErrBadSupervisorDecision saying why. Whether next names an agent is
// the caller's to check.
func ParseSupervisorDecision(text string) (SupervisorDecision, error) {
	var raw struct {
		Thought     string          `json:"thought"`
		Next        json.RawMessage `json:"next"`
		Instruction string          `json:"instruction"`
		Summary     string          `json:"summary"`
		Facts       json.RawMessage `json:"facts"`
		Plan        json.RawMessage `json:"plan"`
	}
	if err := domain.DecodeJSONObject(text, &raw); err != nil {
		return SupervisorDecision{}, fmt.Errorf("%w: %v", ErrBadSupervisorDecision, err)
	}
	d := SupervisorDecision{Thought: strings.TrimSpace(raw.Thought), Instruction: strings.TrimSpace(raw.Instruction),
		Summary: strings.TrimSpace(raw.Summary)}
	var next string
	if len(raw.Next) > 0 && string(raw.Next) != "null" {
		if err := json.Unmarshal(raw.Next, &next); err != nil {
			return SupervisorDecision{}, fmt.Errorf("%w: next is not a string", ErrBadSupervisorDecision)
		}
	}
	d.Next = strings.TrimSpace(next)
	switch {
	case d.Next == "":
		return SupervisorDecision{}, fmt.Errorf("%w: it names no next agent (or DONE)", ErrBadSupervisorDecision)
	case strings.EqualFold(d.Next, NextDone):
		d.Next = NextDone
	}
	d.Instruction = firstNonEmpty(d.Instruction, d.Thought)
	var err error
	if d.Facts, err = textList(raw.Facts); err != nil {
		return SupervisorDecision{}, fmt.Errorf("%w: facts: %v", ErrBadSupervisorDecision, err)
	}
	plan, err := textList(raw.Plan)
	if err != nil {
		return SupervisorDecision{}, fmt.Errorf("%w: plan: %v", ErrBadSupervisorDecision, err)
	}
	d.Plan = strings.Join(plan, "\n")
	return d, nil
}

// textList reads a list of strings, or one string as a list of one; nil
// when absent or null. Blank entries are dropped.
func textList(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one = strings.TrimSpace(one); one == "" {
			return []string{}, nil
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, errors.New("not a string or a list of strings")
	}
	out := []string{}
	for _, s := range many {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// supervisorSchema is the JSON Schema of a supervisor's reply for a team:
// next is one of its agents or DONE; with a ledger, facts and plan too.
func supervisorSchema(tm team, ledger bool) *plugin.JSONSchema {
	props := map[string]any{
		"thought":     map[string]any{"type": "string", "description": "one or two sentences of reasoning"},
		"next":        map[string]any{"type": "string", "enum": append(tm.names(), NextDone), "description": "the agent that acts next, or DONE when the goal is met"},
		"instruction": map[string]any{"type": "string", "description": "what that agent should do in its next step, specifically"},
		"summary":     map[string]any{"type": "string", "description": "when DONE: what was achieved"},
	}
	required := []string{"thought", "next", "instruction", "summary"}
	name := "supervisor_decision"
	if ledger {
		props["facts"] = map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "the facts known so far, all of them (they replace the ledger's)"}
		props["plan"] = map[string]any{"type": "string", "description": "the plan, when it changes; empty keeps the ledger's"}
		required = append(required, "facts", "plan")
		name = "magentic_decision"
	}
	raw, err := json.Marshal(map[string]any{"type": "object", "additionalProperties": false, "required": required, "properties": props})
	if err != nil {
		panic(err) // maps of strings: always encodes
	}
	return &plugin.JSONSchema{Name: name, Schema: raw}
}

// decide is the supervisor's turn: one decision, which hands the next
// step to an agent (its Phase) with an instruction (State), or ends the
// task with DONE. A decision estimates no progress (Unjudged); a reply
// that is not a decision, or names no agent, is a failed step that counts
// as one without progress, as the loop's does. Every reply counts toward
// max_steps; the agent step after the last one allowed ends the task in
// stalemate unless it is DONE.
func (tt *teamTurn) decide(ctx context.Context, magentic bool) (domain.Outcome, error) {
	o := tt.Outcome()
	o.Step.Role, o.Unjudged = domain.RoleSupervisor, true
	st := tt.state
	st.Decisions++
	var led Ledger
	var notes []string
	if magentic {
		led = ledgerOf(tt.Task)
		notes = append(notes, led.note(tt.team.MaxStalls))
		if st.Replan {
			notes = append(notes, replanNote)
		}
	}
	resp, err := tt.ask(ctx, &o, Request{Role: domain.RoleSupervisor, Tools: []Tool{}, History: &SupervisorHistory, Notes: tt.notes(SupervisorHistory, notes...),
		Instruction: "Choose the agent that takes the next step and tell it what to do, or answer DONE with a summary when the goal is met.",
		Schema:      supervisorSchema(tt.team, magentic)},
		"supervisor_system.tmpl", map[string]any{"Agents": tt.team.views(), "Magentic": magentic})
	if err != nil {
		return domain.Outcome{}, err
	}
	fail := func(action, reason string) (domain.Outcome, error) {
		o.Unjudged = false // a bad reply is a step without progress
		tt.Fail(&o, action, reason)
		o.Phase, o.State = domain.RoleSupervisor, st.encode()
		if st.Decisions >= tt.team.MaxSteps {
			o.Stalemate = tt.maxStepsReason()
		}
		return o, nil
	}
	d, err := ParseSupervisorDecision(resp.Text)
	if err != nil {
		o.Step.Result = clip(resp.Text, 2000)
		return fail("", "the supervisor's reply is not a usable decision: "+err.Error())
	}
	o.Step.Thought = d.Thought
	o.Step.Params = instructionParams(d.Instruction)
	if magentic && st.Replan && d.Plan == "" {
		return fail("replan", "the supervisor was asked to replan and gave no new plan")
	}
	var a Agent
	if d.Next != NextDone {
		var ok bool
		if a, ok = tt.team.agent(d.Next); !ok {
			return fail(d.Next, fmt.Sprintf("the supervisor chose %q, which is not one of the agents; %s", d.Next, tt.team.listed()))
		}
	}
	if magentic {
		led.update(d)
		if st.Replan {
			st.Replan, st.Replanned = false, true
		}
		o.Ledger = led.encode()
	}
	if d.Next == NextDone {
		o.Step.Action, o.Step.Success, o.Step.Result = NextDone, true, "the supervisor says the goal is met"
		o.Verdict, o.Summary = domain.VerdictDone, firstNonEmpty(d.Summary, d.Instruction, d.Thought)
		o.Phase, o.State = domain.RoleSupervisor, st.encode()
		return o, nil
	}
	if magentic {
		if stalled := tt.stall(&o, &led, &st, a); stalled {
			if o.Stalemate == "" && st.Decisions >= tt.team.MaxSteps {
				// A stall on the last decision allowed: no replan
				// turn is left to make.
				o.Stalemate = tt.maxStepsReason()
			}
			return o, nil
		}
	}
	// The step's action names the agent and its params the instruction:
	// the transcript needs no result to say so again.
	o.Step.Action, o.Step.Success = a.Name, true
	st.Instruction = d.Instruction
	o.Phase, o.State = a.Name, st.encode()
	return o, nil
}

// supervised is an agent's step after the supervisor handed it the
// turn: the supervisor's instruction is in its prompt. An agent's done or
// stuck is its report to the supervisor, who decides the task's end; the
// turn goes back to the supervisor either way.
func (tt *teamTurn) supervised(ctx context.Context, a Agent) (domain.Outcome, error) {
	note := fmt.Sprintf("The supervisor hands this step to you, %s, with the instruction:\n%s", a.Name, firstNonEmpty(tt.state.Instruction, "(none: work toward the goal)"))
	instruction := fmt.Sprintf("Take one step toward that instruction as %s: one action with one of your tools, or status \"done\" (or \"stuck\") with a summary for the supervisor when you have carried it out (or cannot).", a.Name)
	o, d, err := tt.agentStep(ctx, a, note, instruction)
	if err != nil {
		return domain.Outcome{}, err
	}
	reportBack(&o, d)
	st := tt.state
	st.Instruction = ""
	o.Phase, o.State = domain.RoleSupervisor, st.encode()
	if st.Decisions >= tt.team.MaxSteps && o.Verdict == domain.VerdictContinue {
		o.Stalemate = tt.maxStepsReason()
	}
	return o, nil
}

func (tt *teamTurn) maxStepsReason() string {
	return fmt.Sprintf("the supervisor made its %d decisions (max_steps) without saying DONE", tt.team.MaxSteps)
}

// instructionParams are a supervisor step's params: the instruction it
// gave.
func instructionParams(instruction string) json.RawMessage {
	raw, err := json.Marshal(map[string]string{"instruction": instruction})
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return raw
}
