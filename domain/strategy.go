package domain

import "strings"

// The strategies of docs/strategies.md. A task's Strategy names how its claims
// are made; every one of them makes one model call per claim, so the fair
// queue, leases, fences and budgets hold whichever it is.
const (
	StrategyLoop       = "loop"
	StrategyReact      = "react"
	StrategyTools      = "tools"
	StrategyReview     = "review"
	StrategySupervisor = "supervisor"
	StrategyMagentic   = "magentic"
	StrategyGroupChat  = "group_chat"
)

// The roles of docs/strategies.md a step may record, besides an agent's name in
// the multi-agent strategies.
const (
	RoleAgent       = "agent"
	RoleThought     = "thought"
	RoleAction      = "action"
	RoleObservation = "observation"
	RoleAnalysis    = "analysis"
	RoleReviewer    = "reviewer"
	RoleSupervisor  = "supervisor"
)

// UnknownStrategy is the sentence refusing a strategy name that is not
// one of known: it lists them.
func UnknownStrategy(name string, known []string) string {
	return "there is no strategy " + quote(name) + "; the strategies are " + strings.Join(known, ", ")
}

func quote(s string) string { return `"` + s + `"` }
