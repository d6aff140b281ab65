package demo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/demo"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/plugin"
)

// decision is the shape the task service parses.
type decision struct {
	Thought  string          `json:"thought"`
	Action   string          `json:"action"`
	Params   json.RawMessage `json:"params"`
	Progress int             `json:"progress"`
	Status   domain.Verdict  `json:"status"`
	Summary  string          `json:"summary"`
}

var quiet = slog.New(slog.DiscardHandler)

// instant is a demo model that does not think.
func instant() *demo.Model { return demo.New(demo.Options{Think: -1, Logger: quiet}) }

// run plays a task to the end as the task service would, feeding each
// decision's progress back, and returns the decisions as parsed JSON.
func run(t *testing.T, m *demo.Model, goal string) []decision {
	t.Helper()
	ref := plugin.TaskRef{Number: 7, Goal: goal}
	var out []decision
	for ref.Iteration = 1; ref.Iteration <= 20; ref.Iteration++ {
		resp, err := m.Generate(t.Context(), plugin.ModelRequest{
			Messages: []plugin.ChatMessage{{Role: plugin.RoleUser, Content: "Goal: " + goal}},
			Task:     &ref,
		})
		if err != nil {
			t.Fatalf("iteration %d: %v", ref.Iteration, err)
		}
		var d decision
		dec := json.NewDecoder(strings.NewReader(resp.Text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&d); err != nil {
			t.Fatalf("iteration %d: %q is not a decision: %v", ref.Iteration, resp.Text, err)
		}
		out = append(out, d)
		if d.Status != domain.VerdictContinue {
			return out
		}
		ref.Progress = d.Progress
	}
	t.Fatalf("goal %q: not done after 20 iterations", goal)
	return nil
}

var goals = []string{
	"Build auth feature",
	"Fix database connection",
	"Add tests",
	"Write a haiku about queues",
	"Summarise the README in three bullet points",
	"Refactor the notification service so that it batches per room",
	"",
	"Ünïcödé gœl with emoji 🚀 and\nnew lines",
}

func TestSameGoalSameSequence(t *testing.T) {
	t.Parallel()
	for _, goal := range goals {
		a, b := run(t, instant(), goal), run(t, instant(), goal)
		if !slices.EqualFunc(a, b, func(x, y decision) bool { return fmt.Sprint(x) == fmt.Sprint(y) }) {
			t.Errorf("goal %q: two runs differ:\n%v\n%v", goal, a, b)
		}
	}
}

func TestPlanRunsToDone(t *testing.T) {
	t.Parallel()
	tools := []string{"list_files", "write_file", "read_file", "post_message", "none"}
	for _, goal := range goals {
		t.Run(goal, func(t *testing.T) {
			t.Parallel()
			ds := run(t, instant(), goal)
			if n := len(ds); n < 5 || n > 8 || n != demo.PlanLength(goal) {
				t.Fatalf("done after %d iterations, want PlanLength %d in 5–8", n, demo.PlanLength(goal))
			}
			last := ds[len(ds)-1]
			if last.Status != domain.VerdictDone || last.Progress != 100 {
				t.Errorf("last decision %s at %d%%, want done at 100%%", last.Status, last.Progress)
			}
			if !strings.Contains(last.Summary, "demo model") || !strings.Contains(last.Summary, "OPENAI_API_KEY") {
				t.Errorf("final summary %q does not say it is the demo model", last.Summary)
			}
			if first := ds[0]; first.Action != "list_files" || string(first.Params) != "{}" {
				t.Errorf("first step %s %s, want list_files {}", first.Action, first.Params)
			}
			var wrote, read bool
			prev := 0
			for i, d := range ds {
				if d.Progress <= prev {
					t.Errorf("iteration %d: progress %d does not rise above %d", i+1, d.Progress, prev)
				}
				prev = d.Progress
				for _, s := range []string{d.Thought, d.Summary} {
					if !strings.Contains(s, "(demo model)") {
						t.Errorf("iteration %d: %q does not say (demo model)", i+1, s)
					}
				}
				if !slices.Contains(tools, d.Action) {
					t.Errorf("iteration %d: unknown tool %q", i+1, d.Action)
				}
				var params map[string]string
				if err := json.Unmarshal(d.Params, &params); err != nil {
					t.Errorf("iteration %d: params %s: %v", i+1, d.Params, err)
				}
				switch d.Action {
				case "write_file":
					wrote = true
					if keys := slices.Sorted(maps.Keys(params)); !slices.Equal(keys, []string{"content", "path"}) {
						t.Errorf("write_file params have keys %v, want content and path", keys)
					}
					firstLine, _, _ := strings.Cut(params["content"], "\n")
					if !strings.Contains(firstLine, "Taskloom demo model") {
						t.Errorf("plan file starts %q, want it to say the demo model wrote it", firstLine)
					}
					if !strings.Contains(params["content"], strings.TrimSpace(goal)) {
						t.Errorf("plan file does not carry the goal:\n%s", params["content"])
					}
					if params["path"] != demo.PlanFile {
						t.Errorf("write_file path %q, want %q", params["path"], demo.PlanFile)
					}
				case "read_file":
					if !wrote {
						t.Errorf("iteration %d reads %s before it is written", i+1, params["path"])
					}
					read = read || params["path"] == demo.PlanFile
				case "post_message":
					if !strings.Contains(params["text"], "(demo model)") {
						t.Errorf("posted %q without saying it is the demo model", params["text"])
					}
				}
			}
			if !wrote || !read {
				t.Errorf("wrote %v, read back %v; want both", wrote, read)
			}
		})
	}
}

func TestPlanLengthsSpread(t *testing.T) {
	t.Parallel()
	seen := map[int]bool{}
	for i := range 64 {
		n := demo.PlanLength(fmt.Sprintf("goal number %d", i))
		if n < demo.MinPlan || n > demo.MaxPlan {
			t.Fatalf("PlanLength = %d, outside %d–%d", n, demo.MinPlan, demo.MaxPlan)
		}
		seen[n] = true
	}
	if len(seen) != demo.MaxPlan-demo.MinPlan+1 {
		t.Errorf("64 goals give plan lengths %v, want every length from 5 to 8", seen)
	}
}

func TestProgressStaysAboveTheTask(t *testing.T) {
	t.Parallel()
	// A task that got further than the plan expects (another model ran it
	// before) still sees its progress rise until the plan ends.
	d := demo.Decide(plugin.TaskRef{Goal: "Build auth feature", Iteration: 1, Progress: 60})
	if d.Status != domain.VerdictContinue || d.Progress <= 60 {
		t.Errorf("Decide = %s at %d%%, want continue above 60%%", d.Status, d.Progress)
	}
	// Iterations past the plan finish the task.
	d = demo.Decide(plugin.TaskRef{Goal: "Build auth feature", Iteration: 30, Progress: 60})
	if d.Status != domain.VerdictDone || d.Progress != 100 {
		t.Errorf("Decide past the plan = %s at %d%%, want done at 100%%", d.Status, d.Progress)
	}
}

func TestChatReply(t *testing.T) {
	t.Parallel()
	m := instant()
	if !plugin.IsDemo(m) {
		t.Error("plugin.IsDemo = false")
	}
	resp, err := m.Generate(t.Context(), plugin.ModelRequest{
		Messages: []plugin.ChatMessage{{Role: plugin.RoleUser, Content: "hi there, what can you do?"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != demo.ChatReply || !strings.Contains(resp.Text, "OPENAI_API_KEY") || !strings.Contains(resp.Text, "OPENAI_BASE_URL") {
		t.Errorf("Text = %q", resp.Text)
	}
	if resp.Model != demo.Name {
		t.Errorf("Model = %q, want %q", resp.Model, demo.Name)
	}
	if want := int64(len(resp.Text)+3) / 4; resp.Usage.PromptTokens == 0 || resp.Usage.CompletionTokens != want {
		t.Errorf("Usage = %+v, want prompt tokens counted and %d completion tokens", resp.Usage, want)
	}
}

func TestThink(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		think time.Duration
		want  time.Duration
	}{
		{"default", 0, demo.DefaultThink},
		{"set", 3 * time.Second, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := clock.NewFake(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
			m := demo.New(demo.Options{Think: tt.think, Clock: clk, Logger: quiet})
			done := make(chan error, 1)
			go func() {
				_, err := m.Generate(t.Context(), plugin.ModelRequest{Task: &plugin.TaskRef{Goal: "Add tests", Iteration: 1}})
				done <- err
			}()
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			if err := clk.BlockUntil(ctx, 1); err != nil {
				t.Fatal("the demo model does not think on the clock:", err)
			}
			clk.Advance(tt.want - time.Millisecond)
			if clk.Waiters() != 1 {
				t.Fatalf("the thinking ended before %v passed", tt.want)
			}
			select {
			case err := <-done:
				t.Fatalf("Generate returned before %v passed (err %v)", tt.want, err)
			default:
			}
			clk.Advance(time.Millisecond)
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Generate did not return after thinking")
			}
		})
	}
}

func TestCancelWhileThinking(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	m := demo.New(demo.Options{Clock: clk, Logger: quiet})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := m.Generate(ctx, plugin.ModelRequest{Task: &plugin.TaskRef{Goal: "Add tests", Iteration: 1}})
		done <- err
	}()
	bctx, bcancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer bcancel()
	if err := clk.BlockUntil(bctx, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Generate error %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Generate did not return when its context was canceled")
	}
	if n := clk.Waiters(); n != 0 {
		t.Errorf("%d timers left on the clock", n)
	}
}

func TestNewLogsOnce(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	m := demo.New(demo.Options{Think: -1, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	for range 3 {
		if _, err := m.Generate(t.Context(), plugin.ModelRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	out := buf.String()
	if strings.Count(out, "\n") != 1 || !strings.Contains(out, "demo model") || !strings.Contains(out, "OPENAI_API_KEY") {
		t.Errorf("log = %q, want one line naming the demo model and OPENAI_API_KEY", out)
	}
}

// TestDemoDrawsFacts: the demo model answers a request for durable facts
// with the sentences that state something, the first-person ones about
// their author, each citing its message; questions, commands and the
// bot's own words are not facts.
func TestDemoDrawsFacts(t *testing.T) {
	m := demo.New(demo.Options{Think: -1})
	ask, _ := json.Marshal(plugin.FactsAsk{Room: "discord:C1", Messages: []plugin.FactsMessage{
		{ID: 7, AuthorID: "U1", Author: "ann", Text: "The staging database is ORCA-7 in Frankfurt. Which one is prod?"},
		{ID: 8, AuthorID: "U2", Author: "bob", Text: "I live in Berlin"},
		{ID: 9, AuthorID: "U3", Author: "carl", Text: "create task the build is slow"},
		{ID: 10, AuthorID: "bot", Author: "Taskloom", FromBot: true, Text: "The answer is 42."},
		{ID: 11, AuthorID: "U1", Author: "ann", Text: "ok"},
	}})
	resp, err := m.Generate(context.Background(), plugin.ModelRequest{
		Messages: []plugin.ChatMessage{{Role: plugin.RoleSystem, Content: "facts"}, {Role: plugin.RoleUser, Content: string(ask)}},
		Schema:   &plugin.JSONSchema{Name: plugin.FactsSchemaName, Schema: plugin.FactsSchema},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got plugin.FactsAnswer
	if err := json.Unmarshal([]byte(resp.Text), &got); err != nil {
		t.Fatalf("%v: %s", err, resp.Text)
	}
	want := []plugin.DrawnFact{
		{Text: "The staging database is ORCA-7 in Frankfurt.", Sources: []int64{7}},
		{Text: "bob said: I live in Berlin.", About: "U2", Sources: []int64{8}},
	}
	if !reflect.DeepEqual(got.Facts, want) {
		t.Fatalf("facts = %+v, want %+v", got.Facts, want)
	}
}

// TestDemoShowsAPersonsPart: without a key a newcomer still sees a task
// ask a question and ask to run a command. A goal with a choice asks at
// its second step; one that runs something asks to run DemoCommand when
// run_command is offered, and only then; a goal with neither keeps the
// rehearsal plan.
func TestDemoShowsAPersonsPart(t *testing.T) {
	t.Parallel()
	m := instant()
	step := func(goal string, iteration int, canRun bool) decision {
		t.Helper()
		prompt := "Goal: " + goal + "\n\nTools:\n- list_files: …\n- ask_user: …"
		if canRun {
			prompt += "\n- run_command: …"
		}
		resp, err := m.Generate(t.Context(), plugin.ModelRequest{
			Messages: []plugin.ChatMessage{{Role: plugin.RoleUser, Content: prompt}},
			Task:     &plugin.TaskRef{Number: 3, Goal: goal, Iteration: iteration},
		})
		if err != nil {
			t.Fatal(err)
		}
		var d decision
		if err := json.Unmarshal([]byte(resp.Text), &d); err != nil {
			t.Fatalf("%q: %v", resp.Text, err)
		}
		return d
	}
	if d := step("Should the login use JWT or sessions?", 2, false); d.Action != "ask_user" || !strings.Contains(string(d.Params), "which way should I take") {
		t.Errorf("a goal with a choice, step 2 = %s %s; want ask_user", d.Action, d.Params)
	}
	if d := step("Run the tests and fix what fails", 2, true); d.Action != "run_command" || !strings.Contains(string(d.Params), "hello from the sandbox") {
		t.Errorf("a goal that runs something, step 2 = %s %s; want run_command", d.Action, d.Params)
	}
	if d := step("Run the tests and fix what fails", 2, false); d.Action == "run_command" {
		t.Errorf("run_command asked for though it is not offered")
	}
	both := "Choose JWT or sessions, then run the tests"
	if a, b := step(both, 2, true), step(both, 3, true); a.Action != "ask_user" || b.Action != "run_command" {
		t.Errorf("a goal with both: steps 2 and 3 = %s, %s; want ask_user, run_command", a.Action, b.Action)
	}
	if d := step("Write a haiku about queues", 2, true); d.Action != "write_file" {
		t.Errorf("a goal with neither, step 2 = %s; want the rehearsal plan's write_file", d.Action)
	}
	// The plan still runs to done, one step longer for each ask.
	if got, want := len(run(t, m, "Should the login use JWT or sessions?")), demo.PlanLength("Should the login use JWT or sessions?")+1; got != want {
		t.Errorf("a goal with a question takes %d steps, want %d", got, want)
	}
}

// TestDemoChatsFromMemory: free text in chat is answered with what the
// room's memory recalled that shares the most words with it, said as the
// demo's; with nothing that matches, the reply says so and what works.
func TestDemoChatsFromMemory(t *testing.T) {
	t.Parallel()
	m := instant()
	ask := func(system, text string) string {
		t.Helper()
		resp, err := m.Generate(t.Context(), plugin.ModelRequest{
			Messages: []plugin.ChatMessage{{Role: plugin.RoleSystem, Content: system}, {Role: plugin.RoleUser, Content: text}},
			Schema:   &plugin.JSONSchema{Name: plugin.ActionChoiceSchemaName},
		})
		if err != nil {
			t.Fatal(err)
		}
		var sel struct{ Action, Reply string }
		if err := json.Unmarshal([]byte(resp.Text), &sel); err != nil || sel.Action != "none" {
			t.Fatalf("%q is not a reply picking no action (%v)", resp.Text, err)
		}
		return sel.Reply
	}
	section := plugin.MemorySection([]domain.Recollection{
		{Kind: domain.RecallPassage, Text: "Office plants are watered on Mondays.", Source: "Handbook"},
		{Kind: domain.RecallPassage, Text: "To restart the ingest queue, run `ingest restart` on the primary.", Source: "Runbook"},
	}, "console", "")
	got := ask("You are Taskloom.\n\n"+section, "how do I restart the ingest queue?")
	if !strings.Contains(got, "(demo model)") || !strings.Contains(got, "ingest restart") || strings.Contains(got, "plants") {
		t.Errorf("reply = %q; want the runbook's line, said as the demo's", got)
	}
	got = ask("You are Taskloom.\n\n"+section, "what's for lunch?")
	if !strings.Contains(got, "(demo model)") || !strings.Contains(got, "nothing in this room's memory") || !strings.Contains(got, "help") {
		t.Errorf("reply with nothing matching = %q", got)
	}
}
