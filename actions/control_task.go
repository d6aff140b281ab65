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

// ControlTask pauses, resumes or cancels a task — `pause #2`, `resume #2`,
// `cancel #2` — or decides on the tool call it asked to make: `approve #2`,
// `deny #2 [reason]` (docs/security.md). Only the task's requestor and admins
// may. Approve, deny and cancel are a person's decisions
// (plugin.ActionInfo.Decision): never a model's pick.
type ControlTask struct {
	*Chat
	Op string // CmdPause, CmdResume, CmdCancel, CmdApprove or CmdDeny
}

var (
	_ plugin.Action         = ControlTask{}
	_ plugin.CommandMatcher = ControlTask{}
)

func (a ControlTask) Info() plugin.ActionInfo {
	desc := map[string]string{
		CmdPause:   "Pause a task: it is not served until resumed. Its requestor and admins may.",
		CmdResume:  "Resume a paused task. Its requestor and admins may.",
		CmdCancel:  "Cancel a task for good, with its subtasks. Its requestor and admins may.",
		CmdApprove: "Let a task run the tool call it asked approval for, exactly as asked. Its requestor and admins may.",
		CmdDeny:    "Refuse the tool call a task asked approval for, with a reason. Its requestor and admins may.",
	}[a.Op]
	params := numberSchema("")
	if a.Op == CmdDeny || a.Op == CmdApprove {
		params = schema(`{"type":"object","additionalProperties":false,"required":["number"],"properties":{` +
			`"number":{"type":"integer","minimum":1,"description":"the task number, as in #3"},` +
			`"text":{"type":"string","maxLength":1000,"description":"why it is denied (deny only)"},` +
			`"call":{"type":"string","maxLength":64,"description":"the id of the approval request decided on; omitted, the call pending now"}}}`)
	}
	return plugin.ActionInfo{
		Name:        a.Op + "_task",
		Similes:     []string{a.Op},
		Description: desc,
		Examples:    []string{a.Op + " #2", "/task " + a.Op + " 2"},
		Parameters:  params,
		// Approving gives a task's call a person's authority; denying
		// and cancelling end work. Pause and resume are reversible and
		// change no authority, so a model may pick them.
		Decision: a.Op == CmdApprove || a.Op == CmdDeny || a.Op == CmdCancel,
	}
}

func (a ControlTask) MatchCommand(msg *plugin.Message) (json.RawMessage, bool) {
	return match(msg, a.Op)
}

func (a ControlTask) Handle(ctx context.Context, call *plugin.Call) (plugin.Result, error) {
	msg, refused := chatMessage(call)
	if refused != nil {
		return *refused, nil
	}
	var p numberParams
	if r := decode(call.Params, &p); r != nil {
		return *r, nil
	}
	t, missing, err := a.namedTask(ctx, call, p, fmt.Sprintf("Which task? Say `%s #3`.", a.Op))
	if missing != nil || err != nil {
		return derefResult(missing), err
	}
	if !a.mayControl(msg, t) {
		return fail("Only the person who created task #%d, or an admin, can %s it.", t.Number, a.Op)
	}
	if p.Call == "" && (a.Op == CmdApprove || a.Op == CmdDeny) {
		// The call pending as the task was read: the one the answer
		// names, and the only one this decision may land on.
		p.Call = domain.ApprovalID(t)
	}
	var after domain.Task
	switch a.Op {
	case CmdPause:
		after, err = a.Tasks.Pause(ctx, t.Number, msg.AuthorID)
	case CmdResume:
		after, err = a.Tasks.Resume(ctx, t.Number, msg.AuthorID)
	case CmdApprove:
		after, err = a.Tasks.Approve(ctx, t.Number, msg.AuthorID, p.Call)
	case CmdDeny:
		after, err = a.Tasks.Deny(ctx, t.Number, msg.AuthorID, p.Call, strings.TrimSpace(p.Text))
	default:
		after, err = a.Tasks.Cancel(ctx, t.Number, msg.AuthorID)
	}
	f := render.ForPlatform(msg.Platform)
	if err != nil {
		if s := refusal(f, a.Op, t, err); s != "" {
			return plugin.Result{Error: s, TaskNumber: t.Number}, nil
		}
		return plugin.Result{}, err
	}
	icon := map[string]string{CmdPause: "⏸️", CmdResume: "▶️", CmdCancel: "🛑", CmdApprove: "✅", CmdDeny: "🚫"}[a.Op]
	text := fmt.Sprintf("%s Task #%d %s %s.", icon, after.Number, quoted(f, after.Name), pastTense(a.Op))
	switch a.Op {
	case CmdApprove:
		text = fmt.Sprintf("✅ Approved %s for task #%d %s; it runs next.",
			render.Call(f, t.ApprovalAction, t.ApprovalParams), after.Number, quoted(f, after.Name))
	case CmdDeny:
		text = fmt.Sprintf("🚫 Denied %s for task #%d %s; it will not run.",
			render.Call(f, t.ApprovalAction, t.ApprovalParams), after.Number, quoted(f, after.Name))
	}
	if a.Op == CmdPause {
		text += fmt.Sprintf(" Say %s to continue.", inlineCode(f, fmt.Sprintf("resume #%d", after.Number)))
	}
	if a.Op == CmdCancel {
		// The task's room is told "🛑 Task #3 … canceled" as the task
		// ends: there the reply says what is next rather than the same
		// line twice; elsewhere it says both.
		retry := fmt.Sprintf(" keeps its files: say %s to continue it as a new task.", inlineCode(f, fmt.Sprintf("retry #%d", after.Number)))
		if after.RoomID == msg.Room {
			text = fmt.Sprintf("Canceled. Task #%d%s", after.Number, retry)
		} else {
			text += " It" + retry
		}
	}
	return plugin.Result{Success: true, TaskNumber: after.Number, Text: text}, nil
}
