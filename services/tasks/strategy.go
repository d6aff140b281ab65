package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/plugin"
)

// A Strategy makes the claims of the tasks that use it (docs/strategies.md). Each
// claim is one call of Claim, which makes at most one model call and
// turns the reply into the claim's outcome; the service commits the
// outcome under the claim's lease. So the fair queue, leases, fences,
// budgets, notifications and `taskloom check` hold for every strategy,
// and a strategy keeps what it needs between claims in the task's Phase,
// State and Ledger, through the outcome.
//
// A Strategy is shared by every worker: Claim must be safe for
// concurrent use.
type Strategy interface {
	Claim(ctx context.Context, turn *Turn) (domain.Outcome, error)
}

// StrategyFunc adapts a function to a Strategy.
type StrategyFunc func(ctx context.Context, turn *Turn) (domain.Outcome, error)

// Claim calls f.
func (f StrategyFunc) Claim(ctx context.Context, turn *Turn) (domain.Outcome, error) {
	return f(ctx, turn)
}

// builtinStrategies are the strategies every service has, in the order
// docs/strategies.md lists them.
func builtinStrategies() []namedStrategy {
	return []namedStrategy{
		{domain.StrategyLoop, loop{}},
		{domain.StrategyReact, react{}},
		{domain.StrategyTools, nativeTools{}},
		{domain.StrategyReview, review{}},
		{domain.StrategySupervisor, supervisor{}},
		{domain.StrategyMagentic, magentic()},
		{domain.StrategyGroupChat, groupChat{}},
	}
}

type namedStrategy struct {
	name string
	s    Strategy
}

// strategies is a service's strategies by name, and their names in the
// order a refusal lists them.
type strategies struct {
	byName map[string]Strategy
	names  []string
}

func newStrategies(extra map[string]Strategy) strategies {
	ss := strategies{byName: map[string]Strategy{}}
	for _, b := range builtinStrategies() {
		ss.byName[b.name] = b.s
		ss.names = append(ss.names, b.name)
	}
	var added []string
	for name, s := range extra {
		if _, ok := ss.byName[name]; !ok {
			added = append(added, name)
		}
		ss.byName[name] = s
	}
	slices.Sort(added)
	ss.names = append(ss.names, added...)
	return ss
}

// check refuses a name that is not one of the strategies, in a sentence
// listing them.
func (ss strategies) check(name string) error {
	if name == "" {
		return nil
	}
	if _, ok := ss.byName[name]; !ok {
		return fmt.Errorf("create task: %w: %s", domain.ErrInvalid, domain.UnknownStrategy(name, ss.names))
	}
	return nil
}

// Turn is one claim of a task as its strategy sees it: the task as
// claimed, its history, and the means to ask the model and run a tool
// under the claim's lease. Its methods record what they did in the
// outcome they are given, so a strategy composes them and returns it.
type Turn struct {
	// Task is the task as claimed.
	Task domain.Task
	// Steps are the task's latest steps, oldest first: the window the
	// prompt shows (History.Window), not every step — an iteration reads
	// no more of a task however old it is (docs/PERFORMANCE.md).
	Steps []domain.Step
	// Answers are the answers the task was resumed with and the outcomes
	// of the subtasks it waited on, oldest first.
	Answers []string
	// Runtime is the runtime the task runs in.
	Runtime *plugin.Runtime

	it     *Iterator
	system string // the character's system prompt, with a retry's context
	memory string // the "Relevant memory" section; "" for none
	files  *domain.FileView
	older  domain.Digest // what the task's steps before Steps count
}

// Outcome starts the claim's outcome: the lease it commits under, the
// task's progress, the verdict continue.
func (t *Turn) Outcome() domain.Outcome {
	return domain.Outcome{Owner: t.Task.LeaseOwner, Fence: t.Task.Fence, Progress: t.Task.Progress, Verdict: domain.VerdictContinue}
}

// Request is what a strategy asks the model on its turn. The zero
// Request is a loop iteration's.
type Request struct {
	// Role is whose turn it is: the user message ends with a line
	// "Role: <role>" (docs/strategies.md), and the request's TaskRef names it.
	Role string
	// System is the template (in package prompts) of the system message:
	// the fixed part of the prompt, given .System and .Tools. Empty is
	// iteration_system.tmpl.
	System string
	// Notes are sections shown after the history (review notes, an
	// instruction, a ledger).
	Notes []string
	// Instruction ends the user message; empty is "Choose the next
	// action."
	Instruction string
	// Tools are the tools the prompt shows; nil is every tool.
	Tools []Tool
	// Schema is the reply's JSON Schema; nil is free text.
	Schema *plugin.JSONSchema
	// Temperature, when set, is the request's temperature; nil is the
	// base temperature raised by the failed steps in a row (docs/tasks.md).
	Temperature *float64
	// History, when set, bounds the history the prompt shows instead of
	// the service's History (a supervisor, which routes, sees less).
	History *History
}

// history is the window r's prompt shows.
func (t *Turn) history(r Request) History {
	if r.History != nil {
		return *r.History
	}
	return t.it.History
}

// Messages builds the prompt of r: the fixed system message, then the
// task, its bounded history, r's notes and instruction.
func (t *Turn) Messages(r Request) ([]plugin.ChatMessage, error) {
	tools := r.Tools
	if tools == nil {
		tools = ToolsOf(t.Runtime, t.Task)
	}
	return BuildIterationPrompt(PromptInput{
		System:      t.system,
		Template:    r.System,
		Tools:       tools,
		Task:        t.Task,
		Steps:       t.Steps,
		Older:       t.older,
		Answers:     t.Answers,
		Memory:      t.memory,
		History:     t.history(r),
		Notes:       r.Notes,
		Instruction: r.Instruction,
		Role:        r.Role,
	})
}

// Temperature is the temperature of a request with no temperature of its
// own: the base raised by the failed steps in a row.
func (t *Turn) Temperature() float64 { return StressTemperature(t.it.Temperature, t.Steps) }

// Ask makes the claim's model call for r and counts its tokens in o. A
// model that could not be used at all is a *ModelFailure, which the
// strategy returns as is: the task is released unchanged.
func (t *Turn) Ask(ctx context.Context, o *domain.Outcome, r Request) (plugin.ModelResponse, error) {
	msgs, err := t.Messages(r)
	if err != nil {
		return plugin.ModelResponse{}, fmt.Errorf("prompt of task #%d: %w", t.Task.Number, err)
	}
	return t.Call(ctx, o, plugin.ModelRequest{Messages: msgs, Schema: r.Schema}, r.Role, r.Temperature)
}

// Call makes the claim's model call with messages a strategy built
// itself, and counts its tokens in o; see Ask.
func (t *Turn) Call(ctx context.Context, o *domain.Outcome, req plugin.ModelRequest, role string, temperature *float64) (plugin.ModelResponse, error) {
	rt := t.Runtime
	temp := t.Temperature()
	if temperature != nil {
		temp = *temperature
	}
	t32 := float32(temp)
	req.Temperature = &t32
	req.Task = &plugin.TaskRef{Number: t.Task.Number, Goal: t.Task.Goal, Iteration: t.Task.Iteration + 1,
		Progress: t.Task.Progress, Strategy: t.Task.Strategy, Role: role}
	start := rt.Clock().Now()
	resp, err := rt.UseModel(ctx, plugin.ModelText, req)
	if t.it.Metrics != nil {
		t.it.Metrics.ModelRequest(rt.Clock().Now().Sub(start), resp.Usage)
	}
	o.PromptTokens += resp.Usage.PromptTokens
	o.CompletionTokens += resp.Usage.CompletionTokens
	if err != nil {
		class := plugin.ClassifyModelError(err)
		if class == plugin.ModelCanceled && clock.TimedOut(ctx) {
			class = plugin.ModelTransient // the iteration's own budget ran out
		}
		return resp, &ModelFailure{Class: class, Err: err}
	}
	return resp, nil
}

// Fail records a failed step in o: its progress does not count, so the
// stale counter — not a crash — ends a task that cannot go on.
func (t *Turn) Fail(o *domain.Outcome, action, reason string) {
	o.Step.Action, o.Step.Success, o.Step.Error = action, false, reason
	o.Progress, o.Verdict = t.Task.Progress, domain.VerdictContinue
}

// Decide applies a loop decision to o — its thought, progress, verdict
// and summary, the stall guard — and runs its tool (Act). A strategy
// whose role answers with the loop's decision (loop, review's execution, an
// agent) ends its claim with it.
func (t *Turn) Decide(ctx context.Context, o *domain.Outcome, d Decision) {
	o.Step.Thought, o.Step.Action, o.Step.Params = d.Thought, d.Action, d.Params
	o.Progress, o.Verdict, o.Summary = d.Progress, d.Status, d.Summary
	if n := len(t.Steps); n > 0 && d.Action != "" && sameStep(t.Steps[n-1], d.Action, d.Params) {
		o.Repeated = true // the stall guard: the same step again is no progress
	}
	if d.Status == domain.VerdictStuck {
		o.Reason = firstNonEmpty(d.Summary, d.Thought)
	}
	if d.Action == "" {
		o.Step.Success = true
		o.Step.Result = "no action"
		return
	}
	t.Act(ctx, o, d.Action, d.Params)
}

// Act runs the tool call action(params) for o's step and records it: its
// result, or a failed step saying why (not a tool, refused, failed). Every
// strategy's calls pass here. The parameters are read strictly against
// the tool's declared schema first (plugin.ActionInfo.DecodeParams): a
// key given twice, a parameter in another case, a field the tool does not
// take fail the step with one sentence, the call as the model wrote it,
// and nothing runs or is asked. Otherwise the step keeps the decoded
// parameters re-encoded canonically, and those are what a person is
// shown, what an approval binds to and what the tool runs with. A tool
// that needs a person's approval is not run: the task waits for the
// approval with the call kept as decoded (docs/security.md). Act reports
// whether the tool ran and succeeded.
func (t *Turn) Act(ctx context.Context, o *domain.Outcome, action string, params json.RawMessage) bool {
	o.Step.Action, o.Step.Params = action, params
	a, ok := t.Runtime.Action(action)
	if !ok || !a.Info().OffersTo(t.Task) {
		t.Fail(o, action, fmt.Sprintf("%q is not a tool this task can use", action))
		return false
	}
	params, err := a.Info().DecodeParams(params)
	if err != nil {
		t.Fail(o, action, err.Error())
		return false
	}
	o.Step.Params = params
	if slices.Contains(t.it.ApproveTools, action) {
		n, err := approvalRequest(t.Task, action, params)
		if err != nil {
			t.Fail(o, action, err.Error())
			return false
		}
		o.Wait, o.Verdict = domain.WaitApproval, domain.VerdictContinue
		o.Notifications = append(o.Notifications, n)
		return false
	}
	if reason, ok := t.it.runTool(ctx, t.Task, t.files, o); !ok {
		t.Fail(o, action, reason)
		return false
	}
	return true
}

// loop is the plain iteration: one decision, one tool.
type loop struct{}

func (loop) Claim(ctx context.Context, t *Turn) (domain.Outcome, error) {
	o := t.Outcome()
	o.Step.Role = domain.RoleAgent
	resp, err := t.Ask(ctx, &o, Request{Schema: DecisionSchema})
	if err != nil {
		return domain.Outcome{}, err
	}
	d, err := ParseDecision(resp.Text)
	if err != nil {
		o.Step.Result = clip(resp.Text, 2000)
		t.Fail(&o, "", "the model's reply is not a usable decision: "+err.Error())
		return o, nil
	}
	t.Decide(ctx, &o, d)
	return o, nil
}

// errNoStrategy is the failed step of a task whose strategy this
// replica does not have (a plugin another replica runs).
var errNoStrategy = errors.New("this replica has no such strategy")

func strategyName(s string) string {
	if strings.TrimSpace(s) == "" {
		return domain.StrategyLoop
	}
	return s
}
