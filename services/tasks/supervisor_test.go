package tasks_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/services/tasks"
)

// TestSupervisorRoutesResearcherThenWriter: the supervisor hands a step
// to the researcher, then to the writer, then says DONE: the steps'
// roles alternate in that order, each agent's prompt has its instruction
// and the transcript, and the task completes with the supervisor's
// summary.
func TestSupervisorRoutesResearcherThenWriter(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		f := newTeamFixture(t, open, fake, nil, nil)
		n := f.createAs(domain.StrategySupervisor, "Compare the three queue libraries").Number
		fake.Reply(supReply("researcher", "List what the workspace holds"))
		fake.Reply(testkit.DecisionJSON("list_files", nil, 20, "continue"))
		fake.Reply(supReply("writer", "Write the comparison to report.md"))
		fake.Reply(testkit.DecisionJSON("write_file", map[string]string{"path": "report.md", "content": "River wins."}, 80, "done"))
		fake.Reply(doneReply("The comparison is in report.md."))

		f.stepsN(1, "w")
		got := f.task(n)
		if got.Phase != "researcher" || stateOfTask(t, got)["instruction"] != "List what the workspace holds" || got.Progress != 0 || got.StaleCounter != 0 {
			t.Fatalf("after the first decision: phase %q, state %s, progress %d, stale %d", got.Phase, got.State, got.Progress, got.StaleCounter)
		}
		f.stepsN(4, "w")
		got = f.task(n)
		if got.Status != domain.StatusCompleted || got.Summary != "The comparison is in report.md." || got.Progress != 100 {
			t.Fatalf("task = %s %d%% %q (%s); want completed with the supervisor's summary", got.Status, got.Progress, got.Summary, got.Error)
		}
		steps := f.steps(n)
		if r := strings.Join(rolesOf(steps), ","); r != "supervisor,researcher,supervisor,writer,supervisor" {
			t.Fatalf("roles = %s", r)
		}
		if a := strings.Join(actionsOf(steps), ","); a != "researcher,list_files,writer,write_file,DONE" {
			t.Fatalf("actions = %s", a)
		}
		if data, err := f.file(n, "report.md"); err != nil || data != "River wins." {
			t.Fatalf("report.md = %q, %v", data, err)
		}

		reqs := fake.Requests()
		var roles []string
		for _, r := range reqs {
			roles = append(roles, roleLine(r))
		}
		if strings.Join(roles, ",") != "supervisor,researcher,supervisor,writer,supervisor" {
			t.Fatalf("the requests' role lines = %v", roles)
		}
		researcher, supervisor2, writer := userOf(reqs[1]), userOf(reqs[2]), userOf(reqs[3])
		if !strings.Contains(researcher, "List what the workspace holds") || !strings.Contains(researcher, "Compare the three queue libraries") {
			t.Fatalf("the researcher's prompt lacks its instruction or the goal:\n%s", researcher)
		}
		if !strings.Contains(supervisor2, "Step 1: researcher {") || !strings.Contains(supervisor2, "List what the workspace holds") || !strings.Contains(supervisor2, "Step 2: list_files") {
			t.Fatalf("the supervisor's second prompt does not show the researcher's step:\n%s", supervisor2)
		}
		if !strings.Contains(writer, "Write the comparison to report.md") || !strings.Contains(writer, "Step 2: list_files") || strings.Contains(writer, "Who took") {
			t.Fatalf("the writer's prompt lacks its instruction or the transcript:\n%s", writer)
		}
		if s := reqs[0].Schema(); !strings.Contains(string(s), `"next"`) || strings.Contains(string(s), `"facts"`) {
			t.Fatalf("the supervisor's schema: %s", s)
		}
		// The writer said done: a report to the supervisor, not the end.
		if steps[3].Role != "writer" || !strings.Contains(steps[3].Thought, "Reports done") {
			t.Fatalf("the writer's done was not kept as its report: %+v", steps[3])
		}
		f.check()
	})
}

// TestSupervisorMaxSteps: after max_steps decisions the agent step that
// follows the last one ends the task in stalemate.
func TestSupervisorMaxSteps(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		f := newTeamFixture(t, open, fake, nil, func(o *tasks.Options) { o.Team.MaxSteps = 2 })
		n := f.createAs(domain.StrategySupervisor, "Keep going").Number
		for i := range 2 {
			fake.Reply(supReply("writer", "more"))
			fake.Reply(note(string(rune('a'+i)), 10*(i+1), "continue"))
		}
		f.stepsN(3, "w")
		if got := f.task(n); got.Status != domain.StatusRunning {
			t.Fatalf("task ended early: %s %s", got.Status, got.Error)
		}
		f.stepsN(1, "w")
		got := f.task(n)
		if got.Status != domain.StatusStalemate || !strings.Contains(got.Error, "2 decisions (max_steps)") {
			t.Fatalf("task = %s %q; want stalemate for max_steps", got.Status, got.Error)
		}
		if len(f.steps(n)) != 4 || fake.Pending() != 0 {
			t.Fatalf("%d steps, %d replies unused", len(f.steps(n)), fake.Pending())
		}
		f.check()
	})
}

// TestSupervisorBadDecisions: a reply that is no JSON, one with no next,
// one naming no agent are failed steps of the supervisor (each a step
// without progress), and the turn stays the supervisor's; fenced and
// embedded JSON and an agent's name in another case are read.
func TestSupervisorBadDecisions(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		f := newTeamFixture(t, open, fake, nil, nil)
		n := f.createAs(domain.StrategySupervisor, "Write the report").Number
		fake.Reply("I think the writer should go next.")                         // 1: no JSON
		fake.Reply("```json\n" + supReply("Writer", "Write it") + "\n```")       // 2: fenced
		fake.Reply(note("a", 10, "continue"))                                    // 3: writer
		fake.Reply(`{"thought": "hmm", "instruction": "write"}`)                 // 4: no next
		fake.Reply(supReply("poet", "Write a poem"))                             // 5: not an agent
		fake.Reply("Sure. " + supReply("writer", "Finish it") + " Let me know.") // 6: embedded
		fake.Reply(note("b", 20, "continue"))                                    // 7: writer
		fake.Reply(`{"thought": "x", "next": 7, "instruction": "write"}`)        // 8: next not a string
		f.stepsN(8, "w")

		steps := f.steps(n)
		type want struct {
			role, action string
			ok           bool
			err          string
		}
		wants := []want{
			{"supervisor", "", false, "the supervisor's reply is not a usable decision"},
			{"supervisor", "writer", true, ""},
			{"writer", "write_file", true, ""},
			{"supervisor", "", false, "it names no next agent (or DONE)"},
			{"supervisor", "poet", false, `the supervisor chose "poet", which is not one of the agents; they are researcher, writer, reviewer`},
			{"supervisor", "writer", true, ""},
			{"writer", "write_file", true, ""},
			{"supervisor", "", false, "next is not a string"},
		}
		if len(steps) != len(wants) {
			t.Fatalf("%d steps, want %d", len(steps), len(wants))
		}
		for i, w := range wants {
			s := steps[i]
			if s.Role != w.role || s.Action != w.action || s.Success != w.ok || !strings.Contains(s.Error, w.err) {
				t.Errorf("step %d = %s %q ok=%v %q; want %s %q ok=%v %q", i+1, s.Role, s.Action, s.Success, s.Error, w.role, w.action, w.ok, w.err)
			}
		}
		if !strings.Contains(steps[0].Result, "the writer should go next") {
			t.Errorf("the unusable reply is not kept in the step: %q", steps[0].Result)
		}
		got := f.task(n)
		if got.Phase != domain.RoleSupervisor || got.StaleCounter != 1 || got.Status != domain.StatusRunning {
			t.Fatalf("task = %s phase %q stale %d; want running, the supervisor's turn, one failed decision since progress", got.Status, got.Phase, got.StaleCounter)
		}
		f.check()
	})
}

// TestLeaseLostAroundASupervisorDecision: a worker that loses its lease
// while the supervisor decides has its decision refused, and the next
// claim is the step of the agent the other worker's decision chose, with
// that instruction; a worker that loses its lease during the agent's
// step has that step refused, and the step is taken once, with the
// instruction given once.
func TestLeaseLostAroundASupervisorDecision(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		client, g := gatedClient(fake)
		f := newTeamFixture(t, open, fake, client, nil)
		n := f.createAs(domain.StrategySupervisor, "Write the report").Number

		// late runs A's claim, held at the model past its lease, while B
		// takes the task; then lets A's answer come back.
		late := func() {
			t.Helper()
			arrived, open := g.arm()
			done := make(chan error, 1)
			go func() { _, err := f.svc.Step(f.ctx, "A"); done <- err }()
			<-arrived
			f.clk.Advance(lease + time.Second)
			if !f.step("B") {
				t.Fatal("B could not claim the task after A's lease expired")
			}
			open()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			evs, err := f.store.TaskEvents(f.ctx, n, 0)
			if err != nil {
				t.Fatal(err)
			}
			if last := evs[len(evs)-1]; last.Type != domain.EventResultRejected || last.Actor != "A" {
				t.Fatalf("last event = %s by %s; want A's result rejected", last.Type, last.Actor)
			}
		}

		// The decision: B's reply is served first (A's request is held).
		fake.Reply(supReply("researcher", "from B"))
		fake.Reply(supReply("writer", "from A"))
		late()
		got := f.task(n)
		if got.Phase != "researcher" || stateOfTask(t, got)["instruction"] != "from B" || len(f.steps(n)) != 1 || got.Iteration != 1 {
			t.Fatalf("after the lost decision: phase %q state %s, %d steps, iteration %d", got.Phase, got.State, len(f.steps(n)), got.Iteration)
		}
		fake.Reply(testkit.DecisionJSON("list_files", nil, 10, "continue"))
		f.stepsN(1, "C")
		reqs := fake.Requests()
		if u := userOf(reqs[len(reqs)-1]); roleLine(reqs[len(reqs)-1]) != "researcher" || !strings.Contains(u, "from B") || strings.Contains(u, "from A") {
			t.Fatalf("the step after the lost decision was not the researcher's with B's instruction:\n%s", u)
		}

		// The agent's step: the writer writes b.md for B, a.md for A.
		fake.Reply(supReply("writer", "Write it"))
		f.stepsN(1, "C")
		fake.Reply(testkit.DecisionJSON("write_file", map[string]string{"path": "b.md", "content": "B"}, 30, "continue"))
		fake.Reply(testkit.DecisionJSON("write_file", map[string]string{"path": "a.md", "content": "A"}, 90, "continue"))
		late()
		got = f.task(n)
		steps := f.steps(n)
		if r := strings.Join(rolesOf(steps), ","); r != "supervisor,researcher,supervisor,writer" {
			t.Fatalf("roles = %s", r)
		}
		st := stateOfTask(t, got)
		if got.Phase != domain.RoleSupervisor || st["instruction"] != nil || st["decisions"] != float64(2) || got.Progress != 30 {
			t.Fatalf("after the lost step: phase %q state %s progress %d", got.Phase, got.State, got.Progress)
		}
		if _, err := f.file(n, "a.md"); err == nil {
			t.Fatal("A's refused step wrote a.md")
		}
		if _, err := f.file(n, "b.md"); err != nil {
			t.Fatalf("B's step did not write b.md: %v", err)
		}
		fake.Reply(doneReply("done"))
		f.stepsN(1, "C")
		reqs = fake.Requests()
		if roleLine(reqs[len(reqs)-1]) != domain.RoleSupervisor || f.task(n).Status != domain.StatusCompleted {
			t.Fatalf("the claim after the writer's step was %q, task %s", roleLine(reqs[len(reqs)-1]), f.task(n).Status)
		}
		f.check()
	})
}

func TestParseSupervisorDecision(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, in string
		want     tasks.SupervisorDecision
		err      string
	}{
		{"plain", `{"thought":"t","next":"writer","instruction":"go"}`, tasks.SupervisorDecision{Thought: "t", Next: "writer", Instruction: "go"}, ""},
		{"done any case", `{"next":"done","summary":"all set"}`, tasks.SupervisorDecision{Next: "DONE", Summary: "all set"}, ""},
		{"fenced", "```json\n{\"next\":\"writer\",\"instruction\":\"go\"}\n```", tasks.SupervisorDecision{Next: "writer", Instruction: "go"}, ""},
		{"embedded", `Here: {"next":"writer","instruction":"go"} ok`, tasks.SupervisorDecision{Next: "writer", Instruction: "go"}, ""},
		{"instruction from thought", `{"thought":"read it","next":"researcher"}`, tasks.SupervisorDecision{Thought: "read it", Next: "researcher", Instruction: "read it"}, ""},
		{"facts and plan", `{"next":"writer","instruction":"go","facts":["a"," ","b"],"plan":["1. x","2. y"]}`,
			tasks.SupervisorDecision{Next: "writer", Instruction: "go", Facts: []string{"a", "b"}, Plan: "1. x\n2. y"}, ""},
		{"one fact", `{"next":"writer","instruction":"go","facts":"a","plan":"p"}`,
			tasks.SupervisorDecision{Next: "writer", Instruction: "go", Facts: []string{"a"}, Plan: "p"}, ""},
		{"garbage", "no idea", tasks.SupervisorDecision{}, "unusable supervisor decision"},
		{"empty", "", tasks.SupervisorDecision{}, "unusable supervisor decision"},
		{"no next", `{"thought":"t","instruction":"go"}`, tasks.SupervisorDecision{}, "names no next agent"},
		{"blank next", `{"next":"  ","instruction":"go"}`, tasks.SupervisorDecision{}, "names no next agent"},
		{"next not a string", `{"next":["writer"]}`, tasks.SupervisorDecision{}, "next is not a string"},
		{"bad facts", `{"next":"writer","facts":{"a":1}}`, tasks.SupervisorDecision{}, "facts: not a string or a list of strings"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tasks.ParseSupervisorDecision(tt.in)
			if tt.err != "" {
				if err == nil || !errors.Is(err, tasks.ErrBadSupervisorDecision) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v; want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			a, _ := json.Marshal(got)
			b, _ := json.Marshal(tt.want)
			if string(a) != string(b) {
				t.Fatalf("got %s, want %s", a, b)
			}
		})
	}
}

func FuzzParseSupervisorDecision(f *testing.F) {
	for _, s := range []string{`{"next":"writer"}`, "```json\n{\"next\":\"DONE\"}\n```", `{"next":1}`, `{{{`, `{"facts":[1]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := tasks.ParseSupervisorDecision(s)
		if err == nil && d.Next == "" {
			t.Fatalf("%q: a decision with no next", s)
		}
	})
}

// TestAgentRepeatingItsOwnStepIsNoProgress: the stall guard compares an
// agent's step with its own last one, not with the supervisor's decision
// just before it: the same call again counts as no progress, whatever
// progress it claims.
func TestAgentRepeatingItsOwnStepIsNoProgress(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		f := newTeamFixture(t, open, fake, nil, nil)
		n := f.createAs(domain.StrategySupervisor, "Look around").Number
		for i := range 2 {
			fake.Reply(supReply("researcher", "List the files"))
			fake.Reply(testkit.DecisionJSON("list_files", nil, 20*(i+1), "continue"))
		}
		f.stepsN(4, "w")
		got := f.task(n)
		if got.Progress != 20 || got.StaleCounter != 1 {
			t.Fatalf("after the researcher's same step twice: progress %d, stale %d; want 20 and 1", got.Progress, got.StaleCounter)
		}
		f.check()
	})
}
