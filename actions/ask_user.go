package actions

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// AskUser posts a question to the task's room and parks the task in
// waiting until someone answers (a reply to the question, or
// `answer #N …`); the answer reaches the next iteration's prompt. A task
// without a room waits all the same, to be answered through the API, the
// CLI or the dashboard.
type AskUser struct{}

var _ plugin.Action = AskUser{}

func (AskUser) Info() plugin.ActionInfo {
	return plugin.ActionInfo{
		Name:        "ask_user",
		Description: "Ask the people in the task's room a question and wait for the answer before going on.",
		Examples:    []string{`{"question":"Should the login use JWT or server sessions?"}`},
		Parameters:  schema(`{"type":"object","additionalProperties":false,"required":["question"],"properties":{"question":{"type":"string"}}}`),
		Tool:        true,
		TaskOnly:    true,
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
	res := plugin.Result{Success: true, Text: "asked: " + q, Wait: domain.WaitAnswer}
	if task.RoomID == "" {
		// A task made through the API, the CLI or the dashboard is asked
		// there: the question is in its step and its events.
		return res, nil
	}
	n, err := roomMessage(task, "question", q)
	if err != nil {
		return plugin.Result{}, err
	}
	n.Asks = domain.WaitAnswer
	res.Notifications = []domain.Notification{n}
	return res, nil
}
