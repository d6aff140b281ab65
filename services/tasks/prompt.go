package tasks

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/prompts"
)

// History bounds the part of the prompt that grows with the task, so its
// size stays roughly flat up to the last iteration, and retires steps in
// blocks, so that between two retirements each prompt begins with the
// whole of the one before it but its latest step (docs/PERFORMANCE.md: a provider's
// prompt cache serves that prefix). Lengths are in characters (runes); 0
// means no limit.
//
// With the steps numbered 1…L (L the latest), the steps up to m =
// ⌊(L−1)/Block⌋·Block are retired and the steps after m are shown in full
// — their results cut at RecentChars, the latest's at LatestChars. The
// retired steps after c = ⌊(m−Condensed)/Condensed⌋·Condensed are shown as
// one line each (Condensed to 2·Condensed−1 of them), and steps 1…c only
// counted. A step keeps its form until m moves, every Block steps, and
// the count and the lines before it until c moves, every Condensed steps.
type History struct {
	Block          int // steps retired at a time; at most Block latest steps are shown in full
	LatestChars    int // cap on the latest step's result; 0: RecentChars
	RecentChars    int // cap on the result of each other step shown in full
	Condensed      int // at least this many retired steps are shown as one line each, fewer than twice as many
	CondensedChars int // cap on one condensed line
	Answers        int // latest answers shown
	AnswerChars    int // cap on one answer
	ParamsChars    int // cap on one step's parameters
}

// DefaultHistory retires steps five at a time: the latest step's result
// is shown up to a ResultPage, the up to four steps after the last
// retirement up to 2,000 characters of result each, and the 15 to 29
// latest retired steps as one line each.
//
// The sizes are chosen for the model's decisions, and priced by
// docs/PERFORMANCE.md's cost target (billed-equivalent tokens, which
// count a cached prefix at a quarter). The latest result is what the
// model must act on, so it gets a page; the model has already seen each
// older result whole when it was the latest, so 2,000 characters keep a
// file or a command's output whole and the head of a page, with the
// read_result note for the rest; a condensed line, some 35 tokens, keeps
// what was done in view so the model does not redo it. The block layout
// costs nothing in decisions and keeps each prompt the prefix of the
// next. At 4,000 characters (chosen for a cached share of 80%) the
// mixed task's prompts were 7% larger and cost 4.5% more (TestPromptCost).
var DefaultHistory = History{Block: 5, LatestChars: ResultPage, RecentChars: 2000, Condensed: 15, CondensedChars: 140, Answers: 5, AnswerChars: 600, ParamsChars: 300}

// withDefaults is h, or DefaultHistory when h retires no block.
func (h History) withDefaults() History {
	if h.Block <= 0 {
		return DefaultHistory
	}
	return h
}

// Window is how many of a task's latest steps a prompt shows, in full or
// condensed: all an iteration reads of its steps (docs/PERFORMANCE.md). What is
// older the prompt only counts, from the task's digest.
func (h History) Window() int {
	h = h.withDefaults()
	return h.Block + 2*h.Condensed
}

// tiers splits n steps, the last of a task's total, into the retired ones
// only counted, those condensed and those shown in full: the indexes in
// the n where the condensed and the full ones begin.
func (h History) tiers(total, n int) (condensedFrom, fullFrom int) {
	retired := (max(total, 1) - 1) / h.Block * h.Block                 // steps 1…retired
	counted := max(retired-h.Condensed, 0) / h.Condensed * h.Condensed // steps 1…counted
	first := total - n                                                 // steps before the n
	fullFrom = min(max(retired-first, 0), n)
	condensedFrom = min(max(counted-first, 0), fullFrom)
	return condensedFrom, fullFrom
}

// ResultPage is how many characters (runes, not bytes) of a step's result
// the prompt shows for the latest step, and how many read_result returns
// per call, so that a page read back is shown whole.
const ResultPage = 8000

// noteRoom is how far past its cap a result may run and still be shown
// whole: cutting it would save less than the note replacing the rest
// costs. It is also what lets a read_result page — a ResultPage and its
// own closing note — be shown whole as the latest step.
const noteRoom = 200

// readResultTool is the tool a cut result's note points to.
const readResultTool = "read_result"

// Tool is what the prompt tells the model about one tool.
type Tool struct {
	Name        string
	Description string
	Parameters  string
}

// ToolsOf lists the runtime's tool actions that task may use
// (ActionInfo.OffersTo), sorted by name so the prompt's fixed part does
// not change with registration order.
func ToolsOf(rt *plugin.Runtime, task domain.Task) []Tool {
	var tools []Tool
	for _, a := range rt.Actions() {
		info := a.Info()
		if !info.OffersTo(task) {
			continue
		}
		p := strings.TrimSpace(string(info.Parameters))
		if p == "" {
			p = `{"type":"object"}`
		}
		tools = append(tools, Tool{Name: info.Name, Description: info.Description, Parameters: p})
	}
	slices.SortFunc(tools, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
	return tools
}

// PromptInput is what an iteration prompt is built from.
type PromptInput struct {
	System string // the character's system prompt
	Tools  []Tool
	Task   domain.Task
	// Steps are the task's latest steps, in order: all of them, or the
	// History.Window latest. Older counts the steps before them.
	Steps   []domain.Step
	Older   domain.Digest
	Answers []string // answers to the task's questions and subtask outcomes, in order
	// Memory is the "Relevant memory" section (plugin.Recaller), shown
	// after the history: it changes with the latest step, so it is not
	// part of the prefix the prompt before had (docs/PERFORMANCE.md).
	Memory  string
	History History
	// What a strategy adds (see Request): the system template (empty:
	// iteration_system.tmpl), sections after the history, the last
	// instruction (empty: "Choose the next action.") and the role line.
	Template    string
	Notes       []string
	Instruction string
	Role        string
}

type stepView struct {
	Iteration string // StepLabel: "7", or "7.2" for the second call of a tools reply
	Action    string
	Params    string
	Success   bool
	Thought   string
	Result    string // what is shown of the error and the result
	More      string // for a cut result, how much is left and how to read it
}

// BuildIterationPrompt returns the messages for one iteration: a system
// message that is the same for every task and iteration (system prompt,
// tools, answer format), then a user message with the goal, the progress,
// and a bounded history — the latest steps in full, older ones condensed to
// a line, the oldest only counted.
func BuildIterationPrompt(in PromptInput) ([]plugin.ChatMessage, error) {
	h := in.History.withDefaults()
	tmpl := in.Template
	if tmpl == "" {
		tmpl = "iteration_system.tmpl"
	}
	sys, err := systemPrompt(tmpl, in.System, in.Tools)
	if err != nil {
		return nil, err
	}
	steps := in.Steps
	condensedFrom, recentFrom := h.tiers(in.Older.Steps+len(steps), len(steps))
	readable := slices.ContainsFunc(in.Tools, func(t Tool) bool { return t.Name == readResultTool })
	var recent []stepView
	for i, s := range steps[recentFrom:] {
		limit := h.RecentChars
		if i == len(steps)-recentFrom-1 && h.LatestChars > 0 {
			limit = h.LatestChars
		}
		result, more := showResult(s, limit, readable)
		recent = append(recent, stepView{
			Iteration: StepLabel(s), Action: orNone(s.Action), Params: clip(string(s.Params), h.ParamsChars),
			Success: s.Success, Thought: clip(s.Thought, 300), Result: result, More: more,
		})
	}
	var condensed []string
	for _, s := range steps[condensedFrom:recentFrom] {
		mark := "ok"
		if !s.Success {
			mark = "failed"
		}
		line := fmt.Sprintf("%s. %s %s → %s: %s", StepLabel(s), orNone(s.Action), clip(string(s.Params), 60), mark, oneLine(resultText(s), h.CondensedChars))
		condensed = append(condensed, clip(line, h.CondensedChars))
	}
	// The steps older than those shown are only counted: those before
	// Steps (Older) and those of Steps before the condensed ones.
	counted := in.Older
	counted.Actions = maps.Clone(counted.Actions)
	for _, s := range steps[:condensedFrom] {
		counted.AddStep(s)
	}
	earlier := ""
	if counted.Steps > 0 {
		actions := map[string]int{}
		for a, c := range counted.Actions {
			actions[orNone(a)] += c.Runs
		}
		var names []string
		for _, k := range slices.Sorted(maps.Keys(actions)) {
			names = append(names, fmt.Sprintf("%s ×%d", k, actions[k]))
		}
		earlier = fmt.Sprintf("The first %d steps (%d succeeded): %s.", counted.Steps, counted.Succeeded(), strings.Join(names, ", "))
	}
	answers := in.Answers
	if len(answers) > h.Answers {
		answers = answers[len(answers)-h.Answers:]
	}
	var clipped []string
	for _, a := range answers {
		clipped = append(clipped, clip(oneLine(a, h.AnswerChars), h.AnswerChars))
	}
	user, err := prompts.Render("iteration_user.tmpl", map[string]any{
		"Task": in.Task, "Iteration": in.Task.Iteration + 1, "Earlier": earlier,
		"Condensed": condensed, "Recent": recent, "Answers": clipped,
		"Memory": in.Memory, "Notes": in.Notes, "Instruction": firstNonEmpty(in.Instruction, "Choose the next action."), "Role": in.Role,
	})
	if err != nil {
		return nil, err
	}
	return []plugin.ChatMessage{{Role: plugin.RoleSystem, Content: sys}, {Role: plugin.RoleUser, Content: user}}, nil
}

// systemPrompts keeps the system prompts rendered last, one per
// template: the fixed part of every iteration's prompt, the same for
// every task until the tools or the system prompt change.
var systemPrompts sync.Map // template name → *renderedSystem

// renderedSystem is a system prompt and what it was rendered from.
type renderedSystem struct {
	system string
	tools  []Tool
	text   string
}

// systemPrompt renders the system template tmpl, or returns it as last
// rendered from the same system prompt and tools.
func systemPrompt(tmpl, system string, tools []Tool) (string, error) {
	if v, ok := systemPrompts.Load(tmpl); ok {
		r := v.(*renderedSystem)
		if r.system == system && slices.Equal(r.tools, tools) {
			return r.text, nil
		}
	}
	text, err := prompts.Render(tmpl, map[string]any{"System": system, "Tools": tools})
	if err != nil {
		return "", err
	}
	systemPrompts.Store(tmpl, &renderedSystem{system: system, tools: slices.Clone(tools), text: text})
	return text, nil
}

// showResult returns what the prompt shows of a step's error and result
// within limit characters (0: no limit) and, when the result is cut, the
// note saying how much is left and — when read_result is among the tools —
// the call that reads on. The note's offset counts characters of the
// result alone, as read_result does, so the error shown before it does not
// shift it.
func showResult(s domain.Step, limit int, readable bool) (shown, more string) {
	if limit <= 0 {
		return resultText(s), ""
	}
	prefix := ""
	if s.Error != "" {
		prefix = clip(s.Error, limit)
		if s.Result == "" {
			return prefix, ""
		}
		prefix += " "
	}
	budget := max(limit-utf8.RuneCountInString(prefix), 0)
	head, left := cutRunes(s.Result, budget, noteRoom)
	if left == 0 {
		return prefix + head, ""
	}
	if !readable {
		return prefix + head, fmt.Sprintf("[… %s more characters not shown]", thousands(left))
	}
	return prefix + head, ReadResultCallNote(s.Iteration, s.Call, budget, left)
}

// ReadResultNote is the line that ends a result shown in part: how many
// characters are left and the read_result call that reads on from offset.
func ReadResultNote(step, offset, left int) string {
	return fmt.Sprintf(`[… %s more characters: %s {"step": %d, "offset": %d}]`, thousands(left), readResultTool, step, offset)
}

// cutRunes returns the first n runes of s and how many runes are left
// after them. A string at most slack runes longer than n is returned
// whole.
func cutRunes(s string, n, slack int) (head string, left int) {
	total := utf8.RuneCountInString(s)
	if total <= n+slack {
		return s, 0
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos], total - n
		}
		i++
	}
	return s, 0
}

// thousands writes a non-negative n with commas between groups of three
// digits, as a person reads it: 191,234.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func resultText(s domain.Step) string {
	switch {
	case s.Error != "" && s.Result != "":
		return s.Error + " " + s.Result
	case s.Error != "":
		return s.Error
	}
	return s.Result
}

func orNone(a string) string {
	if a == "" {
		return "(none)"
	}
	return a
}

// oneLine joins the words of s with single spaces. With n > 0 it stops
// once it has more than n runes: enough for clip(…, n) to cut as it would
// cut the whole, without walking a megabyte of result.
func oneLine(s string, n int) string {
	var b strings.Builder
	runes := 0
	for w := range strings.FieldsSeq(s) {
		if b.Len() > 0 {
			b.WriteByte(' ')
			runes++
		}
		b.WriteString(w)
		runes += utf8.RuneCountInString(w)
		if n > 0 && runes > n {
			break
		}
	}
	return b.String()
}

// clip shortens s to at most n runes, marking the cut.
func clip(s string, n int) string {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for pos := range s {
		if i == n-1 {
			return s[:pos] + "…"
		}
		i++
	}
	return s
}

// answersFrom collects, in order, the answers a task was resumed with and
// the outcomes of the subtasks it waited on.
func answersFrom(events []domain.TaskEvent) []string {
	var out []string
	for _, ev := range events {
		if a, ok := domain.EventAnswer(ev); ok {
			out = append(out, a)
		}
	}
	return out
}
