package render

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// indent starts every line of a message after its first.
const indent = "   "

// Clipping lengths, in runes, for user text that shares a line with other
// facts. Summaries, goals and task errors in their own blocks are never
// clipped: docs/chat.md wants the whole summary, and Split handles length.
const (
	paramRunes    = 60  // the parameter shown after an action name
	queueRunes    = 24  // a task name in the queue view
	lineErrorRune = 300 // an error on one line of a progress block
	stepErrorRune = 80  // a failed step's error in the status view
)

// Update is one task's pending changes for a room, as the notification
// service collects them between flushes (docs/chat.md).
type Update struct {
	Task       domain.Task
	From       int          // progress last sent to this room (0 if never)
	LastAction *domain.Step // latest action, nil if none
	Errors     []string     // accumulated error texts, all shown
}

// Progress renders one batched message covering every task with updates in
// a room, one block per task, blocks separated by a blank line:
//
//	📋 Task #1 "Build auth feature"
//	   Progress: 15% → 35%
//	   Last action: `write_file src/auth/login.ts` ✓
//	   Iteration: 4
//	   ⚠️ Error: …
//
// The Progress line is left out when progress has not moved and there is an
// action to show (it reads "Progress: 35%" when there is neither); a paused
// or waiting task gets a Status line; lines with nothing to say are left
// out; each accumulated error gets a line of its own.
func Progress(f Flavor, updates []Update) string {
	blocks := make([]string, 0, len(updates))
	for _, u := range updates {
		blocks = append(blocks, progressBlock(f, u))
	}
	return strings.Join(blocks, "\n\n")
}

func progressBlock(f Flavor, u Update) string {
	t := u.Task
	lines := []string{"📋 " + title(f, t)}
	from, to := clampPercent(u.From), clampPercent(t.Progress)
	switch {
	case from != to:
		lines = append(lines, fmt.Sprintf("%sProgress: %d%% → %d%%", indent, from, to))
	case u.LastAction == nil:
		lines = append(lines, fmt.Sprintf("%sProgress: %d%%", indent, to))
	}
	if t.Status == domain.StatusPaused || t.Status == domain.StatusWaiting {
		lines = append(lines, indent+"Status: "+TaskStatusWord(t))
	}
	if u.LastAction != nil {
		lines = append(lines, indent+"Last action: "+actor(f, t, *u.LastAction)+action(f, *u.LastAction))
	}
	if t.Iteration > 0 {
		lines = append(lines, indent+"Iteration: "+itoa(t.Iteration))
	}
	for _, e := range u.Errors {
		if e = oneLine(e); e != "" {
			lines = append(lines, indent+"⚠️ Error: "+Escape(f, clip(e, lineErrorRune)))
		}
	}
	return strings.Join(lines, "\n")
}

// Completed announces a completed task with its whole summary:
//
//	✅ Task #1 "Build auth feature" completed!
//	   Final progress: 100%
//	   Total steps: 12
//	   Duration: 8m 23s
//
//	   Summary: Created login/logout endpoints …
//	   (further summary lines, indented the same)
//
// The duration runs from StartedAt (CreatedAt if the task never started) to
// CompletedAt and is left out when CompletedAt is not set.
func Completed(f Flavor, t domain.Task, steps int) string {
	lines := []string{
		"✅ " + title(f, t) + " completed!",
		fmt.Sprintf("%sFinal progress: %d%%", indent, clampPercent(t.Progress)),
		indent + "Total steps: " + itoa(steps),
	}
	if d, ok := elapsed(t); ok {
		lines = append(lines, indent+"Duration: "+Duration(d))
	}
	if s := block(f, "Summary: ", t.Summary); s != "" {
		lines = append(lines, "", s)
	}
	return strings.Join(lines, "\n")
}

// Stalled announces a task that reached stalemate: it stopped making
// progress, or it used up its iterations.
//
//	⚠️ Task #2 "Fix database connection" stalled
//	   Progress stuck at: 40%
//	   Attempts without progress: 3
//	   Last action: `read_file config/db.ts` ✓
//	   Try: `status #2` for the steps, or create a narrower task.
//
// When the iteration limit is what stopped it (and the stale counter did not
// also reach its limit), the attempts line reads "Reached the limit of 50
// iterations" and the advice changes to match. last may be nil.
func Stalled(f Flavor, t domain.Task, last *domain.Step) string {
	n := strconv.FormatInt(t.Number, 10)
	lines := []string{
		"⚠️ " + title(f, t) + " stalled",
		fmt.Sprintf("%sProgress stuck at: %d%%", indent, clampPercent(t.Progress)),
	}
	byLimit := t.MaxIterations > 0 && t.Iteration >= t.MaxIterations &&
		(t.MaxStaleIterations <= 0 || t.StaleCounter < t.MaxStaleIterations)
	if byLimit {
		lines = append(lines, indent+"Reached the limit of "+itoa(t.MaxIterations)+" iterations")
	} else {
		lines = append(lines, indent+"Attempts without progress: "+itoa(t.StaleCounter))
	}
	if last != nil {
		lines = append(lines, indent+"Last action: "+actor(f, t, *last)+action(f, *last))
	}
	if byLimit {
		lines = append(lines, indent+"Try: `status #"+n+"` to see how far it got, then create a task for what is left.")
	} else {
		lines = append(lines, indent+"Try: `status #"+n+"` for the steps, or create a narrower task.")
	}
	return strings.Join(lines, "\n")
}

// Failed announces a failed task with its error, all of it:
//
//	❌ Task #3 "Add tests" failed
//	   Error: …
func Failed(f Flavor, t domain.Task) string {
	e := block(f, "Error: ", t.Error)
	if e == "" {
		e = indent + "Error: no reason was recorded."
	}
	return "❌ " + title(f, t) + " failed\n" + e
}

// Canceled announces a canceled task: 🛑 Task #4 "Old idea" canceled.
func Canceled(f Flavor, t domain.Task) string {
	return "🛑 " + title(f, t) + " canceled"
}

// Terminal renders the message for a task that has just ended, chosen by its
// status: Completed (with steps, the task's step count), Failed, Stalled
// (with last, its latest step, which may be nil) or Canceled. A task that has
// not ended gets a one-task Progress block, so a caller never sends nothing.
func Terminal(f Flavor, t domain.Task, steps int, last *domain.Step) string {
	switch t.Status {
	case domain.StatusCompleted:
		return Completed(f, t, steps)
	case domain.StatusFailed:
		return Failed(f, t)
	case domain.StatusStalemate:
		return Stalled(f, t, last)
	case domain.StatusCanceled:
		return Canceled(f, t)
	}
	return Progress(f, []Update{{Task: t, From: t.Progress, LastAction: last}})
}

// Queue renders the queue view:
//
//	📊 Task Queue (3 tasks)
//
//	#1 "Build auth"     [████████░░] 80%  Running (iter 12)
//	#2 "Fix bug"        [██░░░░░░░░] 20%  Queued
//	#3 "Add tests"      [░░░░░░░░░░]  0%  Queued
//
//	Next: #2 "Fix bug" (fair scheduling)
//
// tasks are in queue order (the caller sorts them) and total is how many
// there are in all; when it is more than len(tasks) a line says how many are
// not shown. Names longer than 24 runes are clipped with "…" and padded by
// display width so the bars line up in a monospaced font; percentages are
// right-aligned. Next is the first
// task that is queued or running and not leased at now; without one there is
// no Next line. An empty queue says how to start a task.
func Queue(f Flavor, tasks []domain.Task, total int, now time.Time) string {
	total = max(total, len(tasks))
	if total == 0 {
		return "📊 Task Queue is empty. Say " + lit(f, "`create task <goal>`") + " to start one."
	}
	noun := "tasks"
	if total == 1 {
		noun = "task"
	}
	lines := []string{fmt.Sprintf("📊 Task Queue (%d %s)", total, noun), ""}

	// Width is measured on the clipped name before escaping: a backslash,
	// an entity or a zero-width space takes no room once rendered.
	col := 0
	names := make([]string, len(tasks))
	for i, t := range tasks {
		names[i] = clip(oneLine(t.Name), queueRunes)
		col = max(col, width(ref(t.Number, names[i], Plain)))
	}
	col = max(col+2, 20)
	digits := 2 // " 0%", "80%"; all three when one task is at 100%
	for _, t := range tasks {
		if clampPercent(t.Progress) == 100 {
			digits = 3
		}
	}
	for i, t := range tasks {
		label := ref(t.Number, names[i], f)
		gap := strings.Repeat(" ", max(col-width(ref(t.Number, names[i], Plain)), 1))
		line := fmt.Sprintf("%s%s%s %*d%%  %s", label, gap, Bar(t.Progress), digits, clampPercent(t.Progress), TaskStatusWord(t))
		if t.Iteration > 0 {
			line += fmt.Sprintf(" (iter %d)", t.Iteration)
		}
		lines = append(lines, line)
	}
	if more := total - len(tasks); more > 0 {
		lines = append(lines, fmt.Sprintf("…and %d more", more))
	}
	for _, t := range tasks {
		if t.Status.Claimable() && !t.HasLease(now) {
			lines = append(lines, "", "Next: "+ref(t.Number, oneLine(t.Name), f)+" (fair scheduling)")
			break
		}
	}
	return strings.Join(lines, "\n")
}

// StatusSteps is how many of a task's latest steps Status lists: what a
// caller reads (domain.Store.PageSteps, without results), however many
// steps the task has.
const StatusSteps = 5

// Status renders the detailed view of one task: its goal, status, progress
// bar, iteration and stale counters, times, token use, its last
// StatusSteps steps (steps is a page of its latest steps, oldest first,
// and how many it has; results are not shown) and its summary or error.
// Times show in each reader's time zone on Discord and Slack and in UTC in
// Plain. A task waiting on an answer shows the question of the latest
// ask_user step of the page: the step that made it wait is its last.
func Status(f Flavor, t domain.Task, page domain.StepPage) string {
	steps := page.Steps
	if len(steps) > StatusSteps {
		steps = steps[len(steps)-StatusSteps:]
	}
	total := max(page.Total, len(steps))
	lines := []string{"📋 " + title(f, t)}
	if g := block(f, "Goal: ", t.Goal); g != "" {
		lines = append(lines, g)
	}
	lines = append(lines, indent+"Status: "+TaskStatusWord(t))
	lines = append(lines, pending(f, t, steps)...)
	lines = append(lines, fmt.Sprintf("%sProgress: %s %d%%", indent, Bar(t.Progress), clampPercent(t.Progress)))
	if t.Strategy != "" && t.Strategy != domain.StrategyLoop {
		st := indent + "Strategy: " + Escape(f, t.Strategy)
		if t.Phase != "" {
			st += ", phase: " + Escape(f, t.Phase)
		}
		lines = append(lines, st)
	}
	it := indent + "Iteration: " + itoa(t.Iteration)
	if t.MaxIterations > 0 {
		it += "/" + itoa(t.MaxIterations)
	}
	lines = append(lines, it)
	if t.StaleCounter > 0 || t.MaxStaleIterations > 0 {
		s := indent + "Attempts without progress: " + itoa(t.StaleCounter)
		if t.MaxStaleIterations > 0 {
			s += "/" + itoa(t.MaxStaleIterations)
		}
		lines = append(lines, s)
	}
	for _, tm := range []struct {
		label    string
		at       time.Time
		relative bool
	}{
		{"Created", t.CreatedAt, false},
		{"Started", t.StartedAt, false},
		{"Last active", t.LastProcessedAt, !t.Status.Terminal()},
		{"Finished", t.CompletedAt, false},
	} {
		if !tm.at.IsZero() {
			lines = append(lines, indent+tm.label+": "+timestamp(f, tm.at, tm.relative))
		}
	}
	if d, ok := elapsed(t); ok {
		lines = append(lines, indent+"Duration: "+Duration(d))
	}
	if t.PromptTokens > 0 || t.CompletionTokens > 0 {
		lines = append(lines, fmt.Sprintf("%sTokens: %d prompt, %d completion", indent, t.PromptTokens, t.CompletionTokens))
	}
	if len(steps) > 0 {
		head := indent + "Steps:"
		if total > len(steps) {
			head = fmt.Sprintf("%sSteps (last %d of %d):", indent, len(steps), total)
		}
		lines = append(lines, "", head)
		first := total - len(steps) // steps before those shown
		for i, s := range steps {
			line := fmt.Sprintf("%sStep %d: %s%s", indent, first+i+1, actor(f, t, s), action(f, s))
			if e := oneLine(s.Error); !s.Success && e != "" {
				line += " — " + Escape(f, clip(e, stepErrorRune))
			}
			lines = append(lines, line)
		}
	}
	for _, b := range []string{block(f, "Summary: ", t.Summary), block(f, "Error: ", t.Error)} {
		if b != "" {
			lines = append(lines, "", b)
		}
	}
	return strings.Join(lines, "\n")
}

// pending is what a task waits for a person to decide, shown whole: the
// tool call it asks to run (and how to decide), or the question it asked.
func pending(f Flavor, t domain.Task, steps []domain.Step) []string {
	if t.Status.Terminal() {
		return nil
	}
	switch {
	case domain.ApprovalID(t) != "" && t.WaitingOn == domain.WaitApproval:
		return []string{
			indent + "Asks to run: " + Call(f, t.ApprovalAction, t.ApprovalParams),
			fmt.Sprintf("%sSay %s to let it, or %s.", indent, code(f, fmt.Sprintf("approve #%d", t.Number)), code(f, fmt.Sprintf("deny #%d <reason>", t.Number))),
		}
	case t.ApprovalGranted && t.ApprovalAction != "":
		return []string{indent + "Approved to run next: " + Call(f, t.ApprovalAction, t.ApprovalParams)}
	case t.WaitingOn == domain.WaitAnswer:
		if q := Question(steps); q != "" {
			return []string{indent + "Asks: " + Escape(f, q),
				fmt.Sprintf("%sSay %s.", indent, code(f, fmt.Sprintf("answer #%d <your answer>", t.Number)))}
		}
	}
	return nil
}

// Question is the question the latest ask_user step of steps asked, or
// "".
func Question(steps []domain.Step) string {
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i].Action != "ask_user" {
			continue
		}
		var p struct {
			Question string `json:"question"`
		}
		if json.Unmarshal(steps[i].Params, &p) == nil {
			return p.Question
		}
	}
	return ""
}

// HelpRow is one line of the help: what to say, what it does, and its
// /task form on Discord and on Slack ("" for none).
type HelpRow struct{ Say, Does, Discord, Slack string }

// Help lists the chat commands of docs/chat.md, rows (actions' table of
// commands), with an example of each, and on Discord and Slack the /task
// form each platform takes, then the strategies a task may be created with
// (the task service's).
func Help(f Flavor, rows []HelpRow, strategies []string) string {
	head := "📖 Commands — type them here:"
	if f != Plain {
		head = "📖 Commands — mention me or DM me, or use the `/task` command:"
	}
	lines := []string{head, ""}
	for _, r := range rows {
		say := r.Say
		if slash := map[Flavor]string{Discord: r.Discord, Slack: r.Slack}[f]; slash != "" {
			say += " or `" + slash + "`"
		}
		lines = append(lines, "• "+say+" — "+r.Does)
	}
	if len(strategies) > 0 {
		names := make([]string, len(strategies))
		for i, s := range strategies {
			names[i] = "`" + s + "`"
		}
		lines = append(lines, "", "Strategies: "+strings.Join(names, ", ")+" — say `create <strategy> task …`; `loop` is the default.")
	}
	return lit(f, strings.Join(lines, "\n"))
}

// title is how a message names a task: Task #1 "Build auth".
func title(f Flavor, t domain.Task) string { return "Task " + ref(t.Number, oneLine(t.Name), f) }

// ref is #1 "Build auth", the name escaped for f; a task without a name is
// just #1.
func ref(n int64, name string, f Flavor) string {
	s := "#" + strconv.FormatInt(n, 10)
	if name != "" {
		s += ` "` + Escape(f, name) + `"`
	}
	return s
}

// oneLine cleans s and puts it on one line, trimmed.
func oneLine(s string) string {
	return strings.TrimSpace(strings.ReplaceAll(clean(s), "\n", " "))
}

// block escapes multi-line user text for f and lays it out under a label:
// the first line after indent+label, the others at indent, blank lines kept
// blank. It is "" when s is blank.
func block(f Flavor, label, s string) string {
	s = strings.TrimSpace(clean(s))
	if s == "" {
		return ""
	}
	lines := strings.Split(Escape(f, s), "\n")
	for i, l := range lines {
		l = strings.TrimRight(l, " ")
		switch {
		case i == 0:
			lines[i] = indent + label + l
		case l == "":
			lines[i] = ""
		default:
			lines[i] = indent + l
		}
	}
	return strings.Join(lines, "\n")
}

// elapsed is how long a finished task took: CompletedAt − StartedAt, or −
// CreatedAt when it never started.
func elapsed(t domain.Task) (time.Duration, bool) {
	start := t.StartedAt
	if start.IsZero() {
		start = t.CreatedAt
	}
	if t.CompletedAt.IsZero() || start.IsZero() {
		return 0, false
	}
	return max(t.CompletedAt.Sub(start), 0), true
}

// action shows a step as a code span and a mark: `write_file src/a.ts` ✓.
// The parameter shown is the most telling one (see paramSummary), clipped.
// actor names whose turn step s was (docs/strategies.md: "Last action:
// researcher → http_get …"), for a task whose strategy is not loop: in a
// loop task every step is the one agent's.
func actor(f Flavor, t domain.Task, s domain.Step) string {
	if s.Role == "" || t.Strategy == "" || t.Strategy == domain.StrategyLoop {
		return ""
	}
	return Escape(f, oneLine(s.Role)) + " → "
}

func action(f Flavor, s domain.Step) string {
	text := oneLine(s.Action)
	if text == "" {
		text = "(no action)"
	}
	if p := paramSummary(s.Params); p != "" {
		text += " " + clip(p, paramRunes)
	}
	mark := " ✓"
	if !s.Success {
		mark = " ✗"
	}
	return code(f, text) + mark
}

// paramKeys are the tool parameters (docs/tasks.md) that say most about a
// call, best first.
var paramKeys = []string{"path", "url", "command", "question", "goal", "query", "name", "text", "number"}

// paramSummary picks the one parameter value worth showing: the first of
// paramKeys present, else the first other non-empty value by key order.
func paramSummary(raw json.RawMessage) string {
	var m map[string]any
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil || len(m) == 0 {
		return ""
	}
	show := func(v any) string {
		switch v := v.(type) {
		case string:
			return oneLine(v)
		case float64:
			return strconv.FormatFloat(v, 'f', -1, 64)
		case bool:
			return strconv.FormatBool(v)
		}
		return ""
	}
	for _, k := range paramKeys {
		if s := show(m[k]); s != "" {
			return s
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if s := show(m[k]); s != "" {
			return s
		}
	}
	return ""
}
