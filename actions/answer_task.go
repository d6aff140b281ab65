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

// AnswerTask answers the question a waiting task asked: `answer #3 use
// JWT`. Anyone in the task's workspace may answer.
type AnswerTask struct{ *Chat }

var (
	_ plugin.Action         = AnswerTask{}
	_ plugin.CommandMatcher = AnswerTask{}
)

func (AnswerTask) Info() plugin.ActionInfo {
	return plugin.ActionInfo{
		Name:        "answer_task",
		Similes:     []string{"answer", "reply to task"},
		Description: "Answer the question a waiting task asked; the task resumes with the answer.",
		Examples:    []string{"answer #3 use JWT", "/task answer 3 use JWT"},
		Parameters:  numberSchema("the answer"),
	}
}

// MatchCommand takes `answer #N …`, and also any reply to the bot that is
// not another command: a reply to a task's question is its answer.
func (AnswerTask) MatchCommand(msg *plugin.Message) (json.RawMessage, bool) {
	if p, ok := match(msg, CmdAnswer); ok {
		return p, true
	}
	if _, isCommand := ParseCommand(msg.Text); !isCommand && msg.ReplyToBot && strings.TrimSpace(msg.Text) != "" {
		raw, err := json.Marshal(numberParams{Text: msg.Text})
		return raw, err == nil
	}
	return nil, false
}

func (a AnswerTask) Handle(ctx context.Context, call *plugin.Call) (plugin.Result, error) {
	msg, refused := chatMessage(call)
	if refused != nil {
		return *refused, nil
	}
	var p numberParams
	if r := decode(call.Params, &p); r != nil {
		return *r, nil
	}
	if p.Number <= 0 && p.Beyond == "" && strings.TrimSpace(p.Text) != "" && msg.ReplyToBot {
		res, ok, err := AnswerWaiting(ctx, call.Runtime, a.Chat, msg, p.Text)
		if err != nil || ok {
			return res, err
		}
		return fail("If you are answering a task's question, say `answer #3 <your answer>` with its number. Say `help` for the commands.")
	}
	const usage = "Say `answer #3 <your answer>`."
	if strings.TrimSpace(p.Text) == "" {
		return fail(usage)
	}
	t, missing, err := a.namedTask(ctx, call, p, usage)
	if missing != nil || err != nil {
		return derefResult(missing), err
	}
	return answer(ctx, a.Chat, msg, t, p.Text)
}

// answer resumes t with a person's answer; shared with the evaluator that
// notices replies to a task's question.
func answer(ctx context.Context, c *Chat, msg *plugin.Message, t domain.Task, text string) (plugin.Result, error) {
	after, err := c.Tasks.Answer(ctx, t.Number, msg.AuthorID, strings.TrimSpace(text))
	if err != nil {
		if s := refusal(render.ForPlatform(msg.Platform), CmdAnswer, t, err); s != "" {
			return plugin.Result{Error: s, TaskNumber: t.Number}, nil
		}
		return plugin.Result{}, err
	}
	f := render.ForPlatform(msg.Platform)
	return plugin.Result{Success: true, TaskNumber: after.Number,
		Text: fmt.Sprintf("👍 Thanks — task #%d %s goes on with your answer.", after.Number, quoted(f, after.Name))}, nil
}

// AnswerWaiting resumes the one task of a room that waits for an answer,
// with text — for a reply to its question. It reports false, doing
// nothing, unless exactly one task there is waiting on a question (a task
// waiting on its subtasks or an approval takes no answer).
func AnswerWaiting(ctx context.Context, rt *plugin.Runtime, c *Chat, msg *plugin.Message, text string) (plugin.Result, bool, error) {
	all, err := rt.Store().ListTasks(ctx, domain.TaskFilter{
		RoomID: msg.Room, WorkspaceID: WorkspaceOf(msg), Statuses: []domain.Status{domain.StatusWaiting},
	})
	if err != nil {
		return plugin.Result{}, false, err
	}
	var waiting []domain.Task
	for _, t := range all {
		if t.WaitingOn == domain.WaitAnswer {
			waiting = append(waiting, t)
		}
	}
	if len(waiting) != 1 {
		return plugin.Result{}, false, nil
	}
	res, err := answer(ctx, c, msg, waiting[0], text)
	return res, err == nil && res.Success, err
}
