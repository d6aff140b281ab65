package actions

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/taskloom/taskloom/plugin"
)

// AskUser posts a question to the task's room and parks the task in
// waiting until someone answers (a reply to the question, or
// `answer #N …`); the answer reaches the next iteration's prompt.
type AskUser struct{}

var _ plugin.Action = AskUser{}

func (AskUser) Info() plugin.ActionInfo {
	return plugin.ActionInfo{
		Name:        "ask_user",
		Description: "Ask the people in the task's room a question and wait for the answer before going on.",
		Examples:    []string{`{"question":"Should the login use JWT or server sessions?"}`},
		Parameters:  schema(`{"type":"object","additionalProperties":false,"required":["question"],"properties":{"question":{"type":"string"}}}`),
		Tool:        true,
	}
}

func (AskUser) Handle(ctx context.Context, call *plugin.Call) (plugin.Result, error) {
	task, refused := taskOf(call)
	if refused != nil {
		return *refused, nil
	}
	var p struct {
		Question string `json:"question"`
	}
	if r := decode(call.Params, &p); r != nil {
		return *r, nil
	}
	q := strings.TrimSpace(p.Question)
	if q == "" {
		return fail("ask_user needs a question.")
	}
	if n := utf8.RuneCountInString(q); n > MaxPostRunes {
		return fail("The question is %d characters; ask_user takes at most %d.", n, MaxPostRunes)
	}
	if task.RoomID == "" {
		return fail("Task #%d has no chat room to ask in; decide without asking.", task.Number)
	}
	n, err := roomMessage(task, "question", q)
	if err != nil {
		return plugin.Result{}, err
	}
	return plugin.Result{Success: true, Text: "asked: " + q, Wait: plugin.WaitAnswer, Notifications: []plugin.Notification{n}}, nil
}
