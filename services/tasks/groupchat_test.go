package tasks_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/services/tasks"
)

// TestGroupChatRoundRobin: three agents speak in turn for two rounds,
// each turn one step of the speaker's with the transcript; when the
// rounds end without a done, the task ends in stalemate.
func TestGroupChatRoundRobin(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		f := newTeamFixture(t, open, fake, nil, func(o *tasks.Options) { o.Team.Rounds = 2 })
		n := f.createAs(domain.StrategyGroupChat, "Write the report").Number
		// researcher, writer, reviewer, twice: each with one of its tools.
		turns := []string{
			testkit.DecisionJSON("list_files", nil, 10, "continue"),
			note("draft", 20, "continue"),
			testkit.DecisionJSON("read_file", map[string]string{"path": "notes/draft.md"}, 30, "continue"),
			testkit.DecisionJSON("read_result", map[string]int{"step": 3}, 40, "continue"),
			note("final", 50, "continue"),
			testkit.DecisionJSON("read_file", map[string]string{"path": "notes/final.md"}, 60, "continue"),
		}
		for i, r := range turns {
			fake.Reply(r)
			f.stepsN(1, "w")
			if got := f.task(n); i < len(turns)-1 && got.Status != domain.StatusRunning {
				t.Fatalf("after turn %d: %s %s", i+1, got.Status, got.Error)
			}
		}
		want := "researcher,writer,reviewer,researcher,writer,reviewer"
		if r := strings.Join(rolesOf(f.steps(n)), ","); r != want {
			t.Fatalf("roles = %s; want %s", r, want)
		}
		for i, s := range f.steps(n) {
			if !s.Success {
				t.Errorf("turn %d failed: %s", i+1, s.Error)
			}
		}
		var roles []string
		for _, r := range fake.Requests() {
			roles = append(roles, roleLine(r))
		}
		if strings.Join(roles, ",") != want {
			t.Fatalf("the requests' role lines = %v", roles)
		}
		u := userOf(fake.Requests()[4])
		if !strings.Contains(u, "round 2 of 2, turn 5 of 6. It is your turn, writer.") || !strings.Contains(u, "3 reviewer, 4 researcher") {
			t.Fatalf("the writer's second prompt:\n%s", u)
		}
		got := f.task(n)
		if got.Status != domain.StatusStalemate || !strings.Contains(got.Error, "2 rounds ended") {
			t.Fatalf("task = %s %q; want stalemate after the rounds", got.Status, got.Error)
		}
		f.check()
	})
}

// TestGroupChatEndsOnDone: a turn that says done ends the chat early,
// completed with its summary.
func TestGroupChatEndsOnDone(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		f := newTeamFixture(t, open, fake, nil, nil)
		n := f.createAs(domain.StrategyGroupChat, "Write the report").Number
		fake.Reply(testkit.DecisionJSON("list_files", nil, 10, "continue"))
		fake.Reply(mustJSON(map[string]any{"thought": "it is written", "action": "none", "params": map[string]any{},
			"progress": 100, "status": "done", "summary": "The report is written."}))
		f.stepsN(2, "w")
		got := f.task(n)
		if got.Status != domain.StatusCompleted || got.Summary != "The report is written." {
			t.Fatalf("task = %s %q; want completed with the writer's summary", got.Status, got.Summary)
		}
		if r := strings.Join(rolesOf(f.steps(n)), ","); r != "researcher,writer" {
			t.Fatalf("roles = %s", r)
		}
		f.check()
	})
}

// TestGroupChatSpeakerModel: with speaker: model a claim in the
// supervisor's role chooses who speaks, then that agent speaks with what
// was asked of it; a speaker not in the team is a failed step; DONE ends
// the chat.
func TestGroupChatSpeakerModel(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		f := newTeamFixture(t, open, fake, nil, func(o *tasks.Options) { o.Team.Speaker = tasks.SpeakerModel })
		n := f.createAs(domain.StrategyGroupChat, "Write the report").Number
		fake.Reply(supReply("writer", "Draft the report"))
		fake.Reply(note("draft", 40, "continue"))
		fake.Reply(supReply("critic", "Tear it apart"))
		fake.Reply(supReply("reviewer", "Check the draft"))
		fake.Reply(testkit.DecisionJSON("read_file", map[string]string{"path": "notes/draft.md"}, 60, "continue"))
		fake.Reply(doneReply("Drafted and checked."))
		f.stepsN(6, "w")

		got := f.task(n)
		if got.Status != domain.StatusCompleted || got.Summary != "Drafted and checked." {
			t.Fatalf("task = %s %q (%s)", got.Status, got.Summary, got.Error)
		}
		steps := f.steps(n)
		if r := strings.Join(rolesOf(steps), ","); r != "supervisor,writer,supervisor,supervisor,reviewer,supervisor" {
			t.Fatalf("roles = %s", r)
		}
		if steps[2].Success || !strings.Contains(steps[2].Error, `chosen, "critic", is not one of the agents; they are researcher, writer, reviewer`) {
			t.Fatalf("choosing a speaker not in the team = %+v", steps[2])
		}
		reqs := fake.Requests()
		if sys := systemOf(reqs[0]); roleLine(reqs[0]) != domain.RoleSupervisor || !strings.Contains(sys, "moderate a group chat") {
			t.Fatalf("the choice's prompt (role %q):\n%s", roleLine(reqs[0]), sys)
		}
		if u := userOf(reqs[1]); !strings.Contains(u, "You were chosen to speak with: Draft the report") || roleLine(reqs[1]) != "writer" {
			t.Fatalf("the writer's prompt:\n%s", u)
		}
		if u := userOf(reqs[4]); !strings.Contains(u, "turn 2 of 18") {
			t.Fatalf("the reviewer's turn is not the second of the chat:\n%s", u)
		}
		f.check()
	})
}

// TestGroupChatSpeakerModelRoundsEnd: the rounds bound the speakers'
// turns with speaker: model too.
func TestGroupChatSpeakerModelRoundsEnd(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		f := newTeamFixture(t, open, fake, nil, func(o *tasks.Options) { o.Team.Speaker, o.Team.Rounds = tasks.SpeakerModel, 1 })
		n := f.createAs(domain.StrategyGroupChat, "Write the report").Number
		for i := range 3 {
			fake.Reply(supReply("writer", "Write"))
			fake.Reply(note(fmt.Sprint(i), 10*(i+1), "continue"))
		}
		f.stepsN(6, "w")
		if got := f.task(n); got.Status != domain.StatusStalemate || !strings.Contains(got.Error, "one round ended") {
			t.Fatalf("task = %s %q", got.Status, got.Error)
		}
		f.check()
	})
}
