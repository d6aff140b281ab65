package evaluators

import (
	"context"
	"strings"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/plugin"
)

// Answer notices a message that answers a question a waiting task asked,
// and resumes the task with it. `answer #N …` is a command of its own; this
// evaluator covers the other way people answer: replying to the question —
// a reply to the bot's message, or a message in the thread the question
// was asked in — when exactly one task of that room is waiting. With
// several waiting, it does nothing, and people use `answer #N`.
type Answer struct {
	Chat *actions.Chat
}

var (
	_ plugin.Evaluator          = Answer{}
	_ plugin.EvaluatorValidator = Answer{}
)

func (Answer) Info() plugin.EvaluatorInfo {
	return plugin.EvaluatorInfo{
		Name:        "answer_questions",
		Description: "Resume a waiting task when a message in its room answers its question.",
		AlwaysRun:   true,
		Examples:    []string{"(a reply to “❓ Task #3 asks: JWT or sessions?”) use JWT"},
	}
}

// Validate keeps to replies and thread messages that were not commands.
func (Answer) Validate(_ context.Context, ev *plugin.Evaluation) bool {
	msg := ev.Message
	if msg == nil || strings.TrimSpace(msg.Text) == "" || msg.Command {
		return false
	}
	if _, isCommand := actions.ParseCommand(msg.Text); isCommand {
		return false
	}
	// Replies to the bot are addressed to it: answer_task took them. What
	// is left is chatter in a thread (platform:channel:thread), where
	// Slack users answer without mentioning the bot.
	return !msg.Addressed() && strings.Count(msg.Room, ":") >= 2
}

func (a Answer) Evaluate(ctx context.Context, ev *plugin.Evaluation) error {
	res, ok, err := actions.AnswerWaiting(ctx, ev.Runtime, a.Chat, ev.Message, ev.Message.Text)
	if err != nil || !ok || ev.Reply == nil {
		return err
	}
	return ev.Reply(ctx, plugin.Response{Text: res.Text, TaskNumber: res.TaskNumber})
}
