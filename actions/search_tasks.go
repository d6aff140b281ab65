package actions

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/render"
	"github.com/taskloom/taskloom/plugin"
)

// SearchShown caps the matches listed.
const SearchShown = 10

// SearchTasks finds tasks whose name or goal matches: `search tasks auth`.
type SearchTasks struct{ *Chat }

var (
	_ plugin.Action         = SearchTasks{}
	_ plugin.CommandMatcher = SearchTasks{}
)

func (SearchTasks) Info() plugin.ActionInfo {
	return plugin.ActionInfo{
		Name:        "search_tasks",
		Similes:     []string{"find tasks"},
		Description: "Find tasks of this workspace whose name or goal contains the query.",
		Examples:    []string{"search tasks auth", "/task search auth"},
		Parameters:  schema(`{"type":"object","additionalProperties":false,"required":["query"],"properties":{"query":{"type":"string","minLength":1}}}`),
	}
}

func (SearchTasks) MatchCommand(msg *plugin.Message) (json.RawMessage, bool) {
	return match(msg, CmdSearch)
}

func (a SearchTasks) Handle(ctx context.Context, call *plugin.Call) (plugin.Result, error) {
	msg, refused := chatMessage(call)
	if refused != nil {
		return *refused, nil
	}
	var p struct {
		Query string `json:"query"`
	}
	if r := decode(call.Params, &p); r != nil {
		return *r, nil
	}
	q := strings.TrimSpace(p.Query)
	if q == "" {
		return fail("Search for what? Say `search tasks <words>`.")
	}
	st := call.Runtime.Store()
	filter := domain.TaskFilter{WorkspaceID: WorkspaceOf(msg), Query: q, Order: domain.OrderRecent}
	total, err := st.CountTasks(ctx, filter)
	if err != nil {
		return plugin.Result{}, err
	}
	f := render.ForPlatform(msg.Platform)
	if total == 0 {
		return plugin.Result{Success: true, Text: fmt.Sprintf("🔎 No tasks match %s.", quoted(f, q))}, nil
	}
	filter.Limit = SearchShown
	found, err := st.ListTasks(ctx, filter)
	if err != nil {
		return plugin.Result{}, err
	}
	lines := []string{fmt.Sprintf("🔎 %d %s matching %s:", total, plural(total, "task", "tasks"), quoted(f, q))}
	for _, t := range found {
		lines = append(lines, fmt.Sprintf("#%d %s %s %d%%  %s", t.Number, quoted(f, t.Name), render.Bar(t.Progress), t.Progress, render.TaskStatusWord(t)))
	}
	if total > len(found) {
		lines = append(lines, fmt.Sprintf("…and %d more", total-len(found)))
	}
	return plugin.Result{Success: true, Text: strings.Join(lines, "\n")}, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
