package tasks_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/services/tasks"
)

// rvAnalysis is an analysis role's reply.
func rvAnalysis(decision, plan string, subtasks ...tasks.SubtaskPlan) string {
	if subtasks == nil {
		subtasks = []tasks.SubtaskPlan{}
	}
	raw, err := json.Marshal(map[string]any{"thought": "scripted analysis", "decision": decision, "plan": plan, "subtasks": subtasks})
	if err != nil {
		panic(err)
	}
	return string(raw)
}

// rvVerdict is a reviewer's reply.
func rvVerdict(verdict, notes, summary string) string {
	raw, err := json.Marshal(map[string]string{"thought": "scripted review", "verdict": verdict, "notes": notes, "summary": summary})
	if err != nil {
		panic(err)
	}
	return string(raw)
}

// rvWrite is an agent's decision writing path.
func rvWrite(path, content string, progress int, status string) string {
	return testkit.DecisionJSON("write_file", map[string]string{"path": path, "content": content}, progress, status)
}

// rvCreate creates a task of the review strategy.
func rvCreate(f *fixture, goal string) int64 {
	f.t.Helper()
	return f.create(goal, func(in *domain.NewTask) { in.Strategy = domain.StrategyReview }).Number
}

// rvServe serves n claims, each of which must find a task.
func rvServe(f *fixture, n int) {
	f.t.Helper()
	for i := range n {
		if !f.step("w") {
			f.t.Fatalf("claim %d of %d found no task", i+1, n)
		}
	}
}

// rvPhases are the phase changes in task n's event log, in order.
func rvPhases(f *fixture, n int64) []string {
	f.t.Helper()
	evs, err := f.store.TaskEvents(f.ctx, n, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		var p domain.EventPayload
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			f.t.Fatal(err)
		}
		if raw, ok := p.Changes["phase"]; ok {
			var ph string
			if err := json.Unmarshal(raw, &ph); err != nil {
				f.t.Fatal(err)
			}
			out = append(out, ph)
		}
	}
	return out
}

// rvAttempts are the attempts task n's state counts per phase.
func rvAttempts(f *fixture, n int64) map[string]int {
	f.t.Helper()
	var st struct {
		Attempts map[string]int `json:"attempts"`
	}
	if err := json.Unmarshal([]byte(f.task(n).State), &st); err != nil {
		f.t.Fatalf("state of task #%d: %v", n, err)
	}
	return st.Attempts
}

// rvUser is the last user message of a request the fake received.
func rvUser(r testkit.OpenAIRequest) string {
	msgs := r.Body.Messages
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return msgs[i].Content
		}
	}
	return ""
}

// rvRoles checks that each request the fake received carries the goal
// and ends its user message with the role line of roles, in order.
func rvRoles(t *testing.T, reqs []testkit.OpenAIRequest, goal string, roles ...string) {
	t.Helper()
	if len(reqs) != len(roles) {
		t.Fatalf("%d requests, want %d (%v)", len(reqs), len(roles), roles)
	}
	for i, r := range reqs {
		user := rvUser(r)
		lines := strings.Split(strings.TrimRight(user, "\n"), "\n")
		if last := lines[len(lines)-1]; last != "Role: "+roles[i] {
			t.Errorf("request %d ends with %q, want %q", i+1, last, "Role: "+roles[i])
		}
		if !strings.Contains(user, "Goal:\n"+goal) {
			t.Errorf("request %d (%s) does not carry the goal:\n%s", i+1, roles[i], user)
		}
	}
}

func rvStepRoles(steps []domain.Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Role)
	}
	return out
}

// TestReviewChangesRequestedThenApproved: analysis decides to execute;
// the agent works until it says done, which hands the work to review; the
// reviewer requests changes, so the work goes back to execution with the
// notes in its prompt, and restarts its progress; the second review
// approves and the task completes with the reviewer's summary.
func TestReviewChangesRequestedThenApproved(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		f := newWireFixture(t, open, fake, nil)
		const goal = "Write a haiku about queues to haiku.md"
		n := rvCreate(f, goal)
		const notes = "The haiku has four lines; a haiku has three."
		fake.Reply(rvAnalysis("execute", "Write haiku.md, then read it back."))
		fake.Reply(rvWrite("draft.md", "ideas", 40, "continue"))
		fake.Reply(rvWrite("haiku.md", "a\nb\nc\nd", 100, "done"))
		fake.Reply(rvVerdict("changes_requested", notes, ""))
		fake.Reply(rvWrite("haiku.md", "a\nb\nc", 70, "continue"))
		fake.Reply(testkit.DecisionJSON("read_file", map[string]string{"path": "haiku.md"}, 100, "done"))
		fake.Reply(rvVerdict("approve", "", "haiku.md holds a three-line haiku."))

		rvServe(f, 1)
		if got := f.task(n); got.Phase != domain.PhaseExecution || got.Progress != 0 || got.StaleCounter != 0 {
			t.Fatalf("after the analysis: phase %q, progress %d, stale %d", got.Phase, got.Progress, got.StaleCounter)
		}
		rvServe(f, 3)
		got := f.task(n)
		if got.Phase != domain.PhaseExecution || got.Progress != 100 || got.Status != domain.StatusRunning {
			t.Fatalf("after changes were requested: phase %q, %s %d%%", got.Phase, got.Status, got.Progress)
		}
		rvServe(f, 1)
		// The first step after the review restarts the progress from the
		// agent's estimate, lower than before.
		if got := f.task(n); got.Progress != 70 || got.StaleCounter != 0 {
			t.Fatalf("the first step after the review: progress %d, stale %d; want 70, 0", got.Progress, got.StaleCounter)
		}
		rvServe(f, 2)

		got = f.task(n)
		if got.Status != domain.StatusCompleted || got.Summary != "haiku.md holds a three-line haiku." || got.Phase != domain.PhaseDone || got.Progress != 100 {
			t.Fatalf("task = %s %d%% phase %q %q (%s); want completed with the reviewer's summary", got.Status, got.Progress, got.Phase, got.Summary, got.Error)
		}
		if p := rvPhases(f, n); !slices.Equal(p, []string{"execution", "review", "execution", "review", "done"}) {
			t.Fatalf("phase changes in the event log = %v", p)
		}
		if a := rvAttempts(f, n); a["analysis"] != 1 || a["execution"] != 2 || a["review"] != 2 || a["decomposition"] != 0 {
			t.Fatalf("attempts = %v; want analysis 1, execution 2, review 2", a)
		}
		if data, err := f.file(n, "haiku.md"); err != nil || data != "a\nb\nc" {
			t.Fatalf("haiku.md = %q, %v", data, err)
		}
		steps := f.steps(n)
		if r := rvStepRoles(steps); !slices.Equal(r, []string{"analysis", "agent", "agent", "reviewer", "agent", "agent", "reviewer"}) {
			t.Fatalf("step roles = %v", r)
		}
		if steps[0].Action != "execute" || steps[3].Action != "changes_requested" || steps[3].Result != notes || steps[6].Action != "approve" {
			t.Fatalf("steps: %q, %q %q, %q", steps[0].Action, steps[3].Action, steps[3].Result, steps[6].Action)
		}

		reqs := fake.Requests()
		rvRoles(t, reqs, goal, "analysis", "agent", "agent", "reviewer", "agent", "agent", "reviewer")
		if u := rvUser(reqs[4]); !strings.Contains(u, "The latest review's notes (verdict changes_requested):\n"+notes) {
			t.Fatalf("the execution after the review does not carry its notes:\n%s", u)
		}
		if u := rvUser(reqs[1]); strings.Contains(u, notes) || !strings.Contains(u, "Write haiku.md, then read it back.") {
			t.Fatalf("the first execution prompt should carry the plan and no review notes:\n%s", u)
		}
		if s := string(reqs[0].Schema()); !strings.Contains(s, `"decision"`) || !strings.Contains(s, `"decompose"`) {
			t.Fatalf("the analysis schema: %s", s)
		}
		if s := string(reqs[3].Schema()); !strings.Contains(s, `"verdict"`) || !strings.Contains(s, `"wrong_approach"`) {
			t.Fatalf("the reviewer's schema: %s", s)
		}
		if s := string(reqs[1].Schema()); !strings.Contains(s, `"progress"`) {
			t.Fatalf("the agent's schema: %s", s)
		}
		if u := rvUser(reqs[3]); !strings.Contains(u, "scripted done") {
			t.Fatalf("the reviewer does not see what the agent said it did:\n%s", u)
		}
		f.check()
	})
}

// TestReviewWrongApproachGoesBackToAnalysis: a wrong_approach verdict
// sends the work back to analysis, whose prompt carries the notes; the
// new plan is executed and approved.
func TestReviewWrongApproachGoesBackToAnalysis(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		f := newWireFixture(t, open, fake, nil)
		const goal = "Compare three queue libraries in compare.md"
		n := rvCreate(f, goal)
		const notes = "Prose hides the differences: use a table."
		fake.Reply(rvAnalysis("execute", "Describe each library in prose."))
		fake.Reply(rvWrite("compare.md", "River is ...", 100, "done"))
		fake.Reply(rvVerdict("wrong_approach", notes, ""))
		fake.Reply(rvAnalysis("execute", "Write one table, a row per library."))
		fake.Reply(rvWrite("compare.md", "| lib | ... |", 100, "done"))
		fake.Reply(rvVerdict("approve", "", "compare.md compares them in a table."))

		rvServe(f, 3)
		if got := f.task(n); got.Phase != domain.PhaseAnalysis || got.Status != domain.StatusRunning {
			t.Fatalf("after wrong_approach: phase %q, %s", got.Phase, got.Status)
		}
		rvServe(f, 3)
		got := f.task(n)
		if got.Status != domain.StatusCompleted || got.Summary != "compare.md compares them in a table." {
			t.Fatalf("task = %s %q (%s)", got.Status, got.Summary, got.Error)
		}
		if p := rvPhases(f, n); !slices.Equal(p, []string{"execution", "review", "analysis", "execution", "review", "done"}) {
			t.Fatalf("phase changes in the event log = %v", p)
		}
		if a := rvAttempts(f, n); a["analysis"] != 2 || a["execution"] != 2 || a["review"] != 2 {
			t.Fatalf("attempts = %v; want analysis 2, execution 2, review 2", a)
		}
		reqs := fake.Requests()
		rvRoles(t, reqs, goal, "analysis", "agent", "reviewer", "analysis", "agent", "reviewer")
		if u := rvUser(reqs[3]); !strings.Contains(u, "The latest review's notes (verdict wrong_approach):\n"+notes) || !strings.Contains(u, "The plan of the previous analysis:\nDescribe each library in prose.") {
			t.Fatalf("the second analysis lacks the review's notes or the old plan:\n%s", u)
		}
		if u := rvUser(reqs[4]); !strings.Contains(u, "Write one table, a row per library.") {
			t.Fatalf("the execution after the second analysis lacks its plan:\n%s", u)
		}
		f.check()
	})
}

// TestReviewExecutionRunsOutOfAttempts: an agent that says it is stuck
// begins another attempt of execution, with the reason in its prompt;
// the fourth attempt is the last, and its stuck fails the task naming the
// phase. The review budget is tested the same way: the fourth hand-over
// to review fails the task.
func TestReviewExecutionRunsOutOfAttempts(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		t.Run("execution", func(t *testing.T) {
			fake := testkit.NewOpenAI(t)
			f := newWireFixture(t, open, fake, nil)
			n := rvCreate(f, "Reach the unreachable")
			fake.Reply(rvAnalysis("execute", "Try."))
			for range 4 {
				fake.Reply(testkit.DecisionJSON("none", nil, 10, "stuck"))
			}
			rvServe(f, 4) // the analysis and three stuck attempts
			got := f.task(n)
			if got.Status != domain.StatusRunning || got.Phase != domain.PhaseExecution || rvAttempts(f, n)["execution"] != 4 {
				t.Fatalf("after three stuck attempts: %s phase %q attempts %v (%s)", got.Status, got.Phase, rvAttempts(f, n), got.Error)
			}
			rvServe(f, 1)
			got = f.task(n)
			if got.Status != domain.StatusFailed || got.Error != "the execution phase ran out of attempts (4 of 4)" || got.Phase != domain.PhaseExecution {
				t.Fatalf("task = %s phase %q %q; want failed naming the execution phase", got.Status, got.Phase, got.Error)
			}
			reqs := fake.Requests()
			rvRoles(t, reqs, "Reach the unreachable", "analysis", "agent", "agent", "agent", "agent")
			if u := rvUser(reqs[2]); !strings.Contains(u, "The previous attempt at this phase got stuck: scripted stuck") || !strings.Contains(u, "Phase execution, attempt 2 of 4.") {
				t.Fatalf("the second attempt's prompt:\n%s", u)
			}
			if p := rvPhases(f, n); !slices.Equal(p, []string{"execution"}) {
				t.Fatalf("phase changes = %v", p)
			}
			f.check()
		})
		t.Run("review", func(t *testing.T) {
			fake := testkit.NewOpenAI(t)
			f := newWireFixture(t, open, fake, nil)
			n := rvCreate(f, "Please the reviewer")
			fake.Reply(rvAnalysis("execute", "Try."))
			for i := range 3 {
				fake.Reply(rvWrite("try.md", strings.Repeat("x", i+1), 100, "done"))
				fake.Reply(rvVerdict("changes_requested", "Not yet.", ""))
			}
			fake.Reply(rvWrite("try.md", "xxxx", 100, "done"))
			rvServe(f, 7)
			if got := f.task(n); got.Status != domain.StatusRunning || rvAttempts(f, n)["review"] != 3 || rvAttempts(f, n)["execution"] != 4 {
				t.Fatalf("after three reviews: %s attempts %v (%s)", got.Status, rvAttempts(f, n), got.Error)
			}
			rvServe(f, 1)
			got := f.task(n)
			if got.Status != domain.StatusFailed || got.Error != "the review phase ran out of attempts (3 of 3)" || got.Phase != domain.PhaseExecution {
				t.Fatalf("task = %s phase %q %q; want failed naming the review phase", got.Status, got.Phase, got.Error)
			}
			f.check()
		})
	})
}

// TestReviewDecomposition: analysis decomposes into three subtasks,
// created with create_subtask; the task waits on them in decomposition, is
// resumed when the last one ends with their outcomes in its prompt,
// combines them, and is reviewed and approved. It runs under the default
// token budget (TASKLOOM_MAX_TOKENS), as the binary does: every subtask
// is made, each holding a share of what the parent has left, together no
// more than that.
func TestReviewDecomposition(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		f := newBudgetFixture(t, open, fake, nil, defaultBudget)
		const goal = "Write the client, the server and their tests"
		n := rvCreate(f, goal)
		fake.Reply(rvAnalysis("decompose", "Split client, server and tests.",
			tasks.SubtaskPlan{Goal: "Write the client", Name: "Client"}, tasks.SubtaskPlan{Goal: "Write the server"},
			tasks.SubtaskPlan{Goal: "Write the tests", Name: "Tests"}))
		rvServe(f, 1)
		got := f.task(n)
		if got.Status != domain.StatusWaiting || got.WaitingOn != domain.WaitSubtasks || got.Phase != domain.PhaseDecomposition {
			t.Fatalf("after the analysis: %s on %q, phase %q; want waiting on subtasks in decomposition", got.Status, got.WaitingOn, got.Phase)
		}
		first := f.steps(n)[0]
		if first.Action != "create_subtask" || !first.Success || !strings.Contains(first.Result, `created subtask #2 "Client"`) ||
			!strings.Contains(first.Result, `created subtask #3 "Write the server"`) || !strings.Contains(first.Result, `created subtask #4 "Tests"`) {
			t.Fatalf("the analysis step: %+v", first)
		}
		checkShares(t, f, got, 2, 3, 4)
		for _, c := range []int64{2, 3, 4} {
			child := f.task(c)
			if child.ParentNumber != n || child.Strategy != domain.StrategyLoop {
				t.Fatalf("subtask #%d: parent %d, strategy %q", c, child.ParentNumber, child.Strategy)
			}
		}

		for i, c := range []int64{2, 3, 4} {
			fake.Reply(testkit.DecisionJSON("none", nil, 100, "done")) // subtask c
			rvServe(f, 1)
			want := domain.StatusWaiting
			if i == 2 {
				want = domain.StatusQueued
			}
			if got := f.task(n); got.Status != want {
				t.Fatalf("the parent is %s after subtask #%d ended; want %s", got.Status, c, want)
			}
		}
		fake.Reply(rvWrite("README.md", "client, server and tests", 90, "done"))
		fake.Reply(rvVerdict("approve", "", "All three are written."))
		rvServe(f, 2)

		got = f.task(n)
		if got.Status != domain.StatusCompleted || got.Summary != "All three are written." {
			t.Fatalf("task = %s %q (%s)", got.Status, got.Summary, got.Error)
		}
		if p := rvPhases(f, n); !slices.Equal(p, []string{"decomposition", "review", "done"}) {
			t.Fatalf("phase changes in the event log = %v", p)
		}
		if a := rvAttempts(f, n); a["analysis"] != 1 || a["decomposition"] != 1 || a["review"] != 1 || a["execution"] != 0 {
			t.Fatalf("attempts = %v", a)
		}
		reqs := fake.Requests()
		if len(reqs) != 6 {
			t.Fatalf("%d requests, want 6", len(reqs))
		}
		parent := []testkit.OpenAIRequest{reqs[0], reqs[4], reqs[5]}
		rvRoles(t, parent, goal, "analysis", "agent", "reviewer")
		for _, r := range []testkit.OpenAIRequest{reqs[4], reqs[5]} {
			u := rvUser(r)
			if !strings.Contains(u, `subtask #2 "Client" completed`) || !strings.Contains(u, `subtask #3 "Write the server" completed`) ||
				!strings.Contains(u, `subtask #4 "Tests" completed`) {
				t.Fatalf("a prompt after the subtasks lacks their outcomes:\n%s", u)
			}
		}
		f.check()
	})
}

// TestReviewUnusableReplies: a reply that is no analysis, no decision or
// no review is a failed step, not a crash; the task goes on. An unusable
// analysis or review is another attempt of its phase; an unusable
// decision is the loop's failed step without progress. Fenced and embedded
// JSON, and verdicts in other spellings, are read.
func TestReviewUnusableReplies(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		f := newWireFixture(t, open, fake, nil)
		n := rvCreate(f, "Write notes.md")
		fake.Reply("Let me think about how to do this.")                                    // 1: no analysis
		fake.Reply("Here it is:\n```json\n" + rvAnalysis("Execute", "Write it.") + "\n```") // 2: fenced
		fake.Reply(`{"thought": "hm"}`)                                                     // 3: no decision
		fake.Reply(rvWrite("notes.md", "n", 100, "done"))                                   // 4: done
		fake.Reply(`{"verdict": "looks fine"}`)                                             // 5: no verdict
		fake.Reply("My review: " + rvVerdict("Changes Requested", "Add a title.", ""))      // 6: embedded
		fake.Reply(rvWrite("notes.md", "# Notes\nn", 100, "done"))                          // 7
		fake.Reply(rvVerdict("approved", "", "notes.md has a title."))                      // 8

		rvServe(f, 1)
		got := f.task(n)
		steps := f.steps(n)
		if got.Status != domain.StatusRunning || got.Phase != domain.PhaseAnalysis || steps[0].Success || !strings.Contains(steps[0].Error, "not a usable analysis") || got.StaleCounter != 0 {
			t.Fatalf("after a reply that is no analysis: %s phase %q stale %d, step %+v", got.Status, got.Phase, got.StaleCounter, steps[0])
		}
		if a := rvAttempts(f, n); a["analysis"] != 2 {
			t.Fatalf("attempts after an unusable analysis = %v; want a second analysis", a)
		}
		rvServe(f, 2)
		got = f.task(n)
		if got.Phase != domain.PhaseExecution || got.StaleCounter != 1 || f.steps(n)[2].Success {
			t.Fatalf("after a reply that is no decision: phase %q stale %d", got.Phase, got.StaleCounter)
		}
		rvServe(f, 2)
		got = f.task(n)
		steps = f.steps(n)
		if got.Phase != domain.PhaseReview || got.Status != domain.StatusRunning || steps[4].Success || !strings.Contains(steps[4].Error, "not a usable review") {
			t.Fatalf("after a reply that is no review: %s phase %q, step %+v", got.Status, got.Phase, steps[4])
		}
		if a := rvAttempts(f, n); a["review"] != 2 {
			t.Fatalf("attempts after an unusable review = %v; want a second review", a)
		}
		rvServe(f, 3)
		got = f.task(n)
		if got.Status != domain.StatusCompleted || got.Summary != "notes.md has a title." {
			t.Fatalf("task = %s %q (%s)", got.Status, got.Summary, got.Error)
		}
		if p := rvPhases(f, n); !slices.Equal(p, []string{"analysis", "execution", "review", "execution", "review", "done"}) {
			t.Fatalf("phase changes = %v", p)
		}
		f.check()
	})
}

// TestCheckRejectsACorruptedReviewPhase: taskloom check's verification
// finds nothing wrong with a review task's log until an event moves its
// phase along no row of the review table.
func TestCheckRejectsACorruptedReviewPhase(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		f := newWireFixture(t, open, fake, nil)
		n := rvCreate(f, "Write notes.md")
		fake.Reply(rvAnalysis("execute", "Write it."))
		rvServe(f, 1)
		f.check()

		// Straight from execution to done, skipping the review.
		_, err := f.store.UpdateTask(f.ctx, n, func(cur domain.Task) (domain.Mutation, error) {
			after := cur
			after.Phase = domain.PhaseDone
			return domain.Change(cur, after, domain.EventIterated, "w", f.clk.Now(), nil)
		})
		if err != nil {
			t.Fatal(err)
		}
		row := f.task(n)
		evs, err := f.store.TaskEvents(f.ctx, n, 0)
		if err != nil {
			t.Fatal(err)
		}
		v := domain.Check(row, evs, len(f.steps(n)))
		if len(v) != 1 || !strings.Contains(v[0].Problem, "moves the review phase from execution to \"done\", which is not a transition of the review table") {
			t.Fatalf("check = %v; want the phase change reported", v)
		}
	})
}

func TestParseAnalysis(t *testing.T) {
	for _, c := range []struct {
		in   string
		want tasks.AnalysisReply
		bad  string
	}{
		{in: `{"thought":"t","decision":"execute","plan":"p"}`, want: tasks.AnalysisReply{Thought: "t", Decision: "execute", Plan: "p"}},
		{in: `{"decision":"EXECUTION","plan":["a"," ","b"]}`, want: tasks.AnalysisReply{Decision: "execute", Plan: "a\nb"}},
		{in: "ok\n```json\n{\"decision\":\"decompose\",\"subtasks\":[{\"goal\":\"g1\",\"name\":\"n1\"},\"g2\",{\"goal\":\" \"}]}\n```",
			want: tasks.AnalysisReply{Decision: "decompose", Subtasks: []tasks.SubtaskPlan{{Goal: "g1", Name: "n1"}, {Goal: "g2"}}}},
		{in: `{"decision":"decompose","subtasks":[]}`, bad: "names no subtask"},
		{in: `{"decision":"decompose","subtasks":{"goal":"g"}}`, bad: "not a list"},
		{in: `{"decision":"think"}`, bad: `decision "think"`},
		{in: `{"thought":"t"}`, bad: "no decision"},
		{in: `{"decision":"execute","plan":3}`, bad: "plan"},
		{in: "", bad: "empty"},
		{in: "no json at all", bad: "no JSON"},
	} {
		got, err := tasks.ParseAnalysis(c.in)
		if c.bad != "" {
			if !errors.Is(err, tasks.ErrBadAnalysis) || !strings.Contains(err.Error(), c.bad) {
				t.Errorf("ParseAnalysis(%q) = %v; want an ErrBadAnalysis saying %q", c.in, err, c.bad)
			}
			continue
		}
		if err != nil || got.Thought != c.want.Thought || got.Decision != c.want.Decision || got.Plan != c.want.Plan || !slices.Equal(got.Subtasks, c.want.Subtasks) {
			t.Errorf("ParseAnalysis(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

func TestParseReview(t *testing.T) {
	for _, c := range []struct {
		in   string
		want tasks.ReviewReply
		bad  string
	}{
		{in: `{"thought":"t","verdict":"approve","notes":"","summary":"s"}`, want: tasks.ReviewReply{Thought: "t", Verdict: "approve", Summary: "s"}},
		{in: `{"verdict":"Changes-Requested","notes":["fix a","fix b"]}`, want: tasks.ReviewReply{Verdict: "changes_requested", Notes: "fix a\nfix b"}},
		{in: `{"thought":"wrong tool","verdict":"wrong approach"}`, want: tasks.ReviewReply{Thought: "wrong tool", Verdict: "wrong_approach", Notes: "wrong tool"}},
		{in: `Verdict below. {"verdict":"APPROVED"}`, want: tasks.ReviewReply{Verdict: "approve"}},
		{in: `{"verdict":"maybe"}`, bad: `verdict "maybe"`},
		{in: `{"notes":"x"}`, bad: "no verdict"},
		{in: `{"verdict":"approve","notes":{}}`, bad: "notes"},
		{in: "{", bad: "no JSON"},
	} {
		got, err := tasks.ParseReview(c.in)
		if c.bad != "" {
			if !errors.Is(err, tasks.ErrBadReview) || !strings.Contains(err.Error(), c.bad) {
				t.Errorf("ParseReview(%q) = %v; want an ErrBadReview saying %q", c.in, err, c.bad)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseReview(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

func FuzzParseReviewReplies(f *testing.F) {
	f.Add(rvAnalysis("decompose", "p", tasks.SubtaskPlan{Goal: "g"}))
	f.Add(rvVerdict("approve", "n", "s"))
	f.Add("```json\n{\"verdict\":\"changes\"}\n```")
	f.Fuzz(func(t *testing.T, s string) {
		if a, err := tasks.ParseAnalysis(s); err == nil && a.Decision == tasks.AnalysisDecompose && len(a.Subtasks) == 0 {
			t.Fatalf("a decomposition without subtasks was accepted: %q", s)
		}
		if v, err := tasks.ParseReview(s); err == nil && v.Verdict != tasks.ReviewApprove && v.Verdict != tasks.ReviewChangesRequested && v.Verdict != tasks.ReviewWrongApproach {
			t.Fatalf("verdict %q accepted from %q", v.Verdict, s)
		}
	})
}

// TestReviewTextsStayBounded: a plan and review notes of 50,000
// characters are clipped where the task keeps them, so neither its state
// nor any later prompt carries them whole.
func TestReviewTextsStayBounded(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		f := newWireFixture(t, open, fake, nil)
		n := rvCreate(f, "Write a haiku")
		long := strings.Repeat("plan ", 10_000)
		fake.Reply(rvAnalysis("execute", long))
		fake.Reply(rvWrite("haiku.md", "a\nb\nc", 100, "done"))
		fake.Reply(rvVerdict("changes_requested", strings.Repeat("note ", 10_000), ""))
		fake.Reply(rvWrite("haiku.md", "a\nb\nc", 90, "continue"))
		rvServe(f, 4)
		if got := f.task(n); len(got.State) > 4*4000+1000 {
			t.Fatalf("the task's state is %d bytes; want its texts clipped", len(got.State))
		}
		for i, r := range fake.Requests() {
			if u := rvUser(r); len(u) > 40_000 {
				t.Errorf("request %d's user message is %d bytes; want the plan and notes clipped", i+1, len(u))
			}
		}
		f.check()
	})
}
