package tasks_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/services/tasks"
)

func ledgerOfTask(t *testing.T, task domain.Task) tasks.Ledger {
	t.Helper()
	var l tasks.Ledger
	if err := json.Unmarshal([]byte(task.Ledger), &l); err != nil {
		t.Fatalf("task #%d's ledger %q is not JSON: %v", task.Number, task.Ledger, err)
	}
	return l
}

// TestMagenticStallReplansOnceThenStalemate: the supervisor keeps the
// ledger (facts, plan) in its prompt; choosing the researcher a third
// time in a row (max_stalls 2) is a stall: a replan step, stalls reset,
// and a replan turn whose new plan goes into the ledger; the next stall
// ends the task in stalemate.
func TestMagenticStallReplansOnceThenStalemate(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		f := newTeamFixture(t, open, fake, nil, nil)
		n := f.createAs(domain.StrategyMagentic, "Compare the three queue libraries").Number
		progress := 0
		research := func() {
			progress += 10
			// Listing the workspace as {} and as "." in turn: never the
			// researcher's last step again, so each is progress.
			params := map[string]string{}
			if progress%20 == 0 {
				params["path"] = "."
			}
			fake.Reply(testkit.DecisionJSON("list_files", params, progress, "continue"))
		}
		fake.Reply(magReply("researcher", "Look up River", []string{"River is a Go queue"}, "1. research 2. write"))
		research()
		fake.Reply(magReply("researcher", "Look up Asynq", nil, ""))
		research()
		fake.Reply(magReply("researcher", "Look up Machinery", nil, "")) // the third in a row: a stall
		f.stepsN(5, "w")

		got := f.task(n)
		led := ledgerOfTask(t, got)
		steps := f.steps(n)
		last := steps[len(steps)-1]
		if last.Role != domain.RoleSupervisor || last.Action != "replan" || !strings.Contains(last.Result, "researcher was chosen 3 times in a row") {
			t.Fatalf("the stall's step = %+v; want the supervisor's replan", last)
		}
		if led.Stalls != 0 || led.Chosen != "" || led.Plan != "1. research 2. write" || strings.Join(led.Facts, ";") != "River is a Go queue" {
			t.Fatalf("ledger after the stall = %+v; want stalls reset, facts and plan kept", led)
		}
		if got.Phase != domain.RoleSupervisor || got.Status != domain.StatusRunning {
			t.Fatalf("after the stall: %s, phase %q", got.Status, got.Phase)
		}
		reqs := fake.Requests()
		if u := userOf(reqs[2]); !strings.Contains(u, "1. research 2. write") || !strings.Contains(u, "- River is a Go queue") ||
			!strings.Contains(u, "Chosen last: researcher, 1 time(s) in a row") {
			t.Fatalf("the supervisor's prompt lacks the ledger:\n%s", u)
		}
		if s := string(reqs[0].Schema()); !strings.Contains(s, `"facts"`) || !strings.Contains(s, `"plan"`) {
			t.Fatalf("magentic's schema lacks facts and plan: %s", s)
		}

		// The replan: a new plan is required; then the researcher again.
		fake.Reply(magReply("researcher", "Research with the new plan", []string{"River is a Go queue", "Asynq uses Redis"}, "1. compare 2. write"))
		f.stepsN(1, "w")
		if u := userOf(fake.Requests()[5]); !strings.Contains(u, "Replan:") {
			t.Fatalf("the replan's prompt does not ask for one:\n%s", u)
		}
		got = f.task(n)
		led = ledgerOfTask(t, got)
		if led.Plan != "1. compare 2. write" || led.Chosen != "researcher" || led.Stalls != 1 || len(led.Facts) != 2 || got.Phase != "researcher" {
			t.Fatalf("after the replan: ledger %+v, phase %q", led, got.Phase)
		}
		research()
		fake.Reply(magReply("researcher", "More", nil, ""))
		research()
		fake.Reply(magReply("researcher", "Even more", nil, "")) // a second stall
		f.stepsN(4, "w")
		got = f.task(n)
		if got.Status != domain.StatusStalemate || !strings.Contains(got.Error, "researcher 3 times in a row again after replanning") {
			t.Fatalf("task = %s %q; want stalemate for the second stall", got.Status, got.Error)
		}
		want := "supervisor,researcher,supervisor,researcher,supervisor,supervisor,researcher,supervisor,researcher,supervisor"
		if r := strings.Join(rolesOf(f.steps(n)), ","); r != want {
			t.Fatalf("roles = %s\nwant    %s", r, want)
		}
		f.check()
	})
}

// TestMagenticReplanNeedsAPlan: a replan turn whose reply has no plan is
// a failed step, and the replan is still due.
func TestMagenticReplanNeedsAPlan(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		f := newTeamFixture(t, open, fake, nil, func(o *tasks.Options) { o.Team.MaxStalls = 1 })
		n := f.createAs(domain.StrategyMagentic, "Write the report").Number
		fake.Reply(magReply("writer", "Write", nil, "1. write"))
		fake.Reply(note("a", 10, "continue"))
		fake.Reply(magReply("writer", "Write more", nil, "")) // stall: max_stalls 1
		fake.Reply(magReply("writer", "Write more", nil, "")) // the replan, without a plan
		f.stepsN(4, "w")
		steps := f.steps(n)
		last := steps[len(steps)-1]
		if last.Success || last.Action != "replan" || !strings.Contains(last.Error, "gave no new plan") {
			t.Fatalf("replan without a plan = %+v", last)
		}
		fake.Reply(magReply("reviewer", "Check it", nil, "1. review"))
		f.stepsN(1, "w")
		if u := userOf(fake.Requests()[4]); !strings.Contains(u, "Replan:") {
			t.Fatal("the replan was not asked again")
		}
		if led := ledgerOfTask(t, f.task(n)); led.Plan != "1. review" || led.Chosen != "reviewer" || f.task(n).Phase != "reviewer" {
			t.Fatalf("after the replan: %+v, phase %q", led, f.task(n).Phase)
		}
		f.check()
	})
}

// TestMagenticStallOnTheLastDecisionEndsTheTask: a stall on the
// supervisor's last decision allowed (max_steps) ends the task there
// instead of granting a replan turn past max_steps.
func TestMagenticStallOnTheLastDecisionEndsTheTask(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		f := newTeamFixture(t, open, fake, nil, func(o *tasks.Options) { o.Team.MaxStalls, o.Team.MaxSteps = 1, 2 })
		n := f.createAs(domain.StrategyMagentic, "Write the report").Number
		fake.Reply(magReply("writer", "Write", nil, "1. write"))
		fake.Reply(note("a", 10, "continue"))
		fake.Reply(magReply("writer", "Write more", nil, "")) // decision 2 of 2, a stall
		f.stepsN(3, "w")
		got := f.task(n)
		if got.Status != domain.StatusStalemate || !strings.Contains(got.Error, "max_steps") {
			t.Fatalf("task = %s %q; want stalemate at max_steps", got.Status, got.Error)
		}
		if reqs := len(fake.Requests()); reqs != 3 {
			t.Fatalf("the model was asked %d times; want 3, no decision past max_steps", reqs)
		}
		f.check()
	})
}

// TestMagenticLedgerStaysBounded: facts beyond the ledger's bound keep
// only the latest.
func TestMagenticLedgerStaysBounded(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		f := newTeamFixture(t, open, fake, nil, nil)
		n := f.createAs(domain.StrategyMagentic, "Gather facts").Number
		var facts []string
		for i := range 50 {
			facts = append(facts, fmt.Sprintf("fact %d %s", i, strings.Repeat("x", 400)))
		}
		fake.Reply(magReply("researcher", "Look", facts, strings.Repeat("plan ", 1000)))
		f.stepsN(1, "w")
		led := ledgerOfTask(t, f.task(n))
		if len(led.Facts) != 20 || !strings.HasPrefix(led.Facts[0], "fact 30 ") || len([]rune(led.Facts[0])) > 300 || len([]rune(led.Plan)) > 2000 {
			t.Fatalf("ledger: %d facts, first %.20q (%d runes), plan %d runes", len(led.Facts), led.Facts[0], len([]rune(led.Facts[0])), len([]rune(led.Plan)))
		}
	})
}
