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
// run (docs/tasks.md). Like every control, it is the old task's
// requestor's or an admin's: a retry carries the old task's files, which
// may hold what its requestor did not mean for anyone else. The new task
// runs in the old one's room, whoever asks and wherever, so those files and
// that run never reach another room; it is the asker's, and their limits
// apply.
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
	if !a.mayControl(msg, old) {
		return fail("Only the person who created task #%d, or an admin, can retry it.", old.Number)
	}
	in := domain.NewTask{
		RequestorID: msg.AuthorID, Platform: msg.Platform, RoomID: msg.Room, WorkspaceID: old.WorkspaceID,
		Actor: msg.AuthorID, Now: call.Runtime.Clock().Now(), Context: strings.TrimSpace(p.Text),
		Origin: originOf(msg),
	}
	elsewhere := old.RoomID != "" && old.RoomID != msg.Room
	if old.RoomID != "" {
		in.RoomID, in.Platform = old.RoomID, domain.RoomPlatform(old.RoomID)
	}
	t, err := a.Tasks.Retry(ctx, old.Number, in)
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
	where := "here"
	if elsewhere {
		where = fmt.Sprintf("where task #%d ran", old.Number)
	}
	return plugin.Result{
		Success: true, TaskNumber: t.Number,
		Text: fmt.Sprintf("🔁 Created task #%d %s, continuing #%d with its files. I'll post progress %s.",
			t.Number, quoted(f, t.Name), old.Number, where),
	}, nil
}
