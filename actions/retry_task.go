package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/render"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/tasks"
)

// RetryTask continues an ended task: `retry #3 [more context]` creates a
// new task with the same goal, the old task's files and a summary of its
// run (docs/tasks.md). Anyone who may see the old task may retry it; the new
// one is theirs, and their limits apply.
type RetryTask struct{ *Chat }

var (
	_ plugin.Action         = RetryTask{}
	_ plugin.CommandMatcher = RetryTask{}
)

func (RetryTask) Info() plugin.ActionInfo {
	return plugin.ActionInfo{
		Name:        "retry_task",
		Similes:     []string{"retry", "rerun", "continue an ended task"},
		Description: "Continue a task that has ended: a new task with the same goal, its files and a summary of its run, plus what you add.",
		Examples:    []string{"retry #3", "retry #3 use JWT this time", "/task retry 3 use JWT this time"},
		Parameters: schema(`{"type":"object","additionalProperties":false,"required":["number"],"properties":{` +
			`"number":{"type":"integer","minimum":1,"description":"the ended task, as in #3"},` +
			`"text":{"type":"string","maxLength":4000,"description":"more context for the new run"}}}`),
	}
}

func (RetryTask) MatchCommand(msg *plugin.Message) (json.RawMessage, bool) {
	return match(msg, CmdRetry)
}

func (a RetryTask) Handle(ctx context.Context, call *plugin.Call) (plugin.Result, error) {
	msg, refused := chatMessage(call)
	if refused != nil {
		return *refused, nil
	}
	var p numberParams
	if r := decode(call.Params, &p); r != nil {
		return *r, nil
	}
	old, missing, err := a.namedTask(ctx, call, p, "Which task? Say `retry #3`, optionally followed by more context.")
	if missing != nil || err != nil {
		return derefResult(missing), err
	}
	t, err := a.Tasks.Retry(ctx, old.Number, domain.NewTask{
		RequestorID: msg.AuthorID, Platform: msg.Platform, RoomID: msg.Room, WorkspaceID: WorkspaceOf(msg),
		Actor: msg.AuthorID, Now: call.Runtime.Clock().Now(), Context: strings.TrimSpace(p.Text),
	})
	f := render.ForPlatform(msg.Platform)
	switch {
	case errors.Is(err, tasks.ErrNotEnded):
		return plugin.Result{TaskNumber: old.Number, Error: fmt.Sprintf("Task #%d has not ended (it is %s); only an ended task can be retried.",
			old.Number, strings.ToLower(render.StatusWord(old.Status)))}, nil
	case errors.Is(err, domain.ErrInvalid), errors.Is(err, tasks.ErrTooManyActive):
		return fail("Cannot retry task #%d: %s.", old.Number, reason(err))
	case err != nil:
		return plugin.Result{}, err
	}
	return plugin.Result{
		Success: true, TaskNumber: t.Number,
		Text: fmt.Sprintf("🔁 Created task #%d %s, continuing #%d with its files. I'll post progress here.",
			t.Number, quoted(f, t.Name), old.Number),
	}, nil
}
