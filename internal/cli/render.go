package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/taskloom/taskloom/internal/render"
)

// clean makes text from a task (a chat user's words) safe to print on a
// terminal: control characters, escape sequences included, become spaces,
// and it stays on one line.
func clean(s string) string {
	return strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return ' '
		}
		return r
	}, s)), " ")
}

// cut shortens s to n runes with an ellipsis.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	rs := []rune(s)
	return string(rs[:n-1]) + "…"
}

func statusWord(s string) string {
	if s == "stalemate" {
		return "stalled"
	}
	return s
}

// taskStatus is a task's status as a person reads it, saying what a
// waiting task waits for, and "running" only while a worker holds it: a
// started task between two iterations is "queued (in rotation)", waiting
// its turn (the stored status, and --status, stay running).
func taskStatus(t task) string {
	if t.Status == "running" && t.LeaseOwner == "" {
		return "queued (in rotation)"
	}
	return startedStatus(t)
}

// startedStatus is taskStatus for a view redrawn as the task moves (tasks
// events --follow): each redraw follows an iteration, when the worker has
// just let the task go, so a started task reads running.
func startedStatus(t task) string {
	if t.Status == "waiting" && t.WaitingOn != "" {
		return "waiting for " + waitWord(t.WaitingOn)
	}
	return statusWord(t.Status)
}

// waitWord names what a task waits on: "an answer".
func waitWord(on string) string {
	switch on {
	case "answer":
		return "an answer"
	case "subtasks":
		return "its subtasks"
	case "approval":
		return "an approval"
	}
	return on
}

// callText is a tool call as it will run: `run_command {"command":"ls"}`,
// all of it, with long runs of whitespace counted and invisible characters
// named (render.Visible), so that nothing in it hides the rest.
func callText(a approval) string {
	var b bytes.Buffer
	params := strings.TrimSpace(string(a.Params))
	if json.Compact(&b, a.Params) == nil {
		params = b.String()
	}
	if params == "" || params == "{}" || params == "null" {
		return render.Visible(a.Action)
	}
	return render.Visible(a.Action + " " + params)
}

func bar(progress int) string {
	return fmt.Sprintf("%s %3d%%", render.Bar(progress), min(max(progress, 0), 100))
}

func iterations(t task) string {
	if t.MaxIterations == 0 {
		return fmt.Sprint(t.Iteration)
	}
	return fmt.Sprintf("%d/%d", t.Iteration, t.MaxIterations)
}

func writeList(w io.Writer, l taskList, filtered bool) {
	if len(l.Tasks) == 0 {
		if filtered {
			fmt.Fprintln(w, "No tasks match.")
		} else {
			fmt.Fprintln(w, `No tasks yet. Create one with: taskloom tasks create "..."`)
		}
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tTASK\tPROGRESS\tSTATUS\tITER\tSTRATEGY")
	for _, t := range l.Tasks {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", t.Number, cut(clean(t.Name), 40), bar(t.Progress), taskStatus(t), iterations(t), strategy(t))
	}
	tw.Flush()
	switch {
	case l.Next != nil:
		fmt.Fprintf(w, "\n%d of %d tasks shown; the next page: --after %d\n", len(l.Tasks), l.Total, *l.Next)
	case l.Total == 1:
		fmt.Fprintln(w, "\n1 task")
	default:
		fmt.Fprintf(w, "\n%d tasks\n", l.Total)
	}
}

// strategy is how t is worked; a server that does not say works it as a
// loop.
func strategy(t task) string {
	if s := clean(t.Strategy); s != "" {
		return s
	}
	return "loop"
}

// roles are the roles t's steps were taken in, in the order they first
// appear.
func roles(t task) string {
	var out []string
	for _, s := range t.Steps {
		if r := clean(s.Role); r != "" && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return strings.Join(out, ", ")
}

func when(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

func writeTask(w io.Writer, t task) {
	fmt.Fprintf(w, "Task #%d %q — %s\n", t.Number, clean(t.Name), taskStatus(t))
	fmt.Fprintf(w, "  %s   iteration %d of %d, %d of %d without progress\n", bar(t.Progress), t.Iteration, t.MaxIterations, t.StaleCounter, t.MaxStaleIterations)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "  %s\t%s\n", k, v)
		}
	}
	row("Goal:", cut(clean(t.Goal), 300))
	row("Strategy:", strategy(t))
	row("Phase:", clean(t.Phase))
	row("Roles:", roles(t))
	if t.WaitingOn != "" {
		row("Waiting on:", waitWord(t.WaitingOn))
	}
	if q := pendingQuestion(t); q != "" {
		row("Question:", render.Visible(q)+fmt.Sprintf(" — answer: taskloom tasks answer %d TEXT", t.Number))
	}
	if a := t.Approval; a != nil {
		state := fmt.Sprintf("awaits a decision: taskloom tasks approve %d --call %s (or deny %d --call %s)", t.Number, a.ID, t.Number, a.ID)
		if a.Granted {
			state = "approved; it runs at the next iteration"
		}
		row("Tool call:", callText(*a)+" — "+state)
	}
	if t.ContinuesNumber != nil {
		row("Continues:", fmt.Sprintf("#%d", *t.ContinuesNumber))
	}
	if t.NextAttemptAt != nil && !terminal(t.Status) {
		row("Next attempt:", when(t.NextAttemptAt)+" (the model was unavailable)")
	}
	row("Room:", t.RoomID)
	row("Requested by:", t.RequestorID)
	row("Created:", when(t.CreatedAt))
	row("Started:", when(t.StartedAt))
	row("Ended:", when(t.CompletedAt))
	if t.CompletedAt != nil && t.CreatedAt != nil {
		row("Took:", render.Duration(t.CompletedAt.Sub(*t.CreatedAt)))
	}
	row("Worker:", t.LeaseOwner)
	budget := "no budget"
	if t.MaxTokens > 0 {
		budget = fmt.Sprintf("budget %d", t.MaxTokens)
	}
	row("Tokens:", fmt.Sprintf("%d prompt, %d completion; %s", t.PromptTokens, t.CompletionTokens, budget))
	row("Summary:", cut(clean(t.Summary), 2000))
	if t.Status != "completed" {
		row("Error:", cut(clean(t.Error), 2000))
	}
	tw.Flush()
	if len(t.Steps) == 0 {
		fmt.Fprintln(w, "\nNo steps yet.")
		return
	}
	if t.StepsTotal > len(t.Steps) {
		fmt.Fprintf(w, "\nSteps (last %d of %d):\n", len(t.Steps), t.StepsTotal)
	} else {
		fmt.Fprintf(w, "\nSteps (%d):\n", len(t.Steps))
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range t.Steps {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%3d%%\t%s\n", stepLabel(s), s.Time.Local().Format("15:04:05"), cut(clean(s.Role), 20), actionText(s), mark(s.Success), s.Progress, cut(clean(firstNonEmpty(s.Error, s.Result)), 80))
	}
	tw.Flush()
}

// pendingQuestion is the question a task waiting on an answer asked: its
// latest ask_user step's.
func pendingQuestion(t task) string {
	if t.WaitingOn != "answer" {
		return ""
	}
	for i := len(t.Steps) - 1; i >= 0; i-- {
		if t.Steps[i].Action != "ask_user" {
			continue
		}
		var p struct {
			Question string `json:"question"`
		}
		if json.Unmarshal(t.Steps[i].Params, &p) == nil {
			return p.Question
		}
	}
	return ""
}

func mark(ok bool) string {
	if ok {
		return "✓"
	}
	return "✗"
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// actionText is a step's tool and its main parameter: "write_file notes.md".
func actionText(s step) string {
	if s.Action == "" {
		return "(no action)"
	}
	var params map[string]any
	_ = json.Unmarshal(s.Params, &params)
	for _, k := range []string{"path", "url", "command", "question", "goal", "text"} {
		if v, ok := params[k].(string); ok && v != "" {
			return s.Action + " " + cut(clean(v), 40)
		}
	}
	if len(params) > 0 {
		keys := make([]string, 0, len(params))
		for k := range params {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return s.Action + " " + strings.Join(keys, ",")
	}
	return s.Action
}

// eventLine is one line of a task's event log.
func eventLine(e event, progressBefore int) string {
	head := fmt.Sprintf("%3d  %s  %-9s", e.Sequence, e.Time.Local().Format("15:04:05"), e.Type)
	var rest string
	switch e.Type {
	case "iterated", "tool_ran":
		if s := e.Payload.Step; s != nil {
			rest = fmt.Sprintf("%s %s", actionText(*s), mark(s.Success))
			if !s.Success && s.Error != "" {
				rest += "  " + cut(clean(s.Error), 60)
			}
		} else if e.Payload.Detail["wait"] == "approval" {
			rest = "asks approval: " + detailCall(e.Payload.Detail)
		}
		var p int
		if raw, ok := e.Payload.Changes["progress"]; ok && json.Unmarshal(raw, &p) == nil && p != progressBefore {
			rest += fmt.Sprintf("  %d%% → %d%%", progressBefore, p)
		}
		var st string
		if raw, ok := e.Payload.Changes["status"]; ok && json.Unmarshal(raw, &st) == nil && terminal(st) {
			rest += "  → " + statusWord(st)
		}
	case "answered":
		rest = "by " + clean(e.Actor)
		if a, ok := e.Payload.Detail["answer"].(string); ok {
			rest += ": " + cut(clean(a), 60)
		}
	case "approved":
		rest = "by " + clean(e.Actor) + ": " + detailCall(e.Payload.Detail)
	case "denied":
		rest = "by " + clean(e.Actor)
		if r, ok := e.Payload.Detail["reason"].(string); ok && r != "" {
			rest += ": " + cut(clean(r), 60)
		}
	case "model_unavailable":
		rest = "the model could not be reached"
		if r, ok := e.Payload.Detail["reason"].(string); ok && r != "" {
			rest = "model: " + cut(clean(r), 80)
		}
	case "result_rejected":
		rest = "late result of " + clean(e.Actor)
	case "claimed", "released":
		rest = clean(e.Actor)
	default:
		rest = "by " + clean(e.Actor)
	}
	return strings.TrimRight(head+"  "+rest, " ")
}

// detailCall is the tool call an event's detail names (its "action" and
// "params").
func detailCall(d map[string]any) string {
	action, _ := d["action"].(string)
	params, _ := json.Marshal(d["params"])
	return callText(approval{Action: action, Params: params})
}

// terminalWriter is an output that says itself whether it is a terminal;
// tests give Run one in place of os.Stdout.
type terminalWriter interface {
	io.Writer
	IsTerminal() bool
}

// isTerminal reports whether w is a terminal: where the follow mode
// redraws its progress line in place, and a file's control characters are
// made visible. A character device is not enough: /dev/null is one.
func isTerminal(w io.Writer) bool {
	if tw, ok := w.(terminalWriter); ok {
		return tw.IsTerminal()
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// stepLabel names a step as the prompts do: its iteration, and for a
// tools reply's further calls the call's number from 1 after a dot (7.2).
func stepLabel(s step) string {
	if s.Call <= 0 {
		return strconv.Itoa(s.Iteration)
	}
	return fmt.Sprintf("%d.%d", s.Iteration, s.Call+1)
}
