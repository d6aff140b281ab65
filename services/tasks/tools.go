package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"unicode/utf8"

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
// A claim writes one step, so its step records all its calls: action is
// their tools' names, params a JSON array of {id, name, arguments}, and
// result each call's result under a header naming it. The next request
// rebuilds the native conversation from the latest such steps: the
// assistant message with its tool calls, then a tool message per call.
// The task's State (toolsState) keeps the stress.
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
func (nativeTools) Claim(ctx context.Context, t *Turn) (plugin.Outcome, error) {
	o := t.Outcome()
	o.Step.Role = plugin.RoleAgent
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
		return plugin.Outcome{}, fmt.Errorf("prompt of task #%d: %w", t.Task.Number, err)
	}
	temp := stressed(t.it.Temperature, st.Stress)
	resp, err := t.Call(ctx, &o, plugin.ModelRequest{Messages: msgs, Tools: specs}, plugin.RoleAgent, &temp)
	if err != nil {
		if errors.Is(err, plugin.ErrToolsUnsupported) {
			reason := "The model does not support tool calling, which the tools strategy needs: create the task again with another strategy, such as loop or react (" + clip(modelSays(err), 300) + ")."
			t.Fail(&o, "", reason)
			o.Verdict, o.Reason = plugin.VerdictStuck, reason
			return o, nil
		}
		return plugin.Outcome{}, err
	}
	st.Pending = ""
	if len(resp.ToolCalls) == 0 {
		answer := strings.TrimSpace(resp.Text)
		if answer == "" {
			t.Fail(&o, "", "the model's reply has neither a tool call nor a final answer")
		} else {
			o.Step.Success, o.Step.Result = true, answer
			o.Verdict, o.Summary = plugin.VerdictDone, answer
		}
		o.State = st.encode()
		return o, nil
	}
	t.runCalls(ctx, &o, &st, resp)
	o.State = st.encode()
	return o, nil
}

// runCalls runs the calls of resp in order and records them in o's step.
func (t *Turn) runCalls(ctx context.Context, o *plugin.Outcome, st *toolsState, resp plugin.ModelResponse) {
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
				co.Step.Role = plugin.RoleAgent
				ok := t.Act(ctx, &co, c.Name, params)
				if co.Files != nil {
					o.Files = co.Files // a view's changes so far, this call's included
				}
				o.Notifications = append(o.Notifications, co.Notifications...)
				o.Subtasks = append(o.Subtasks, co.Subtasks...)
				if co.Wait == plugin.WaitApproval {
					// The call waits for a person: the claim ends on it, as
					// Turn.Act's one call would, and what ran before it is
					// kept for the next request.
					st.Pending = pendingBefore(records[:i], results, calls[i+1:], t.it.History)
					st.Stress = stressAfter(st.Stress, failed, 0)
					o.Step, o.Wait = co.Step, plugin.WaitApproval
					o.Step.Role = plugin.RoleAgent
					o.Progress, o.Verdict = t.Task.Progress, plugin.VerdictContinue
					if reported {
						o.Progress = estimate
					}
					return
				}
				if co.Wait != plugin.WaitNone && o.Wait == plugin.WaitNone {
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

	names := make([]string, len(records))
	var errs []string
	for i, r := range records {
		names[i] = r.Name
		if !results[i].ok {
			errs = append(errs, r.Name+": "+results[i].err)
		}
	}
	params, err := json.Marshal(records)
	if err != nil {
		params = []byte(`[]`) // strings and valid JSON always encode
	}
	o.Step.Thought = strings.TrimSpace(resp.Text)
	o.Step.Action, o.Step.Params = strings.Join(names, ", "), params
	o.Step.Result = labelResults(records, results)
	o.Step.Success, o.Step.Error = len(errs) == 0, strings.Join(errs, "; ")
	o.Progress, o.Verdict = t.Task.Progress, plugin.VerdictContinue
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

// argumentsText is a recorded call's arguments as the model wrote them.
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

// readReport reads report_progress's arguments.
func readReport(args string) (int, string, error) {
	var raw struct {
		Progress json.RawMessage `json:"progress"`
		Note     any             `json:"note"`
	}
	if err := json.Unmarshal([]byte(args), &raw); err != nil {
		return 0, "", fmt.Errorf("the call's arguments are not a JSON object: %s", clip(args, 200))
	}
	p, err := progress(raw.Progress)
	if err != nil {
		return 0, "", fmt.Errorf("report_progress needs progress, a number from 0 to 100: %w", err)
	}
	return p, textOf(raw.Note), nil
}

// callHeader starts call i of n's part of a step's result; the rebuilt
// conversation finds each call's result by it.
func callHeader(i, n int, r callRecord) string {
	return fmt.Sprintf("── call %d of %d: %s (%s) ──\n", i+1, n, r.Name, r.ID)
}

// labelResults is a step's result: each call's, under its header.
func labelResults(records []callRecord, results []callResult) string {
	var b strings.Builder
	for i, r := range records {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(callHeader(i, len(records), r))
		b.WriteString(callBody(results[i]))
	}
	return b.String()
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

// callsOf reads the calls a step of a tools claim recorded.
func callsOf(steps []plugin.Step) ([]callRecord, bool) {
	if len(steps) == 0 {
		return nil, false
	}
	return stepCalls(steps[len(steps)-1])
}

func stepCalls(s plugin.Step) ([]callRecord, bool) {
	if s.Role != plugin.RoleAgent || !strings.HasPrefix(strings.TrimSpace(string(s.Params)), "[") {
		return nil, false
	}
	var records []callRecord
	if json.Unmarshal(s.Params, &records) != nil || len(records) == 0 {
		return nil, false
	}
	for _, r := range records {
		if r.ID == "" || r.Name == "" {
			return nil, false
		}
	}
	return records, true
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
	for n := 0; n < nativeClaims && k > 0; n++ {
		if _, ok := stepCalls(t.Steps[k-1]); !ok {
			break
		}
		k--
	}
	older, native := t.Steps[:k], t.Steps[k:]
	var notes []string
	if st.Pending != "" {
		notes = append(notes, st.Pending)
	}
	if len(native) > 0 {
		notes = append(notes, "Your latest tool calls and their results follow.")
	}
	head := *t
	head.Steps = older
	msgs, err := head.Messages(Request{
		Role: plugin.RoleAgent, System: "tools_system.tmpl", Tools: tools, Notes: notes,
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
	for i, s := range native {
		limit := h.RecentChars
		if i == len(native)-1 && h.LatestChars > 0 {
			limit = h.LatestChars
		}
		msgs = append(msgs, claimMessages(s, limit, readable)...)
	}
	return msgs, nil
}

// claimMessages is a tools claim's step as the conversation it was: the
// assistant message with its calls, then each call's result in a tool
// message, cut to limit characters with a note saying how to read on.
func claimMessages(s plugin.Step, limit int, readable bool) []plugin.ChatMessage {
	records, _ := stepCalls(s)
	asked := plugin.ChatMessage{Role: plugin.RoleAssistant, Content: s.Thought}
	for _, r := range records {
		asked.ToolCalls = append(asked.ToolCalls, plugin.ToolCall{ID: r.ID, Name: r.Name, Arguments: argumentsText(r.Arguments)})
	}
	out := []plugin.ChatMessage{asked}
	from := 0 // byte offset in s.Result where the next call's header is looked for
	for i, r := range records {
		body := "(its result was not kept)"
		header := callHeader(i, len(records), r)
		if at := strings.Index(s.Result[from:], header); at >= 0 {
			start := from + at + len(header)
			end := len(s.Result)
			if i+1 < len(records) {
				if next := strings.Index(s.Result[start:], "\n"+callHeader(i+1, len(records), records[i+1])); next >= 0 {
					end = start + next
				}
			}
			body = showCall(s, start, end, limit, readable)
			from = end
		}
		out = append(out, plugin.ChatMessage{Role: plugin.RoleTool, ToolCallID: r.ID, Content: body})
	}
	return out
}

// showCall is s.Result[start:end], one call's part, cut to limit
// characters; the note of a cut part points read_result at the step's
// whole result, where the part starts at start.
func showCall(s plugin.Step, start, end, limit int, readable bool) string {
	part := s.Result[start:end]
	if limit <= 0 {
		return part
	}
	head, left := cutRunes(part, limit, noteRoom)
	if left == 0 {
		return part
	}
	if !readable {
		return head + fmt.Sprintf("\n[… %s more characters not shown]", thousands(left))
	}
	offset := utf8.RuneCountInString(s.Result[:start]) + limit
	return head + "\n" + ReadResultNote(s.Iteration, offset, left)
}
