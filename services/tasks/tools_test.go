package tasks_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/tasks"
)

// echoTool stands for an MCP tool: its name has a dot, which OpenAI
// refuses in a function name.
type echoTool struct{}

func (echoTool) Info() plugin.ActionInfo {
	return plugin.ActionInfo{Name: "everything.echo", Description: "Echo the text back.", Tool: true,
		Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)}
}

func (echoTool) Handle(_ context.Context, call *plugin.Call) (plugin.Result, error) {
	var p struct{ Text string }
	if err := json.Unmarshal(call.Params, &p); err != nil {
		return plugin.Result{}, err
	}
	return plugin.Result{Success: true, Text: "echo: " + p.Text}, nil
}

// sameJSON reports whether a and b are the same JSON value (PostgreSQL's
// JSONB keeps a step's params without their spacing and key order).
func sameJSON(a, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

// toolMessages are a request's tool messages: call ID → content.
func toolMessages(r testkit.OpenAIRequest) map[string]string {
	out := map[string]string{}
	for _, m := range r.Body.Messages {
		if m.Role == goopenai.ChatMessageRoleTool {
			out[m.ToolCallID] = m.Content
		}
	}
	return out
}

// TestToolsCalls: a tools task offers its tools natively (an MCP tool's
// dotted name mapped and back) with report_progress; every call of a
// reply runs in order, and the next request carries the assistant's calls
// and each result as a tool message under its call's ID; each failed call
// raises the next temperature by 0.1 until a claim whose calls all
// succeed; a reply without calls completes the task with it as summary.
func TestToolsCalls(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		f := newNotifiedFixture(t, open, fake, nil, echoTool{})
		const goal = "Write notes/a.md and read it back"
		n := f.create(goal, func(in *domain.NewTask) { in.Strategy = domain.StrategyTools }).Number

		fake.ReplyToolCalls("Writing, then reading back.",
			testkit.OpenAIToolCall{ID: "call_write", Name: "write_file", Arguments: `{"path":"notes/a.md","content":"alpha"}`},
			testkit.OpenAIToolCall{ID: "call_read", Name: "read_file", Arguments: `{"path":"notes/a.md"}`},
			testkit.OpenAIToolCall{ID: "call_progress", Name: "report_progress", Arguments: `{"progress":40,"note":"wrote and read a.md"}`})
		fake.ReplyToolCalls("",
			testkit.OpenAIToolCall{ID: "call_missing", Name: "read_file", Arguments: `{"path":"notes/missing.md"}`},
			testkit.OpenAIToolCall{ID: "call_made_up", Name: "no_such_tool", Arguments: `{}`})
		fake.ReplyToolCalls("",
			testkit.OpenAIToolCall{ID: "call_echo", Name: "everything__echo", Arguments: `{"text":"hi"}`},
			testkit.OpenAIToolCall{ID: "call_progress2", Name: "report_progress", Arguments: `{"progress":70}`})
		fake.Reply("notes/a.md holds alpha, written and read back.")

		f.step("test")
		got := f.task(n)
		if got.Progress != 40 || got.Status != domain.StatusRunning || got.StaleCounter != 0 {
			t.Fatalf("after the first reply: %s progress %d stale %d", got.Status, got.Progress, got.StaleCounter)
		}
		// A step per call, in the order they ran, under the claim's
		// iteration; the reply's text is the first one's thought.
		steps := f.steps(n)
		if len(steps) != 3 {
			t.Fatalf("%d steps after the first reply, want 3: %+v", len(steps), steps)
		}
		for i, want := range []string{"write_file", "read_file", "report_progress"} {
			if s := steps[i]; s.Iteration != 1 || s.Call != i || s.Action != want || !s.Success || s.Role != domain.RoleAgent {
				t.Errorf("step %d = %+v; want call %d of iteration 1, %s, succeeded, as the agent", i, s, i, want)
			}
		}
		if steps[0].Thought != "Writing, then reading back." || steps[1].Thought != "" ||
			!sameJSON(string(steps[1].Params), `{"path":"notes/a.md"}`) {
			t.Errorf("steps = %+v", steps)
		}
		// read_file ran after write_file, in the same claim: it read what
		// write_file had just written.
		if !strings.Contains(steps[1].Result, "alpha") || !strings.Contains(steps[2].Result, "40%") {
			t.Fatalf("the read's result %q, the report's %q", steps[1].Result, steps[2].Result)
		}

		f.step("test")
		got = f.task(n)
		if got.Progress != 40 || got.StaleCounter != 1 {
			t.Fatalf("after the failed calls: progress %d stale %d; want 40 and 1 (no report_progress)", got.Progress, got.StaleCounter)
		}
		if steps := f.steps(n); len(steps) != 5 || steps[3].Action != "read_file" || steps[3].Success || steps[3].Error == "" ||
			steps[4].Action != "no_such_tool" || steps[4].Success || !strings.Contains(steps[4].Error, `"no_such_tool" is not a tool this task can use`) ||
			steps[4].Iteration != 2 || steps[4].Call != 1 {
			t.Fatalf("the second reply's steps = %+v", steps[3:])
		}
		f.step("test")
		if got := f.task(n); got.Progress != 70 || got.StaleCounter != 0 {
			t.Fatalf("after the echo: progress %d stale %d", got.Progress, got.StaleCounter)
		}
		f.step("test")
		got = f.task(n)
		if got.Status != domain.StatusCompleted || got.Progress != 100 || got.Summary != "notes/a.md holds alpha, written and read back." || got.Iteration != 4 {
			t.Fatalf("after the final answer: %s progress %d summary %q iteration %d", got.Status, got.Progress, got.Summary, got.Iteration)
		}
		if f.step("test") {
			t.Fatal("a completed task was served again")
		}

		reqs := fake.Requests()
		if len(reqs) != 4 {
			t.Fatalf("%d model calls, want 4", len(reqs))
		}
		for i, want := range []float64{0.2, 0.2, 0.4, 0.2} {
			r := reqs[i]
			if temp, ok := r.Temperature(); !ok || temp != want {
				t.Errorf("request %d: temperature %v, want %v", i+1, temp, want)
			}
			names := strings.Join(r.ToolNames(), " ")
			for _, tool := range []string{"write_file", "read_file", "everything__echo", "report_progress"} {
				if !strings.Contains(" "+names+" ", " "+tool+" ") {
					t.Errorf("request %d offers %s, not %s", i+1, names, tool)
				}
			}
			if user := strings.TrimSpace(lastUser(r)); !strings.HasSuffix(user, "\nRole: agent") || !strings.Contains(user, goal) {
				t.Errorf("request %d: the last user message lacks the goal or the role line:\n%s", i+1, user)
			}
			if r.ResponseFormat() != "" {
				t.Errorf("request %d asks for response_format %s", i+1, r.ResponseFormat())
			}
		}
		second := reqs[1]
		msgs := second.Body.Messages
		if len(msgs) != 6 || msgs[2].Role != "assistant" || len(msgs[2].ToolCalls) != 3 || msgs[2].ToolCalls[0].ID != "call_1_1" ||
			!sameJSON(msgs[2].ToolCalls[1].Function.Arguments, `{"path":"notes/a.md"}`) || msgs[2].Content != "Writing, then reading back." {
			t.Fatalf("second request's messages = %+v", msgs)
		}
		results := toolMessages(second)
		if !strings.HasPrefix(results["call_1_1"], "ok") || !strings.Contains(results["call_1_2"], "alpha") ||
			!strings.Contains(results["call_1_3"], "40%") || msgs[3].ToolCallID != "call_1_1" || msgs[4].ToolCallID != "call_1_2" {
			t.Errorf("second request's tool messages = %q", results)
		}
		if r := toolMessages(reqs[2]); !strings.HasPrefix(r["call_2_1"], "FAILED: ") || !strings.Contains(r["call_2_2"], "not a tool") {
			t.Errorf("third request's tool messages = %q", r)
		}
		if r := toolMessages(reqs[3]); r["call_3_1"] != "ok\necho: hi" {
			t.Errorf("fourth request's tool messages = %q", r)
		}
		f.check()
	})
}

// TestToolsUnsupported: a model that refuses tools fails the task at once
// with a sentence saying so and what to do — one model call, no hold of
// the other tasks, no stalemate loop.
func TestToolsUnsupported(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		fake.RejectTools()
		f := newNotifiedFixture(t, open, fake, nil)
		n := f.create("Call some tools", func(in *domain.NewTask) { in.Strategy = domain.StrategyTools }).Number
		f.step("test")
		got := f.task(n)
		if got.Status != domain.StatusFailed || !strings.Contains(got.Error, "does not support tool calling") ||
			!strings.Contains(got.Error, "another strategy") || !strings.Contains(got.Error, "does not support tools") {
			t.Fatalf("task = %s, error %q; want failed saying the model does not support tool calling", got.Status, got.Error)
		}
		if n := len(fake.Requests()); n != 1 {
			t.Errorf("%d model calls, want exactly 1", n)
		}
		if s := f.svc.ModelState(); s != "ok" {
			t.Errorf("model state = %q: a model without tools put the replica on hold", s)
		}
		if f.step("test") {
			t.Error("the failed task was served again")
		}
		// The model still serves a task of another strategy.
		fake.Reply(testkit.DecisionJSON("none", nil, 100, "done"))
		m := f.create("Just answer").Number
		f.step("test")
		if got := f.task(m); got.Status != domain.StatusCompleted {
			t.Errorf("a loop task after it = %s", got.Status)
		}
		f.check()
	})
}

// TestToolsApproval: a call that needs a person's approval ends its
// reply's run: the calls before it ran, it waits, the rest do not run;
// once approved it runs as asked, and the next request says what ran
// before it.
func TestToolsApproval(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		f := newNotifiedFixture(t, open, fake, func(o *tasks.Options) { o.ApproveTools = []string{"write_file"} })
		n := f.create("Deploy", func(in *domain.NewTask) { in.Strategy = domain.StrategyTools }).Number
		fake.ReplyToolCalls("",
			testkit.OpenAIToolCall{ID: "call_list", Name: "list_files", Arguments: `{}`},
			testkit.OpenAIToolCall{ID: "call_write", Name: "write_file", Arguments: `{"path":"deploy.sh","content":"echo hi"}`},
			testkit.OpenAIToolCall{ID: "call_after", Name: "read_file", Arguments: `{"path":"deploy.sh"}`})
		fake.Reply("Deployed.")

		f.step("test")
		got := f.task(n)
		if got.Status != domain.StatusWaiting || got.WaitingOn != domain.WaitApproval || got.ApprovalAction != "write_file" || got.ApprovalRole != domain.RoleAgent {
			t.Fatalf("task = %s on %q for %q as %q; want waiting on approval of write_file, asked as %q", got.Status, got.WaitingOn, got.ApprovalAction, got.ApprovalRole, domain.RoleAgent)
		}
		if _, err := f.svc.Approve(f.ctx, n, "u1", ""); err != nil {
			t.Fatal(err)
		}
		f.step("test") // runs the approved call, no model call
		if data, err := f.file(n, "deploy.sh"); err != nil || data != "echo hi" {
			t.Fatalf("deploy.sh = %q, %v", data, err)
		}
		f.step("test")
		reqs := fake.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d model calls, want 2", len(reqs))
		}
		user := lastUser(reqs[1])
		if !strings.Contains(user, "these calls of the same reply ran:\n- list_files {} → ok") || !strings.Contains(user, "not run: read_file") {
			t.Errorf("the request after the approval does not say what ran before it:\n%s", user)
		}
		if got := f.task(n); got.Status != domain.StatusCompleted || got.Summary != "Deployed." {
			t.Errorf("task = %s %q", got.Status, got.Summary)
		}
		// The approved call is the agent's, as the calls before it are.
		for _, st := range f.steps(n) {
			if st.Action != "" && st.Action != "none" && st.Role != domain.RoleAgent {
				t.Errorf("step %d (%s) has the role %q, want %q", st.Iteration, st.Action, st.Role, domain.RoleAgent)
			}
		}
		f.check()
	})
}
