package storetest

import (
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// testStrategyColumns: a task's strategy, phase, strategy state and
// ledger, and a step's role, are kept as written.
func testStrategyColumns(t *testing.T, s domain.Store) {
	in := newTask("Compare the queue libraries")
	in.Strategy = domain.StrategyMagentic
	task := create(t, s, in)
	if task.Strategy != domain.StrategyMagentic {
		t.Fatalf("created with strategy %q, want magentic", task.Strategy)
	}
	c := claim(t, s, "w1", at(time.Second), time.Minute)
	got := update(t, s, c.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Iterated(cur, domain.Outcome{
			Owner: "w1", Fence: c.Fence, Now: at(2 * time.Second), Verdict: domain.VerdictContinue,
			Step:  domain.Step{Role: "researcher", Action: "http_get", Success: true, Result: "ok"},
			Phase: "writer", State: `{"instruction":"write it up"}`, Ledger: `{"facts":["a"],"plan":"b","chosen":"writer","stalls":0}`,
			Unjudged: true,
		})
	})
	stored := get(t, s, c.Number)
	for _, tk := range []domain.Task{got, stored} {
		if tk.Strategy != domain.StrategyMagentic || tk.Phase != "writer" ||
			tk.State != `{"instruction":"write it up"}` || tk.Ledger != `{"facts":["a"],"plan":"b","chosen":"writer","stalls":0}` {
			t.Errorf("task after the claim: strategy %q phase %q state %q ledger %q", tk.Strategy, tk.Phase, tk.State, tk.Ledger)
		}
		if tk.StaleCounter != 0 {
			t.Errorf("an unjudged claim moved the stale counter to %d", tk.StaleCounter)
		}
	}
	steps, err := s.Steps(t.Context(), c.Number)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 1 || steps[0].Role != "researcher" {
		t.Fatalf("steps = %+v, want one step of the researcher", steps)
	}
}
