package domain_test

import (
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

func TestReviewTable(t *testing.T) {
	t.Parallel()
	rows := domain.ReviewTransitions()
	if len(rows) != 11 {
		t.Fatalf("the review table has %d rows, want 11", len(rows))
	}
	phases := map[string]bool{domain.PhaseAnalysis: true, domain.PhaseDecomposition: true, domain.PhaseExecution: true, domain.PhaseReview: true}
	seen := map[[2]string]bool{}
	for _, r := range rows {
		if !phases[r.From] || (!phases[r.To] && r.To != domain.PhaseDone) || r.When == "" {
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
		{"", domain.PhaseExecution, true}, // a task starts in analysis
		{domain.PhaseAnalysis, domain.PhaseDecomposition, true},
		{domain.PhaseReview, domain.PhaseDone, true},
		{domain.PhaseReview, domain.PhaseAnalysis, true},
		{domain.PhaseExecution, domain.PhaseExecution, true},
		{domain.PhaseAnalysis, domain.PhaseReview, false},
		{domain.PhaseExecution, domain.PhaseDone, false},
		{domain.PhaseDecomposition, domain.PhaseExecution, false},
		{domain.PhaseDone, domain.PhaseExecution, false},
		{"", "elsewhere", false},
	} {
		if _, ok := domain.ReviewTransition(c.from, c.to); ok != c.ok {
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
		{"execute and approve", domain.StrategyReview, []string{"execution", "review", "done"}, nil},
		{"back and forth", domain.StrategyReview, []string{"analysis", "decomposition", "review", "analysis", "execution", "review", "execution", "review"}, nil},
		{"review without work", domain.StrategyReview, []string{"review"}, []string{`event 3 (iterated) moves the review phase from analysis to "review"`}},
		{"skipping the review", domain.StrategyReview, []string{"execution", "done"}, []string{`event 5 (iterated) moves the review phase from execution to "done"`}},
		{"two wrong moves", domain.StrategyReview, []string{"execution", "analysis", "bogus"},
			[]string{`from execution to "analysis"`, `from analysis to "bogus"`}},
		{"another strategy's phases", domain.StrategySupervisor, []string{"researcher", "supervisor", "writer"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			l := newLife(t, domain.NewTask{Goal: "Build auth", Strategy: c.strategy, Now: t0})
			at := t0
			for i, ph := range c.phases {
				at = at.Add(time.Minute)
				if err := l.do(domain.Claimed(l.task, domain.Claim{Owner: "w1", Now: at, Lease: time.Minute})); err != nil {
					t.Fatal(err)
				}
				o := domain.Outcome{Owner: "w1", Fence: l.task.Fence, Now: at.Add(time.Second), Unjudged: true,
					Verdict: domain.VerdictContinue, Phase: ph, Step: domain.Step{Action: "a" + string(rune('a'+i)), Success: true}}
				if err := l.do(domain.Iterated(l.task, o)); err != nil {
					t.Fatal(err)
				}
			}
			v := domain.Check(l.task, l.events, l.steps)
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
	l := newLife(t, domain.NewTask{Goal: "Build auth", Now: t0})
	for _, p := range []int{90, 90} { // the second is no rise: stale 1
		if err := l.iterate(p, domain.VerdictContinue, l.task.CreatedAt.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if l.task.Progress != 90 || l.task.StaleCounter != 1 {
		t.Fatalf("before the restart: progress %d, stale %d", l.task.Progress, l.task.StaleCounter)
	}
	at := t0.Add(2 * time.Hour)
	if err := l.do(domain.Claimed(l.task, domain.Claim{Owner: "w1", Now: at, Lease: time.Minute})); err != nil {
		t.Fatal(err)
	}
	o := domain.Outcome{Owner: "w1", Fence: l.task.Fence, Now: at, Progress: 40, Verdict: domain.VerdictContinue, Restart: true,
		Step: domain.Step{Action: "write_file", Success: true}}
	if err := l.do(domain.Iterated(l.task, o)); err != nil {
		t.Fatal(err)
	}
	if l.task.Progress != 40 || l.task.PreviousProgress != 90 || l.task.StaleCounter != 0 {
		t.Fatalf("after the restart: progress %d (previous %d), stale %d; want 40 (90), 0", l.task.Progress, l.task.PreviousProgress, l.task.StaleCounter)
	}
	if v := domain.Check(l.task, l.events, l.steps); len(v) != 0 {
		t.Fatalf("check: %v", v)
	}
}
