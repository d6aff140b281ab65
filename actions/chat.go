package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/render"
	"github.com/taskloom/taskloom/plugin"
)

// Chat is what the chat commands share: the task service, and who may
// control any task (TASKLOOM_ADMINS) besides its requestor and the
// platform's own administrators.
type Chat struct {
	Tasks domain.TaskControl
	// Schedules, when set, serves the schedule commands
	// (docs/schedules.md).
	Schedules domain.ScheduleControl
	Admins    []string
	// Defaults for new tasks (TASKLOOM_MAX_ITERATIONS, TASKLOOM_MAX_STALE).
	MaxIterations      int
	MaxStaleIterations int
}

// Commands returns the chat commands of docs/chat.md, in the order their
// grammars are tried.
func Commands(c *Chat) []plugin.Action {
	return []plugin.Action{
		HelpCommand{c},
		ForgetMe{},
		ListTasks{c},
		TaskStatus{c},
		ControlTask{c, CmdPause},
		ControlTask{c, CmdResume},
		ControlTask{c, CmdCancel},
		ControlTask{c, CmdApprove},
		ControlTask{c, CmdDeny},
		SearchTasks{c},
		AnswerTask{c},
		RetryTask{c},
		ScheduleCommand{c, CmdSchedule},
		ScheduleCommand{c, CmdSchedules},
		ScheduleCommand{c, CmdUnschedule},
		ScheduleCommand{c, CmdPauseSchedule},
		ScheduleCommand{c, CmdResumeSchedule},
		CreateTask{c},
	}
}

// WorkspaceOf is the workspace a message's tasks belong to: the guild or
// team, "local" for the console and the API, and for a direct message a
// workspace of the author's own, so DM tasks stay private to them.
func WorkspaceOf(msg *plugin.Message) string {
	if msg.DM {
		return domain.DMWorkspace(msg.Platform, msg.AuthorID)
	}
	if msg.WorkspaceID == "" {
		return "local"
	}
	return msg.WorkspaceID
}

// chatMessage returns the message a command answers, or a refusal when an
// agent task tries to run a chat command as a tool.
func chatMessage(call *plugin.Call) (*plugin.Message, *plugin.Result) {
	if call.Message == nil {
		return nil, &plugin.Result{Error: "That is a chat command; tasks cannot run it."}
	}
	return call.Message, nil
}

// visibleTask loads a task the author may see: same workspace. A task
// elsewhere is answered exactly like one that does not exist, so numbers
// do not leak across workspaces.
func (c *Chat) visibleTask(ctx context.Context, call *plugin.Call, number int64) (domain.Task, *plugin.Result, error) {
	msg := call.Message
	t, err := call.Runtime.Store().GetTask(ctx, number)
	if errors.Is(err, domain.ErrNotFound) || (err == nil && t.WorkspaceID != WorkspaceOf(msg)) {
		return domain.Task{}, &plugin.Result{Error: fmt.Sprintf("There is no task #%d here.", number)}, nil
	}
	if err != nil {
		return domain.Task{}, nil, fmt.Errorf("get task #%d: %w", number, err)
	}
	return t, nil, nil
}

// namedTask is the task a numbered command names, or the one sentence
// that answers it: usage when it names none, "There is no task #N here."
// when no task of this workspace has the number, however large. (Beyond
// is said back only when it is digits: a model's call may set it too.)
func (c *Chat) namedTask(ctx context.Context, call *plugin.Call, p numberParams, usage string) (domain.Task, *plugin.Result, error) {
	if p.Number <= 0 {
		if p.Beyond != "" && strings.Trim(p.Beyond, "0123456789") == "" {
			return domain.Task{}, &plugin.Result{Error: fmt.Sprintf("There is no task #%s here.", p.Beyond)}, nil
		}
		return domain.Task{}, &plugin.Result{Error: usage}, nil
	}
	return c.visibleTask(ctx, call, p.Number)
}

// mayControl says whether the author may pause, resume or cancel t.
func (c *Chat) mayControl(msg *plugin.Message, t domain.Task) bool {
	return msg.AuthorID != "" && (t.RequestorID == msg.AuthorID || msg.Admin || slices.Contains(c.Admins, msg.AuthorID))
}

// numberParams is the parameters of commands that name a task.
type numberParams struct {
	Number int64  `json:"number"`
	Text   string `json:"text,omitempty"`
	Beyond string `json:"beyond,omitempty"` // Command.Beyond
	Call   string `json:"call,omitempty"`   // Command.Call
}

func numberSchema(extra string) json.RawMessage {
	props := `"number":{"type":"integer","minimum":1,"description":"the task number, as in #3"}`
	req := `["number"]`
	if extra != "" {
		props += `,"text":{"type":"string","description":"` + extra + `"}`
		req = `["number","text"]`
	}
	return json.RawMessage(`{"type":"object","additionalProperties":false,"required":` + req + `,"properties":{` + props + `}}`)
}

// match turns the grammar's reading of a message into an action's
// parameters, when the command is of kind.
func match(msg *plugin.Message, kind string) (json.RawMessage, bool) {
	c, ok := ParseCommand(msg.Text)
	if !ok || c.Kind != kind {
		return nil, false
	}
	var v any
	switch kind {
	case CmdCreate:
		p := map[string]string{"goal": c.Text}
		if c.Strategy != "" {
			p["strategy"] = c.Strategy
		}
		v = p
	case CmdSearch:
		v = map[string]string{"query": c.Text}
	case CmdList, CmdHelp, CmdForget:
		v = map[string]string{}
	default:
		v = numberParams{Number: c.Number, Text: c.Text, Beyond: c.Beyond, Call: c.Call}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	return raw, true
}

// refusal explains a refused transition in one sentence.
func refusal(f render.Flavor, op string, t domain.Task, err error) string {
	var (
		te    *domain.TaskError
		stale *domain.StaleApprovalError
	)
	switch {
	case errors.As(err, &stale):
		return staleApproval(f, stale.Now)
	case errors.Is(err, domain.ErrTerminal):
		return fmt.Sprintf("Task #%d has already ended (%s); it cannot be %s.", t.Number, strings.ToLower(render.StatusWord(t.Status)), pastTense(op))
	case errors.As(err, &te) && errors.Is(err, domain.ErrInvalidState):
		switch op {
		case CmdResume:
			return fmt.Sprintf("Task #%d is not paused (it is %s); only a paused task can be resumed.", t.Number, strings.ToLower(render.StatusWord(te.Status)))
		case CmdPause:
			return fmt.Sprintf("Task #%d is already paused.", t.Number)
		case CmdApprove, CmdDeny:
			return fmt.Sprintf("Task #%d is not waiting for an approval.", t.Number)
		case CmdAnswer:
			if t.WaitingOn == domain.WaitSubtasks {
				return fmt.Sprintf("Task #%d is not waiting for an answer: it waits for its subtasks to end.", t.Number)
			}
			return fmt.Sprintf("Task #%d is not waiting for an answer.", t.Number)
		}
	}
	return ""
}

// staleApproval answers a decision on an approval request that is no
// longer pending, saying what task now (as it is) asks instead, if
// anything.
func staleApproval(f render.Flavor, now domain.Task) string {
	const gone = "That request is no longer pending"
	switch {
	case domain.ApprovalID(now) != "":
		return fmt.Sprintf("%s; task #%d now asks to run %s.", gone, now.Number,
			render.Call(f, now.ApprovalAction, now.ApprovalParams))
	case now.ApprovalGranted && now.ApprovalAction != "":
		return fmt.Sprintf("%s; task #%d was approved to run %s, which it runs next.", gone, now.Number,
			render.Call(f, now.ApprovalAction, now.ApprovalParams))
	case now.Status.Terminal():
		return fmt.Sprintf("%s; task #%d has ended (%s).", gone, now.Number, strings.ToLower(render.StatusWord(now.Status)))
	}
	return fmt.Sprintf("%s; task #%d is %s and asks for no approval.", gone, now.Number, strings.ToLower(render.StatusWord(now.Status)))
}

func pastTense(op string) string {
	switch op {
	case CmdPause:
		return "paused"
	case CmdResume:
		return "resumed"
	case CmdCancel:
		return "canceled"
	case CmdAnswer:
		return "answered"
	case CmdRetry:
		return "retried"
	case CmdApprove:
		return "approved"
	case CmdDeny:
		return "denied"
	}
	return op + "d"
}
