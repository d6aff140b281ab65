package demo

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/plugin"
)

const (
	// Name is the model name the demo model reports.
	Name = "taskloom-demo"
	// DefaultThink is how long the demo model thinks per call.
	DefaultThink = time.Second
	// MinPlan and MaxPlan bound the iterations a demo task takes.
	MinPlan = 5
	MaxPlan = 8
	// PlanFile is the file a demo task writes in its workspace.
	PlanFile = "notes/plan.md"
)

// ChatReply is the demo model's answer to anything that is not a task
// iteration.
const ChatReply = "I am the Taskloom demo model (no real model is configured), so I cannot chat. " +
	"Configure OPENAI_API_KEY or OPENAI_BASE_URL to talk to a real model; " +
	"task commands such as \"create task ...\" work without one."

// Options configures the demo model.
type Options struct {
	// Think is how long each call takes: 0 means DefaultThink, a negative
	// value no wait at all.
	Think time.Duration
	// Clock times the thinking; nil means the wall clock.
	Clock clock.Clock
	// Logger is told, once, that the demo model is in use; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Model is the demo model.
type Model struct {
	think time.Duration
	clock clock.Clock
}

var (
	_ plugin.Model = (*Model)(nil)
	_ plugin.Demo  = (*Model)(nil)
)

// New returns the demo model and logs that it is in use.
func New(opts Options) *Model {
	m := &Model{think: opts.Think, clock: opts.Clock}
	switch {
	case m.think == 0:
		m.think = DefaultThink
	case m.think < 0:
		m.think = 0
	}
	if m.clock == nil {
		m.clock = clock.Real{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	log.Warn("no model configured: using the built-in demo model, which plays a scripted task and cannot chat; set OPENAI_API_KEY or OPENAI_BASE_URL to use a real model",
		slog.String("model", Name), slog.Duration("think", m.think))
	return m
}

// IsDemo reports that this is the demo model.
func (*Model) IsDemo() bool { return true }

// Generate thinks for the configured time, then answers a task iteration
// with the next decision of the task's plan, a request for durable facts
// by rule (facts), and anything else with ChatReply.
func (m *Model) Generate(ctx context.Context, req plugin.ModelRequest) (plugin.ModelResponse, error) {
	if err := clock.Sleep(ctx, m.clock, m.think); err != nil {
		return plugin.ModelResponse{}, fmt.Errorf("demo model: %w", err)
	}
	text := ChatReply
	var calls []plugin.ToolCall
	switch {
	case req.Task != nil:
		text, calls = answer(*req.Task, req.Tools, offered(req, "post_message"), offered(req, "run_command"))
	case req.Schema != nil && req.Schema.Name == plugin.FactsSchemaName:
		text = facts(req)
	case req.Schema != nil && req.Schema.Name == plugin.ActionChoiceSchemaName:
		text = chat(req)
	}
	var prompt int64
	for _, msg := range req.Messages {
		prompt += tokens(msg.Content)
	}
	return plugin.ModelResponse{
		Text:      text,
		ToolCalls: calls,
		Model:     Name,
		Usage:     plugin.Usage{PromptTokens: prompt, CompletionTokens: tokens(text)},
	}, nil
}

// offered reports whether req offers the tool name: among its native
// tools, or listed in its prompt as the iteration prompt lists tools.
func offered(req plugin.ModelRequest, name string) bool {
	for _, t := range req.Tools {
		if t.Name == name {
			return true
		}
	}
	for _, m := range req.Messages {
		if strings.Contains(m.Content, "\n- "+name+": ") {
			return true
		}
	}
	return false
}

// tokens estimates a token count the way people do: a token per four
// bytes.
func tokens(s string) int64 { return int64(len(s)+3) / 4 }

// PlanLength is how many iterations the demo model takes for goal: 5 to 8,
// the same every time for the same goal.
func PlanLength(goal string) int {
	h := fnv.New32a()
	h.Write([]byte(strings.TrimSpace(goal)))
	return MinPlan + int(h.Sum32()%uint32(MaxPlan-MinPlan+1))
}

// Decision is one iteration's answer, in the shape the task service parses.
type Decision struct {
	Thought  string            `json:"thought"`
	Action   string            `json:"action"`
	Params   map[string]string `json:"params"`
	Progress int               `json:"progress"`
	Status   domain.Verdict    `json:"status"`
	Summary  string            `json:"summary"`
}

// Decide is the decision for the iteration task is about to run.
// Iterations past the plan's end, which only happen when steps failed along
// the way, finish the task.
func Decide(task plugin.TaskRef) Decision {
	return plan{task: task, n: PlanLength(task.Goal), post: true}.decide()
}

// decide is Decide for p.
func (p plan) decide() Decision {
	task := p.task
	i := min(max(task.Iteration, 1), p.n)
	mv := p.move(i)
	d := Decision{
		Thought:  "(demo model) " + mv.thought,
		Action:   mv.action,
		Params:   p.params(mv),
		Progress: 100 * i / p.n,
		Status:   domain.VerdictContinue,
		Summary:  fmt.Sprintf("(demo model) Step %d of %d: %s.", i, p.n, mv.did),
	}
	if i == p.n {
		d.Status = domain.VerdictDone
		d.Summary = p.finalSummary()
		return d
	}
	// Keep the estimate above where the task stands, so a task that lost
	// steps (or met the demo model half way) is not called stale.
	if d.Progress <= task.Progress {
		d.Progress = min(task.Progress+1, 99)
	}
	return d
}

type plan struct {
	task plugin.TaskRef
	n    int
	// post says post_message is among the tools offered (a task with a
	// room); without it the plan's progress notes look over the notes
	// folder instead.
	post bool
	// asks are the steps after the first that show a person's part: a
	// question, a command to approve (plan.withAsks).
	asks []move
}

// Goals whose words call for a person's part, by a rule a newcomer can
// read in docs/chat.md: a choice ("JWT or sessions", "which", "choose",
// "decide") makes the task ask a question and wait for the answer; work
// that runs something ("run", "build", "test", "command", "install"…)
// makes it ask to run a command, and wait for approval, when run_command
// is on.
var (
	choiceWords  = regexp.MustCompile(`(?i)\b(or|which|choose|decide|pick)\b`)
	commandWords = regexp.MustCompile(`(?i)\b(run|runs|build|builds|test|tests|command|commands|compile|install|script|shell)\b`)
)

// DemoCommand is the command a demo task asks to run.
const DemoCommand = `echo "hello from the sandbox" && uname -s && ls -la`

// withAsks adds to p the question and the command its goal calls for
// (canRun: run_command is offered), each a step of its own after the
// first, so the plan grows by one step for each.
func (p plan) withAsks(canRun bool) plan {
	goal := clip(p.task.Goal, 60)
	if choiceWords.MatchString(p.task.Goal) {
		p.asks = append(p.asks, move{action: "ask_user",
			params: map[string]string{"question": fmt.Sprintf("(demo model) Before I go on with %q: which way should I take? "+
				"(The demo model asks this of any goal with a choice in it.)", goal)},
			todo: "Ask which way to take.", did: "asked which way to take",
			thought: "The goal leaves a choice open: ask the person before going on."})
	}
	if canRun && commandWords.MatchString(p.task.Goal) {
		p.asks = append(p.asks, move{action: "run_command", params: map[string]string{"command": DemoCommand},
			todo: "Run a harmless command in the sandbox.", did: "ran a command in the sandbox",
			thought: "The goal runs something: try the sandbox with a harmless command, which a person approves first."})
	}
	p.n += len(p.asks)
	return p
}

type move struct {
	action  string
	params  map[string]string
	todo    string // the plan's line for the step
	did     string // what the step did, for summaries
	thought string
}

func (p plan) move(i int) move {
	goal := clip(p.task.Goal, 60)
	switch {
	case i == p.n:
		return move{action: "none", todo: "Report that the task is done.", did: "reported the task done",
			thought: "Everything in the plan is done; the task is complete."}
	case i >= 2 && i < 2+len(p.asks):
		return p.asks[i-2]
	case i > 2:
		i -= len(p.asks)
	}
	switch {
	case i == 1:
		return move{action: "list_files", todo: "List the files in the workspace.", did: "listed the workspace",
			thought: fmt.Sprintf("Working on %q. First, see what is already in the workspace.", goal)}
	case i == 2:
		// Decide adds the content, which lists every move's todo.
		return move{action: "write_file", params: map[string]string{"path": PlanFile},
			todo: "Write this plan to " + PlanFile + ".", did: "wrote " + PlanFile,
			thought: "Write the plan down so that it can be followed and checked."}
	case i == 3:
		return move{action: "read_file", params: map[string]string{"path": PlanFile},
			todo: "Read the plan back.", did: "read " + PlanFile + " back",
			thought: "Read the plan back to check it was saved."}
	}
	switch (i - 4) % 4 {
	case 0:
		if !p.post {
			return move{action: "list_files", params: map[string]string{"path": "notes"},
				todo: "Look at what the notes folder holds now.", did: "looked at the notes folder",
				thought: "See how far the notes have come."}
		}
		text := fmt.Sprintf("(demo model) Task #%d is at step %d of %d of a rehearsal plan for %q. "+
			"No real model is configured, so no real work is done.", p.task.Number, i, p.n, goal)
		return move{action: "post_message", params: map[string]string{"text": text},
			todo: "Tell the room how far the task has come.", did: "posted a progress note",
			thought: "Tell the room how the task is going."}
	case 1:
		return move{action: "list_files", params: map[string]string{"path": "notes"},
			todo: "Check the notes folder.", did: "checked the notes folder",
			thought: "Check that the notes folder holds the plan."}
	case 2:
		return move{action: "read_file", params: map[string]string{"path": PlanFile},
			todo: "Go over the plan once more.", did: "went over the plan again",
			thought: "Go over the plan once more before finishing."}
	default:
		return move{action: "list_files", todo: "Look over the workspace again.", did: "looked over the workspace again",
			thought: "Look over the workspace a last time."}
	}
}

// file is the content of PlanFile.
func (p plan) file() string {
	var b strings.Builder
	b.WriteString("This file was written by the Taskloom demo model (no real model is configured; " +
		"set OPENAI_API_KEY or OPENAI_BASE_URL to use one).\n\n")
	fmt.Fprintf(&b, "# Plan for task #%d\n\nGoal: %s\n\n", p.task.Number, strings.TrimSpace(p.task.Goal))
	for i := 1; i <= p.n; i++ {
		fmt.Fprintf(&b, "%d. %s\n", i, p.move(i).todo)
	}
	return b.String()
}

func (p plan) finalSummary() string {
	return fmt.Sprintf("(demo model) Finished the rehearsal plan for %q in %d iterations: listed the workspace, "+
		"wrote %s and read it back. This was the Taskloom demo model, not real work; "+
		"configure OPENAI_API_KEY or OPENAI_BASE_URL to use a real model.", clip(p.task.Goal, 60), p.n, PlanFile)
}

// clip shortens s to n runes on one line.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
