package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// nativeTools is xaibo's SimpleToolOrchestrator as a strategy
// (docs/strategies.md): the request offers the task's tools as native tools, and every
// tool call of the reply runs in order, as Turn.Act runs one (the
// approval gate, an unknown tool is a failed call). A reply without tool
// calls is the final answer: the task completes with it as summary. The
// built-in tool report_progress sets the claim's progress estimate;
// without it progress stays, and the stale rule applies. Each failed call
// raises the temperature by StressStep until a claim whose calls all
// succeed. The role is agent.
//
// A claim writes a step per call, in the order they ran, under the
// claim's iteration (domain.Step.Call tells them apart, from 0): each has
// its call's tool as action, its arguments as params (as Turn.Act decoded
// them), its own result and success, so a timeline shows that a write
// succeeded even when the read after it failed. The first also keeps the reply's text as its thought.
// The next request rebuilds the native conversation from the latest such
// claims: the assistant message with its tool calls, then a tool message
// per call. The calls' IDs there are made from the step's key
// (callID); the model's own are not kept, and need not be: they only pair
// a call with its result within one request. The task's State
// (toolsState) keeps the stress.
type nativeTools struct{}

// reportProgressTool is the tool a tools task reports its progress with.
const reportProgressTool = "report_progress"

// reportProgressSpec offers it.
var reportProgressSpec = plugin.ToolSpec{
	Name:        reportProgressTool,
	Description: "Report how much of the task's goal is done. Call it whenever your estimate changes; without it the task counts as making no progress.",
	Parameters: json.RawMessage(`{"type":"object","properties":{` +
		`"progress":{"type":"integer","minimum":0,"maximum":100,"description":"your honest estimate of the percent of the goal done"},` +
		`"note":{"type":"string","description":"what was done, in one sentence"}},` +
		`"required":["progress"]}`),
}

// nativeClaims is how many of a task's latest claims the next request
// shows as a native conversation; older ones are in the prompt's history.
const nativeClaims = 3

// toolsState is what a tools task keeps between its claims.
type toolsState struct {
	// Stress is how many calls failed since the last claim whose calls
	// all succeeded.
	Stress int `json:"stress"`
	// Pending is what the calls of a reply that ran before a call waiting
	// for a person's approval returned, for the next request.
	Pending string `json:"pending,omitempty"`
}

// callRecord is one tool call as a step's params record it.
type callRecord struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// callResult is what one call came to.
type callResult struct {
	ok     bool
	result string
	err    string
}

// Claim makes one request with native tools and runs the reply's calls.
func (nativeTools) Claim(ctx context.Context, t *Turn) (domain.Outcome, error) {
	o := t.Outcome()
	o.Step.Role = domain.RoleAgent
	st := readToolsState(t.Task.State)
	tools := ToolsOf(t.Runtime, t.Task)
	specs := make([]plugin.ToolSpec, 0, len(tools)+1)
	for _, tl := range tools {
		if tl.Name != reportProgressTool {
			specs = append(specs, plugin.ToolSpec{Name: tl.Name, Description: tl.Description, Parameters: json.RawMessage(tl.Parameters)})
		}
	}
	specs = append(specs, reportProgressSpec)

	msgs, err := t.nativeMessages(tools, st)
	if err != nil {
		return domain.Outcome{}, fmt.Errorf("prompt of task #%d: %w", t.Task.Number, err)
	}
	temp := stressed(t.it.Temperature, st.Stress)
	resp, err := t.Call(ctx, &o, plugin.ModelRequest{Messages: msgs, Tools: specs}, domain.RoleAgent, &temp)
	if err != nil {
		if errors.Is(err, plugin.ErrToolsUnsupported) {
			reason := "The model does not support tool calling, which the tools strategy needs: create the task again with another strategy, such as loop or react (" + clip(modelSays(err), 300) + ")."
			t.Fail(&o, "", reason)
			o.Verdict, o.Reason = domain.VerdictStuck, reason
			return o, nil
		}
		return domain.Outcome{}, err
	}
	st.Pending = ""
	if len(resp.ToolCalls) == 0 {
		answer := strings.TrimSpace(resp.Text)
		if answer == "" {
			t.Fail(&o, "", "the model's reply has neither a tool call nor a final answer")
		} else {
			o.Step.Success, o.Step.Result = true, answer
			o.Verdict, o.Summary = domain.VerdictDone, answer
		}
		o.State = st.encode()
		return o, nil
	}
	t.runCalls(ctx, &o, &st, resp)
	o.State = st.encode()
	return o, nil
}

// runCalls runs the calls of resp in order and records them in o's step.
func (t *Turn) runCalls(ctx context.Context, o *domain.Outcome, st *toolsState, resp plugin.ModelResponse) {
	calls := resp.ToolCalls
	records := make([]callRecord, len(calls))
	results := make([]callResult, 0, len(calls))
	reported, estimate := false, t.Task.Progress
	failed := 0
	for i, c := range calls {
		if c.ID == "" {
			// A server that gives no IDs still gets its calls answered
			// one by one.
			c.ID = fmt.Sprintf("call_%d_%d", t.Task.Iteration+1, i+1)
		}
		records[i] = callRecord{ID: c.ID, Name: c.Name, Arguments: argumentsJSON(c.Arguments)}
		var res callResult
		if c.Name == reportProgressTool {
			p, note, err := readReport(c.Arguments)
			if err != nil {
				res = callResult{err: err.Error()}
			} else {
				reported, estimate = true, p
				res = callResult{ok: true, result: fmt.Sprintf("progress is now reported as %d%%", p)}
				if note != "" {
					res.result += ": " + note
				}
			}
		} else {
			params, err := callParams(c.Arguments)
			if err != nil {
				res = callResult{err: err.Error()}
			} else {
				co := t.Outcome()
				co.Step.Role = domain.RoleAgent
				ok := t.Act(ctx, &co, c.Name, params)
				// The step keeps the arguments as Act decoded them (as the
				// model wrote them when it refused them).
				records[i].Arguments = co.Step.Params
				if co.Files != nil {
					o.Files = co.Files // a view's changes so far, this call's included
				}
				o.Notifications = append(o.Notifications, co.Notifications...)
				o.Subtasks = append(o.Subtasks, co.Subtasks...)
				if co.Wait == domain.WaitApproval {
					// The call waits for a person: the claim ends on it, as
					// Turn.Act's one call would, and what ran before it is
					// kept for the next request.
					st.Pending = pendingBefore(records[:i], results, calls[i+1:], t.it.History)
					st.Stress = stressAfter(st.Stress, failed, 0)
					o.Step, o.Wait = co.Step, domain.WaitApproval
					o.Step.Role = domain.RoleAgent
					o.Progress, o.Verdict = t.Task.Progress, domain.VerdictContinue
					if reported {
						o.Progress = estimate
					}
					return
				}
				if co.Wait != domain.WaitNone && o.Wait == domain.WaitNone {
					o.Wait = co.Wait
				}
				res = callResult{ok: ok, result: co.Step.Result, err: co.Step.Error}
			}
		}
		if !res.ok {
			failed++
		}
		results = append(results, res)
	}
	st.Stress = stressAfter(st.Stress, failed, len(calls))

	// A step per call, in the order they ran (plugin/toolsteps.go).
	steps := make([]domain.Step, len(records))
	for i, r := range records {
		steps[i] = domain.Step{Action: r.Name, Params: r.Arguments, Role: domain.RoleAgent,
			Success: results[i].ok, Result: results[i].result, Error: results[i].err}
	}
	steps[0].Thought = strings.TrimSpace(resp.Text)
	o.Step, o.Steps = steps[0], steps[1:]
	o.Progress, o.Verdict = t.Task.Progress, domain.VerdictContinue
	if reported {
		o.Progress = estimate
	}
	if prev, ok := callsOf(t.Steps); ok && sameCalls(prev, records) {
		o.Repeated = true // the stall guard: the same calls again are no progress
	}
}

// stressAfter is the stress after a claim with failed of its calls
// failed: a claim whose calls all ran ends it.
func stressAfter(stress, failed, calls int) int {
	if failed == 0 && calls > 0 {
		return 0
	}
	return stress + failed
}

// stressed is base raised by StressStep for every failed call, at most 1.
func stressed(base float64, failedCalls int) float64 {
	return math.Round(min(base+StressStep*float64(failedCalls), 1)*100) / 100
}

func readToolsState(raw string) toolsState {
	var st toolsState
	if raw != "" {
		_ = json.Unmarshal([]byte(raw), &st)
	}
	st.Stress = max(st.Stress, 0)
	return st
}

func (st toolsState) encode() string {
	raw, err := json.Marshal(st)
	if err != nil {
		return `{"stress":0}` // an int and a string always encode
	}
	return string(raw)
}

// modelSays is what the model's server said, without our wrapping.
func modelSays(err error) string {
	var me *plugin.ModelError
	if errors.As(err, &me) {
		return me.Error()
	}
	return err.Error()
}

// argumentsJSON is a call's arguments as a step records them: the JSON
// the model wrote, or that text as a JSON string when it is not JSON.
func argumentsJSON(args string) json.RawMessage {
	s := strings.TrimSpace(args)
	if s == "" {
		return json.RawMessage(`{}`)
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	raw, _ := json.Marshal(args)
	return raw
}

// argumentsText is a recorded call's arguments as its step keeps them: as
// Turn.Act decoded them, or as the model wrote them when it refused them.
func argumentsText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// callParams is a call's arguments as a tool's params: a JSON object.
func callParams(args string) (json.RawMessage, error) {
	if strings.TrimSpace(args) == "" {
		return json.RawMessage(`{}`), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(args), &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("the call's arguments are not a JSON object: %s", clip(args, 200))
	}
	return json.RawMessage(args), nil
}

// readReport reads report_progress's arguments, as strictly as Turn.Act
// reads any tool's.
func readReport(args string) (int, string, error) {
	var raw struct {
		Progress json.RawMessage `json:"progress"`
		Note     any             `json:"note"`
	}
	canon, err := plugin.ActionInfo{Parameters: reportProgressSpec.Parameters}.DecodeParams(json.RawMessage(args))
	if err != nil {
		return 0, "", err
	}
	if err := json.Unmarshal(canon, &raw); err != nil {
		return 0, "", fmt.Errorf("the call's arguments are not a JSON object: %s", clip(args, 200))
	}
	p, err := progress(raw.Progress)
	if err != nil {
		return 0, "", fmt.Errorf("report_progress needs progress, a number from 0 to 100: %w", err)
	}
	return p, textOf(raw.Note), nil
}

// callBody is what a tool message says of a call: ok or why it failed,
// then its result.
func callBody(res callResult) string {
	head := "ok"
	if !res.ok {
		head = "FAILED: " + res.err
	}
	if res.result == "" {
		return head
	}
	return head + "\n" + res.result
}

// pendingBefore says what the calls before one waiting for approval
// returned, and which calls after it were not run.
func pendingBefore(ran []callRecord, results []callResult, notRun []plugin.ToolCall, h History) string {
	h = h.withDefaults()
	var b strings.Builder
	if len(ran) > 0 {
		b.WriteString("Before the call that waited for a person's approval, these calls of the same reply ran:")
		for i, r := range ran {
			fmt.Fprintf(&b, "\n- %s %s → %s", r.Name, clip(string(r.Arguments), h.ParamsChars), clip(oneLine(callBody(results[i]), h.RecentChars), h.RecentChars))
		}
	}
	if len(notRun) > 0 {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		names := make([]string, len(notRun))
		for i, c := range notRun {
			names[i] = c.Name
		}
		b.WriteString("These calls after it were not run: " + strings.Join(names, ", ") + ".")
	}
	return b.String()
}

// callsOf reads the calls of the latest claim of steps, when it was a
// tools claim's (claimAt).
func callsOf(steps []domain.Step) ([]callRecord, bool) {
	from, ok := claimAt(steps, len(steps))
	if !ok {
		return nil, false
	}
	records := make([]callRecord, 0, len(steps)-from)
	for _, s := range steps[from:] {
		records = append(records, callRecord{ID: callID(s), Name: s.Action, Arguments: s.Params})
	}
	return records, true
}

// claimAt finds the claim whose steps end steps[:end]: the steps of
// steps[end-1]'s iteration, from its first call. It says where they
// start, and whether they are a tools claim's calls, each the agent's and
// naming a tool (a final answer or a failed reply runs none), the
// iteration's first call among them.
func claimAt(steps []domain.Step, end int) (int, bool) {
	if end <= 0 {
		return 0, false
	}
	it := steps[end-1].Iteration
	from := end
	for from > 0 && steps[from-1].Iteration == it {
		from--
	}
	if steps[from].Call != 0 {
		return from, false // the window cut the claim: its first calls are not here
	}
	for _, s := range steps[from:end] {
		if s.Role != domain.RoleAgent || s.Action == "" || s.Action == "none" {
			return from, false
		}
	}
	return from, true
}

// callID is the ID a rebuilt conversation gives the call of step s,
// unique within the task.
func callID(s domain.Step) string {
	return fmt.Sprintf("call_%d_%d", s.Iteration, s.Call+1)
}

// sameCalls reports whether two claims made the same calls, IDs aside.
func sameCalls(a, b []callRecord) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name {
			return false
		}
		var x, y any
		if json.Unmarshal(a[i].Arguments, &x) != nil || json.Unmarshal(b[i].Arguments, &y) != nil || !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// nativeMessages builds a tools claim's prompt: the system message, the
// user message with the goal, the history before the latest claims and
// the role line, then those claims as the native conversation they were.
func (t *Turn) nativeMessages(tools []Tool, st toolsState) ([]plugin.ChatMessage, error) {
	k := len(t.Steps)
	var claims []int // where each native claim starts, newest first
	for n := 0; n < nativeClaims && k > 0; n++ {
		from, ok := claimAt(t.Steps, k)
		if !ok {
			break
		}
		claims = append(claims, from)
		k = from
	}
	older, native := t.Steps[:k], len(claims) > 0
	var notes []string
	if st.Pending != "" {
		notes = append(notes, st.Pending)
	}
	if native {
		notes = append(notes, "Your latest tool calls and their results follow.")
	}
	head := *t
	head.Steps = older
	msgs, err := head.Messages(Request{
		Role: domain.RoleAgent, System: "tools_system.tmpl", Tools: tools, Notes: notes,
		Instruction: "Call the tools the next step needs, and report_progress when your estimate changes; when the goal is met, answer without a tool call.",
	})
	if err != nil {
		return nil, err
	}
	h := t.it.History.withDefaults()
	readable := false
	for _, tl := range tools {
		readable = readable || tl.Name == readResultTool
	}
	end := len(t.Steps)
	for i := len(claims) - 1; i >= 0; i-- {
		from, to := claims[i], end
		if i > 0 {
			to = claims[i-1]
		}
		limit := h.RecentChars
		if i == 0 && h.LatestChars > 0 {
			limit = h.LatestChars
		}
		msgs = append(msgs, claimMessages(t.Steps[from:to], limit, readable)...)
	}
	return msgs, nil
}

// claimMessages is a tools claim's steps as the conversation they were:
// the assistant message with its calls, then each call's result in a tool
// message, cut to limit characters with a note saying how to read on.
func claimMessages(steps []domain.Step, limit int, readable bool) []plugin.ChatMessage {
	asked := plugin.ChatMessage{Role: plugin.RoleAssistant, Content: steps[0].Thought}
	for _, s := range steps {
		asked.ToolCalls = append(asked.ToolCalls, plugin.ToolCall{ID: callID(s), Name: s.Action, Arguments: argumentsText(s.Params)})
	}
	out := []plugin.ChatMessage{asked}
	for _, s := range steps {
		out = append(out, plugin.ChatMessage{Role: plugin.RoleTool, ToolCallID: callID(s), Content: showCall(s, limit, readable)})
	}
	return out
}

// showCall is what the tool message of step s's call says (callBody), its
// result cut to limit characters; the note of a cut result points
// read_result at the step's whole result.
func showCall(s domain.Step, limit int, readable bool) string {
	res := callResult{ok: s.Success, result: s.Result, err: s.Error}
	if limit <= 0 {
		return callBody(res)
	}
	head, left := cutRunes(s.Result, limit, noteRoom)
	if left == 0 {
		return callBody(res)
	}
	res.result = head
	if !readable {
		return callBody(res) + fmt.Sprintf("\n[… %s more characters not shown]", thousands(left))
	}
	return callBody(res) + "\n" + ReadResultCallNote(s.Iteration, s.Call, limit, left)
}
