package tasks

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/taskloom/taskloom/domain"
)

// magentic is Magentic-One's orchestrator on ElGraph's magentic template
// (docs/strategies.md): the supervisor of supervisor.go with a ledger kept on the
// task — the facts gathered, the plan, the agent chosen last and how many
// times in a row. The ledger is in the supervisor's prompt and its
// replies may rewrite facts and plan. The same agent chosen more than
// max_stalls times in a row is a stall: the first makes the supervisor
// replan once (Magentic-One's outer loop: new plan, stalls reset), the
// second ends the task in stalemate.
func magentic() Strategy { return supervisor{magentic: true} }

// Ledger is magentic's ledger, the task's Ledger as JSON (the API shows
// it as ledger).
type Ledger struct {
	Facts  []string `json:"facts"`
	Plan   string   `json:"plan"`
	Chosen string   `json:"chosen"`
	Stalls int      `json:"stalls"`
}

// Bounds of the ledger, so the supervisor's prompt stays bounded however
// long the task runs.
const (
	maxFacts     = 20
	maxFactChars = 300
	maxPlanChars = 2000
)

func ledgerOf(t domain.Task) Ledger {
	l := Ledger{Facts: []string{}}
	if t.Ledger != "" {
		_ = json.Unmarshal([]byte(t.Ledger), &l) // a ledger this strategy did not write starts afresh
	}
	if l.Facts == nil {
		l.Facts = []string{}
	}
	return l
}

func (l Ledger) encode() string {
	raw, err := json.Marshal(l)
	if err != nil {
		return "{}" // strings and an int always encode
	}
	return string(raw)
}

// update takes a decision's facts (all of them: they replace the
// ledger's, the latest maxFacts kept) and plan; an empty list or plan
// leaves the ledger's as it is.
func (l *Ledger) update(d SupervisorDecision) {
	if len(d.Facts) > 0 {
		facts := d.Facts[max(0, len(d.Facts)-maxFacts):]
		l.Facts = make([]string, len(facts))
		for i, f := range facts {
			l.Facts[i] = clip(oneLine(f, maxFactChars), maxFactChars)
		}
	}
	if d.Plan != "" {
		l.Plan = clip(d.Plan, maxPlanChars)
	}
}

// note is the ledger as the supervisor's prompt shows it.
func (l Ledger) note(maxStalls int) string {
	var b strings.Builder
	b.WriteString("Your ledger:\nFacts:")
	if len(l.Facts) == 0 {
		b.WriteString(" none yet.")
	}
	for _, f := range l.Facts {
		b.WriteString("\n- " + f)
	}
	b.WriteString("\nPlan:")
	if l.Plan == "" {
		b.WriteString(" none yet: make one (plan).")
	} else {
		b.WriteString("\n" + l.Plan)
	}
	if l.Chosen != "" {
		fmt.Fprintf(&b, "\nChosen last: %s, %d time(s) in a row. Choosing the same agent more than %d times in a row is a stall: the first makes you replan, the second ends the task.",
			l.Chosen, l.Stalls, maxStalls)
	}
	return b.String()
}

// replanNote asks the supervisor for its one replan.
const replanNote = "Replan: you chose the same agent too many times in a row, so the plan is not working. " +
	"Revise the facts and give a new plan (plan is required in this reply), then choose the agent that takes the next step of it."

// stall counts a's choice in the ledger and reports whether it is a
// stall, in which case o is the claim's outcome: a replan step (the
// first; a is not handed the step, the supervisor replans on its next
// turn) or the stalemate (the second).
func (tt *teamTurn) stall(o *domain.Outcome, led *Ledger, st *teamState, a Agent) bool {
	if led.Chosen == a.Name {
		led.Stalls++
	} else {
		led.Chosen, led.Stalls = a.Name, 1
	}
	o.Ledger = led.encode()
	if led.Stalls <= tt.team.MaxStalls {
		return false
	}
	times := led.Stalls
	var instr struct {
		Instruction string `json:"instruction"`
	}
	_ = json.Unmarshal(o.Step.Params, &instr)
	params, _ := json.Marshal(map[string]string{"chosen": a.Name, "instruction": instr.Instruction})
	o.Step.Params, o.Step.Success = params, true
	o.Phase = domain.RoleSupervisor
	if st.Replanned {
		o.Step.Action = a.Name
		o.Step.Result = fmt.Sprintf("not handed on: %s was chosen %d times in a row again after the replan", a.Name, times)
		o.Stalemate = fmt.Sprintf("the supervisor chose %s %d times in a row again after replanning (max_stalls is %d)", a.Name, times, tt.team.MaxStalls)
		o.State = st.encode()
		return true
	}
	o.Step.Action = "replan"
	o.Step.Result = fmt.Sprintf("%s was chosen %d times in a row (max_stalls is %d): the supervisor makes a new plan before the team goes on", a.Name, times, tt.team.MaxStalls)
	led.Chosen, led.Stalls = "", 0
	st.Replan = true
	o.Ledger, o.State = led.encode(), st.encode()
	return true
}
