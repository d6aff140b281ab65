package plugin_test

import (
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/plugin"
)

func TestReviewTable(t *testing.T) {
	t.Parallel()
	rows := plugin.ReviewTransitions()
	if len(rows) != 11 {
		t.Fatalf("the review table has %d rows, want 11", len(rows))
	}
	phases := map[string]bool{plugin.PhaseAnalysis: true, plugin.PhaseDecomposition: true, plugin.PhaseExecution: true, plugin.PhaseReview: true}
	seen := map[[2]string]bool{}
	for _, r := range rows {
		if !phases[r.From] || (!phases[r.To] && r.To != plugin.PhaseDone) || r.When == "" {
			t.Errorf("row %+v: unknown phase or no reason", r)
		}
		if seen[[2]string{r.From, r.To}] {
			t.Errorf("row %s → %s twice", r.From, r.To)
		}
		seen[[2]string{r.From, r.To}] = true
	}
	rows[0].To = "elsewhere" // a copy: the table stays as it is
	for _, c := range []struct {
		from, to string
		ok       bool
	}{
		{"", plugin.PhaseExecution, true}, // a task starts in analysis
		{plugin.PhaseAnalysis, plugin.PhaseDecomposition, true},
		{plugin.PhaseReview, plugin.PhaseDone, true},
		{plugin.PhaseReview, plugin.PhaseAnalysis, true},
		{plugin.PhaseExecution, plugin.PhaseExecution, true},
		{plugin.PhaseAnalysis, plugin.PhaseReview, false},
		{plugin.PhaseExecution, plugin.PhaseDone, false},
		{plugin.PhaseDecomposition, plugin.PhaseExecution, false},
		{plugin.PhaseDone, plugin.PhaseExecution, false},
		{"", "elsewhere", false},
	} {
		if _, ok := plugin.ReviewTransition(c.from, c.to); ok != c.ok {
			t.Errorf("ReviewTransition(%q, %q) = %v, want %v", c.from, c.to, ok, c.ok)
		}
	}
}

// TestCheckFollowsTheReviewTable: check accepts a review task's phase
// changes along the table's rows and reports each one that is not, with
// the event it happened in; other strategies' phases are not its to
// judge.
func TestCheckFollowsTheReviewTable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		strategy string
		phases   []string
		problems []string
	}{
		{"execute and approve", plugin.StrategyReview, []string{"execution", "review", "done"}, nil},
		{"back and forth", plugin.StrategyReview, []string{"analysis", "decomposition", "review", "analysis", "execution", "review", "execution", "review"}, nil},
		{"review without work", plugin.StrategyReview, []string{"review"}, []string{`event 3 (iterated) moves the review phase from analysis to "review"`}},
		{"skipping the review", plugin.StrategyReview, []string{"execution", "done"}, []string{`event 5 (iterated) moves the review phase from execution to "done"`}},
		{"two wrong moves", plugin.StrategyReview, []string{"execution", "analysis", "bogus"},
			[]string{`from execution to "analysis"`, `from analysis to "bogus"`}},
		{"another strategy's phases", plugin.StrategySupervisor, []string{"researcher", "supervisor", "writer"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			l := newLife(t, plugin.NewTask{Goal: "Build auth", Strategy: c.strategy, Now: t0})
			at := t0
			for i, ph := range c.phases {
				at = at.Add(time.Minute)
				if err := l.do(plugin.Claimed(l.task, plugin.Claim{Owner: "w1", Now: at, Lease: time.Minute})); err != nil {
					t.Fatal(err)
				}
				o := plugin.Outcome{Owner: "w1", Fence: l.task.Fence, Now: at.Add(time.Second), Unjudged: true,
					Verdict: plugin.VerdictContinue, Phase: ph, Step: plugin.Step{Action: "a" + string(rune('a'+i)), Success: true}}
				if err := l.do(plugin.Iterated(l.task, o)); err != nil {
					t.Fatal(err)
				}
			}
			v := plugin.Check(l.task, l.events, l.steps)
			if len(v) != len(c.problems) {
				t.Fatalf("check = %v; want %d problems", v, len(c.problems))
			}
			for i, p := range c.problems {
				if !strings.Contains(v[i].Problem, p) || !strings.Contains(v[i].Problem, "not a transition of the review table") {
					t.Errorf("problem %d = %q; want it to say %q", i, v[i].Problem, p)
				}
			}
		})
	}
}

// TestIteratedRestart: a claim that restarts progress sets it to its
// estimate, lower or not, and the stale counter to 0.
func TestIteratedRestart(t *testing.T) {
	t.Parallel()
	l := newLife(t, plugin.NewTask{Goal: "Build auth", Now: t0})
	for _, p := range []int{90, 90} { // the second is no rise: stale 1
		if err := l.iterate(p, plugin.VerdictContinue, l.task.CreatedAt.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if l.task.Progress != 90 || l.task.StaleCounter != 1 {
		t.Fatalf("before the restart: progress %d, stale %d", l.task.Progress, l.task.StaleCounter)
	}
	at := t0.Add(2 * time.Hour)
	if err := l.do(plugin.Claimed(l.task, plugin.Claim{Owner: "w1", Now: at, Lease: time.Minute})); err != nil {
		t.Fatal(err)
	}
	o := plugin.Outcome{Owner: "w1", Fence: l.task.Fence, Now: at, Progress: 40, Verdict: plugin.VerdictContinue, Restart: true,
		Step: plugin.Step{Action: "write_file", Success: true}}
	if err := l.do(plugin.Iterated(l.task, o)); err != nil {
		t.Fatal(err)
	}
	if l.task.Progress != 40 || l.task.PreviousProgress != 90 || l.task.StaleCounter != 0 {
		t.Fatalf("after the restart: progress %d (previous %d), stale %d; want 40 (90), 0", l.task.Progress, l.task.PreviousProgress, l.task.StaleCounter)
	}
	if v := plugin.Check(l.task, l.events, l.steps); len(v) != 0 {
		t.Fatalf("check: %v", v)
	}
}
