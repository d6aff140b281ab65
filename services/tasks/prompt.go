package tasks

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/prompts"
)

// History bounds the part of the prompt that grows with the task, so its
// size stays roughly flat up to the last iteration.
type History struct {
	Recent         int // latest steps shown in full
	RecentChars    int // cap on one recent step's result
	Condensed      int // older steps shown as one line each
	CondensedChars int // cap on one condensed line
	Answers        int // latest answers shown
	AnswerChars    int // cap on one answer
	ParamsChars    int // cap on one step's parameters
}

// DefaultHistory keeps the last 5 steps in full and 15 more as one line.
var DefaultHistory = History{Recent: 5, RecentChars: 1200, Condensed: 15, CondensedChars: 140, Answers: 5, AnswerChars: 600, ParamsChars: 300}

// Tool is what the prompt tells the model about one tool.
type Tool struct {
	Name        string
	Description string
	Parameters  string
}

// ToolsOf lists the runtime's tool actions (ActionInfo.Tool), sorted by
// name so the prompt's fixed part does not change with registration order.
func ToolsOf(rt *plugin.Runtime) []Tool {
	var tools []Tool
	for _, a := range rt.Actions() {
		info := a.Info()
		if !info.Tool {
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
	System  string // the character's system prompt
	Tools   []Tool
	Task    plugin.Task
	Steps   []plugin.Step // every step so far, in order
	Answers []string      // answers to the task's questions and subtask outcomes, in order
	History History
}

type stepView struct {
	Iteration int
	Action    string
	Params    string
	Success   bool
	Thought   string
	Result    string
}

// BuildIterationPrompt returns the messages for one iteration: a system
// message that is the same for every task and iteration (system prompt,
// tools, answer format), then a user message with the goal, the progress,
// and a bounded history — the latest steps in full, older ones condensed to
// a line, the oldest only counted.
func BuildIterationPrompt(in PromptInput) ([]plugin.ChatMessage, error) {
	h := in.History
	if h.Recent <= 0 {
		h = DefaultHistory
	}
	sys, err := prompts.Render("iteration_system.tmpl", map[string]any{"System": in.System, "Tools": in.Tools})
	if err != nil {
		return nil, err
	}
	steps := in.Steps
	recentFrom := max(0, len(steps)-h.Recent)
	condensedFrom := max(0, recentFrom-h.Condensed)
	var recent []stepView
	for _, s := range steps[recentFrom:] {
		recent = append(recent, stepView{
			Iteration: s.Iteration, Action: orNone(s.Action), Params: clip(string(s.Params), h.ParamsChars),
			Success: s.Success, Thought: clip(s.Thought, 300), Result: clip(resultText(s), h.RecentChars),
		})
	}
	var condensed []string
	for _, s := range steps[condensedFrom:recentFrom] {
		mark := "ok"
		if !s.Success {
			mark = "failed"
		}
		line := fmt.Sprintf("%d. %s %s → %s: %s", s.Iteration, orNone(s.Action), clip(string(s.Params), 60), mark, oneLine(resultText(s)))
		condensed = append(condensed, clip(line, h.CondensedChars))
	}
	earlier := ""
	if condensedFrom > 0 {
		ok, actions := 0, map[string]int{}
		for _, s := range steps[:condensedFrom] {
			if s.Success {
				ok++
			}
			actions[orNone(s.Action)]++
		}
		var names []string
		for _, k := range slices.Sorted(maps.Keys(actions)) {
			names = append(names, fmt.Sprintf("%s ×%d", k, actions[k]))
		}
		earlier = fmt.Sprintf("Before that, %d earlier steps (%d succeeded): %s.", condensedFrom, ok, strings.Join(names, ", "))
	}
	answers := in.Answers
	if len(answers) > h.Answers {
		answers = answers[len(answers)-h.Answers:]
	}
	var clipped []string
	for _, a := range answers {
		clipped = append(clipped, clip(oneLine(a), h.AnswerChars))
	}
	user, err := prompts.Render("iteration_user.tmpl", map[string]any{
		"Task": in.Task, "Iteration": in.Task.Iteration + 1, "Earlier": earlier,
		"Condensed": condensed, "Recent": recent, "Answers": clipped,
	})
	if err != nil {
		return nil, err
	}
	return []plugin.ChatMessage{{Role: plugin.RoleSystem, Content: sys}, {Role: plugin.RoleUser, Content: user}}, nil
}

func resultText(s plugin.Step) string {
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

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

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
func answersFrom(events []plugin.TaskEvent) []string {
	var out []string
	for _, ev := range events {
		key := ""
		switch ev.Type {
		case plugin.EventAnswered:
			key = "answer"
		case plugin.EventSubtaskEnded:
			key = "outcomes"
		default:
			continue
		}
		var p plugin.EventPayload
		if json.Unmarshal(ev.Payload, &p) != nil {
			continue
		}
		if a, ok := p.Detail[key].(string); ok {
			out = append(out, a)
		}
	}
	return out
}
