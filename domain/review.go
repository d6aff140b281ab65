package domain

import (
	"encoding/json"
	"fmt"
	"slices"
)

// The phases of a task of the review strategy (docs/strategies.md, after
// taskcore). A review task starts in analysis: its Phase is empty until
// its first claim, and ReviewPhase reads empty as analysis.
const (
	PhaseAnalysis      = "analysis"
	PhaseDecomposition = "decomposition"
	PhaseExecution     = "execution"
	PhaseReview        = "review"
	// PhaseDone is where an approved task ends. A review task that ends
	// any other way (its attempts, its stale counter or its budget run
	// out; it is canceled) keeps the phase it was in: that is where the
	// work stopped, and the status and error say why.
	PhaseDone = "done"
)

// PhaseTransition is one row of the review strategy's table: a claim that
// moves a task from From to To, and what makes it do so.
type PhaseTransition struct {
	From, To string
	When     string
}

// reviewTable is taskcore's table of the moves a review task may make,
// the one table both the strategy's transitions and `taskloom check`
// follow. It has 11 rows:
//
//   - the work moves forward: analysis decides to execute (1) or to
//     decompose into subtasks (2); execution (3) and, once its subtasks
//     have ended, decomposition (4) hand the work to review when the agent
//     says it is done; review approves it (5);
//   - review sends it back: changes_requested to execution (6),
//     wrong_approach to analysis (7);
//   - a phase whose attempt failed is attempted again: an analysis (8) or
//     a review (9) whose reply was unusable, an execution (10) or a
//     decomposition (11) whose agent said it is stuck.
//
// Entering a phase, by any row including the last four, spends one of its
// attempts (the budgets are the strategy's); a row whose phase has none
// left is not taken: the task fails instead, in the phase it was in. The
// four repeats do not change the phase column, so a log shows only rows
// 1–7 as phase changes; a change that is none of the rows is a problem
// check reports. There is no other way out of done.
var reviewTable = [...]PhaseTransition{
	{PhaseAnalysis, PhaseExecution, "the analysis decides to execute"},
	{PhaseAnalysis, PhaseDecomposition, "the analysis decides to decompose, and its subtasks are created"},
	{PhaseExecution, PhaseReview, "the agent says the work is done"},
	{PhaseDecomposition, PhaseReview, "the subtasks have ended, and the agent says the work is done"},
	{PhaseReview, PhaseDone, "the reviewer approves"},
	{PhaseReview, PhaseExecution, "the reviewer requests changes"},
	{PhaseReview, PhaseAnalysis, "the reviewer says the approach is wrong"},
	{PhaseAnalysis, PhaseAnalysis, "the reply was no usable analysis, or none of its subtasks could be created"},
	{PhaseReview, PhaseReview, "the reply was no usable review"},
	{PhaseExecution, PhaseExecution, "the agent says it is stuck"},
	{PhaseDecomposition, PhaseDecomposition, "the agent says it is stuck"},
}

// ReviewTransitions returns the review strategy's table, a copy.
func ReviewTransitions() []PhaseTransition { return slices.Clone(reviewTable[:]) }

// ReviewTransition returns the row of the review table that moves a task
// from phase from to phase to (ReviewPhase applies to from), and whether
// there is one.
func ReviewTransition(from, to string) (PhaseTransition, bool) {
	from = ReviewPhase(from)
	for _, tr := range reviewTable {
		if tr.From == from && tr.To == to {
			return tr, true
		}
	}
	return PhaseTransition{}, false
}

// ReviewPhase is the phase a review task whose Phase column is p is in:
// p, or analysis before the task's first claim.
func ReviewPhase(p string) string {
	if p == "" {
		return PhaseAnalysis
	}
	return p
}

// checkReviewPhases verifies each phase change in the events of a task
// of the review strategy against the review table: one problem for each
// change that is none of its rows.
func checkReviewPhases(number int64, events []TaskEvent) []Violation {
	var out []Violation
	var strategy, phase string
	for _, ev := range events {
		var p EventPayload
		if json.Unmarshal(ev.Payload, &p) != nil {
			continue // Check reports an unreadable payload
		}
		if raw, ok := p.Changes["strategy"]; ok {
			_ = json.Unmarshal(raw, &strategy)
		}
		raw, ok := p.Changes["phase"]
		if !ok {
			continue
		}
		var to string
		if err := json.Unmarshal(raw, &to); err != nil {
			continue // Check reports changes it cannot apply
		}
		from := phase
		phase = to
		if strategy != StrategyReview || ReviewPhase(from) == to {
			continue
		}
		if _, ok := ReviewTransition(from, to); !ok {
			out = append(out, Violation{TaskNumber: number, Problem: fmt.Sprintf(
				"event %d (%s) moves the review phase from %s to %q, which is not a transition of the review table",
				ev.Sequence, ev.Type, ReviewPhase(from), to)})
		}
	}
	return out
}
