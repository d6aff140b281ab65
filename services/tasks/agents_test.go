package tasks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/services/tasks"
)

// newTeamFixture is a wire fixture (the real OpenAI-compatible adapter
// talking to fake) whose service has the options mod sets: agents, team
// limits. client may stand between them (nil: the fake's own).
func newTeamFixture(t *testing.T, open teststore.Opener, fake *testkit.OpenAI, client *http.Client, mod func(*tasks.Options)) *fixture {
	t.Helper()
	f := newWireFixture(t, open, fake, client)
	opts := tasks.Options{Runtime: f.rt, Lease: lease, Owner: "test"}
	if mod != nil {
		mod(&opts)
	}
	f.svc = tasks.New(opts)
	return f
}

// createAs creates a task of strategy with goal.
func (f *fixture) createAs(strategy, goal string, mod ...func(*domain.NewTask)) domain.Task {
	f.t.Helper()
	return f.create(goal, append([]func(*domain.NewTask){func(in *domain.NewTask) { in.Strategy = strategy }}, mod...)...)
}

// stepsN serves n claims as owner, each of which must find a task.
func (f *fixture) stepsN(n int, owner string) {
	f.t.Helper()
	for i := range n {
		if !f.step(owner) {
			f.t.Fatalf("claim %d of %d found no task (tasks: %s)", i+1, n, f.taskStates())
		}
	}
}

// taskStates says how each task stands, for a failure message.
func (f *fixture) taskStates() string {
	all, err := f.store.ListTasks(f.ctx, domain.TaskFilter{})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, t := range all {
		out = append(out, fmt.Sprintf("#%d %s %q", t.Number, t.Status, t.Error))
	}
	return strings.Join(out, "; ")
}

// supReply is a supervisor's reply choosing next with instruction.
func supReply(next, instruction string) string {
	return mustJSON(map[string]any{"thought": "routing", "next": next, "instruction": instruction, "summary": ""})
}

// magReply is a magentic supervisor's reply: supReply with facts and plan.
func magReply(next, instruction string, facts []string, plan string) string {
	return mustJSON(map[string]any{"thought": "routing", "next": next, "instruction": instruction, "summary": "", "facts": facts, "plan": plan})
}

// doneReply is a supervisor's DONE with summary.
func doneReply(summary string) string {
	return mustJSON(map[string]any{"thought": "finished", "next": "DONE", "instruction": "", "summary": summary})
}

func mustJSON(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(raw)
}

// rolesOf lists the roles of steps, in order.
func rolesOf(steps []domain.Step) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.Role
	}
	return out
}

// actionsOf lists the actions of steps, in order.
func actionsOf(steps []domain.Step) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.Action
	}
	return out
}

// roleLine is the role a request says on the last line of its last
// message ("Role: <role>", docs/strategies.md).
func roleLine(r testkit.OpenAIRequest) string {
	msgs := r.Body.Messages
	if len(msgs) == 0 {
		return ""
	}
	last := strings.TrimSpace(msgs[len(msgs)-1].Content)
	line := last[strings.LastIndexByte(last, '\n')+1:]
	return strings.TrimPrefix(line, "Role: ")
}

// systemOf and userOf are a request's system and last user message.
func systemOf(r testkit.OpenAIRequest) string { return r.Body.Messages[0].Content }
func userOf(r testkit.OpenAIRequest) string   { return r.Body.Messages[len(r.Body.Messages)-1].Content }

// requestSize is how many bytes of messages a request carried.
func requestSize(r testkit.OpenAIRequest) int {
	n := 0
	for _, m := range r.Body.Messages {
		n += len(m.Content)
	}
	return n
}

func stateOfTask(t *testing.T, task domain.Task) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(task.State), &m); err != nil {
		t.Fatalf("task #%d's state %q is not JSON: %v", task.Number, task.State, err)
	}
	return m
}

// gate holds the next request to the model until it is opened, then
// sends it whatever its context says: a worker wedged past its lease,
// whose answer comes back late.
type gate struct {
	base    http.RoundTripper
	mu      sync.Mutex
	hold    chan struct{}
	arrived chan struct{}
}

func gatedClient(fake *testkit.OpenAI) (*http.Client, *gate) {
	g := &gate{base: fake.Client().Transport}
	return &http.Client{Transport: g}, g
}

// arm makes the next request wait for open; it returns a channel closed
// when that request has arrived.
func (g *gate) arm() (arrived <-chan struct{}, open func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hold, g.arrived = make(chan struct{}), make(chan struct{})
	hold := g.hold
	return g.arrived, func() { close(hold) }
}

func (g *gate) RoundTrip(r *http.Request) (*http.Response, error) {
	g.mu.Lock()
	hold, arrived := g.hold, g.arrived
	g.hold, g.arrived = nil, nil
	g.mu.Unlock()
	if hold != nil {
		close(arrived)
		<-hold
		r = r.WithContext(context.WithoutCancel(r.Context()))
	}
	return g.base.RoundTrip(r)
}

// TestAgentAskingForAToolItLacks: the reviewer, who only reads, asks to
// write a file: a failed step saying which tools it has, nothing
// written; its prompt showed only its own tools.
func TestAgentAskingForAToolItLacks(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		f := newTeamFixture(t, open, fake, nil, nil)
		n := f.createAs(domain.StrategySupervisor, "Review the report").Number
		fake.Reply(supReply("reviewer", "Fix the report"))
		fake.Reply(testkit.DecisionJSON("write_file", map[string]string{"path": "report.md", "content": "fixed"}, 50, "continue"))
		f.stepsN(2, "w")

		steps := f.steps(n)
		last := steps[len(steps)-1]
		want := `reviewer can use only read_file, list_files, read_result; "write_file" is not one of its tools`
		if last.Role != "reviewer" || last.Action != "write_file" || last.Success || last.Error != want {
			t.Fatalf("reviewer's step = %+v; want a failed write_file saying %q", last, want)
		}
		if _, err := f.file(n, "report.md"); err == nil {
			t.Fatal("report.md was written by an agent without write_file")
		}
		reqs := fake.Requests()
		sys := systemOf(reqs[1])
		if roleLine(reqs[1]) != "reviewer" || strings.Contains(sys, "- write_file:") || strings.Contains(sys, "- http_get:") ||
			!strings.Contains(sys, "- read_file:") || !strings.Contains(sys, "You are reviewer") {
			t.Fatalf("the reviewer's prompt (role %q) shows other tools than its own:\n%s", roleLine(reqs[1]), sys)
		}
		if got := f.task(n); got.Phase != domain.RoleSupervisor || got.StaleCounter != 1 {
			t.Fatalf("after the failed step: phase %q, stale %d; want the supervisor's turn and one step without progress", got.Phase, got.StaleCounter)
		}
		f.check()
	})
}

// TestCustomAgentsAreTheTeam: the agents of Options are the ones the
// supervisor is shown, chooses from and hands steps to.
func TestCustomAgentsAreTheTeam(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		agents := []tasks.Agent{
			{Name: "scout", Description: "looks around", System: "You look around.", Tools: []string{"list_files"}},
			{Name: "scribe", Description: "takes notes", System: "You take notes.", Tools: []string{"write_file"}},
		}
		f := newTeamFixture(t, open, fake, nil, func(o *tasks.Options) { o.Agents = agents })
		n := f.createAs(domain.StrategySupervisor, "Take stock").Number
		fake.Reply(supReply("researcher", "Look"))
		fake.Reply(supReply("scout", "Look"))
		fake.Reply(testkit.DecisionJSON("list_files", nil, 10, "continue"))
		f.stepsN(3, "w")
		steps := f.steps(n)
		if got := rolesOf(steps); strings.Join(got, ",") != "supervisor,supervisor,scout" {
			t.Fatalf("roles = %v", got)
		}
		if !strings.Contains(steps[0].Error, `chose "researcher", which is not one of the agents; they are scout, scribe`) {
			t.Fatalf("choosing a built-in agent the team lacks: %q", steps[0].Error)
		}
		sys := systemOf(fake.Requests()[0])
		if !strings.Contains(sys, "- scout: looks around (tools: list_files)") || strings.Contains(sys, "researcher") {
			t.Fatalf("the supervisor's prompt does not show the team:\n%s", sys)
		}
		if s := string(fake.Requests()[0].Schema()); !strings.Contains(s, `"enum":["scout","scribe","DONE"]`) {
			t.Fatalf("the decision's schema does not list the agents: %s", s)
		}
	})
}

// TestMultiAgentTaskIsServedFairly: one supervisor task and two loop
// tasks on one worker: claims go round the three, so the claims each has
// had never differ by more than one, whatever the supervisor's claims
// are.
func TestMultiAgentTaskIsServedFairly(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		f := newTeamFixture(t, open, fake, nil, nil)
		team := f.createAs(domain.StrategySupervisor, "Compare the three queue libraries").Number
		loopA := f.create("Write part A").Number
		loopB := f.create("Write part B").Number
		const rounds = 6
		for r := range rounds {
			if r%2 == 0 {
				fake.Reply(supReply("writer", fmt.Sprintf("write section %d", r)))
			} else {
				fake.Reply(testkit.DecisionJSON("write_file", map[string]string{"path": fmt.Sprintf("s%d.md", r), "content": "x"}, 10*r, "continue"))
			}
			fake.Reply(note(fmt.Sprintf("a%d", r), 10*(r+1), "continue"))
			fake.Reply(note(fmt.Sprintf("b%d", r), 10*(r+1), "continue"))
		}
		for i := range rounds * 3 {
			f.stepsN(1, "w")
			its := []int{f.task(team).Iteration, f.task(loopA).Iteration, f.task(loopB).Iteration}
			if slicesMax(its)-slicesMin(its) > 1 {
				t.Fatalf("after claim %d the tasks have had %v claims: more than one apart", i+1, its)
			}
		}
		var order []string
		for _, r := range fake.Requests() {
			u := userOf(r)
			order = append(order, u[len("Task #"):strings.IndexByte(u, ':')])
		}
		if got := strings.Join(order, ""); got != strings.Repeat("123", rounds) {
			t.Fatalf("claims went to tasks %s; want round robin 123…", got)
		}
		if got := rolesOf(f.steps(team)); strings.Join(got, ",") != "supervisor,writer,supervisor,writer,supervisor,writer" {
			t.Fatalf("the supervisor task's roles = %v", got)
		}
		f.check()
	})
}

func slicesMax(v []int) int {
	m := v[0]
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

func slicesMin(v []int) int {
	m := v[0]
	for _, x := range v {
		m = min(m, x)
	}
	return m
}

// TestSharedTranscriptStaysBounded: a supervisor task's prompts stop
// growing once the history's window is full: each role's largest request
// over claims 65–104 is within 5% of its largest over claims 25–64,
// measured as the fake received them (each span is 40 claims, two turns
// of the history's layout as a role sees it: the writer's largest came at
// claims 26, 46 and 66); and each role's request at step 49–52 is at most
// 1.5 times the same role's at step 5–8 (docs/PERFORMANCE.md). The supervisor
// sees the narrower SupervisorHistory: with the agents' window (5 steps in
// full, 15 condensed) its small prompt grew 1.7 times.
func TestSharedTranscriptStaysBounded(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		f := newTeamFixture(t, open, fake, nil, func(o *tasks.Options) { o.Team.MaxSteps = 200 })
		n := f.createAs(domain.StrategySupervisor, "Collect the notes", func(in *domain.NewTask) { in.MaxIterations = 400 }).Number
		// Cycles of four claims, as a real team's: the supervisor hands
		// the writer a note to write (a 1,500-character file), then the
		// researcher reads it back (a long result); decisions and steps
		// carry a sentence or two of thought and instruction.
		body := strings.Repeat("queue library notes, ", 75)
		thought := "The notes so far cover the libraries' APIs; the next gap is how each one retries failed jobs, which the comparison needs."
		for c := range 26 {
			path := fmt.Sprintf("notes/%d.md", c)
			fake.Reply(mustJSON(map[string]any{"thought": thought, "next": "writer", "summary": "",
				"instruction": "Write " + path + " with what the team found about retries: one paragraph per library, with the option names and their defaults."}))
			fake.Reply(mustJSON(map[string]any{"thought": thought, "action": "write_file", "params": map[string]string{"path": path, "content": fmt.Sprintf("%d %s", c, body)},
				"progress": 1 + 2*c, "status": "continue", "summary": ""}))
			fake.Reply(mustJSON(map[string]any{"thought": thought, "next": "researcher", "summary": "",
				"instruction": "Read " + path + " back and check every option it names against the libraries' documentation."}))
			fake.Reply(mustJSON(map[string]any{"thought": thought, "action": "read_file", "params": map[string]string{"path": path},
				"progress": 2 + 2*c, "status": "continue", "summary": ""}))
		}
		f.stepsN(104, "w")
		if got := f.task(n); got.Status != domain.StatusRunning {
			t.Fatalf("task = %s (%s) after 104 claims", got.Status, got.Error)
		}
		reqs := fake.Requests()
		for _, steps := range [][3]int{{5, 29, 49}, {6, 30, 50}, {8, 32, 52}} { // supervisor, writer, researcher
			early, mid, late := reqs[steps[0]-1], reqs[steps[1]-1], reqs[steps[2]-1]
			role := roleLine(early)
			if roleLine(mid) != role || roleLine(late) != role {
				t.Fatalf("requests %v are of roles %q, %q and %q", steps, role, roleLine(mid), roleLine(late))
			}
			a, m, b := requestSize(early), requestSize(mid), requestSize(late)
			t.Logf("%s: step %d %d bytes, step %d %d bytes, step %d %d bytes (×%.2f)", role, steps[0], a, steps[1], m, steps[2], b, float64(b)/float64(a))
			// The history retires steps in blocks, so a role's prompt
			// rises and falls within a block: its largest prompt late in
			// the task is no larger than its largest in the middle.
			largest := func(from, to int) int {
				most := 0
				for i := from; i <= to && i <= len(reqs); i++ {
					if roleLine(reqs[i-1]) == role {
						most = max(most, requestSize(reqs[i-1]))
					}
				}
				return most
			}
			if lm, lb := largest(25, 64), largest(65, 104); float64(lb) > 1.05*float64(lm) {
				t.Errorf("%s's prompt grows with the task: at most %d bytes over claims 25–64, %d over 65–104", role, lm, lb)
			}
			if float64(b) > 1.5*float64(a) {
				t.Errorf("%s's prompt at step %d is %d bytes, more than 1.5 × %d at step %d", role, steps[2], b, a, steps[0])
			}
		}
	})
}
