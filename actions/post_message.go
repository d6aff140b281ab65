package actions

import (
	"context"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// MaxPostRunes caps one post_message; the platform splitter cuts what is
// longer than a platform message.
const MaxPostRunes = 8000

// PostMessage posts to the calling task's room through the notification
// outbox, so a restart or a platform outage does not lose it.
type PostMessage struct{}

var _ plugin.Action = PostMessage{}

func (PostMessage) Info() plugin.ActionInfo {
	return plugin.ActionInfo{
		Name:        "post_message",
		Description: "Post a message to the chat room the task was created in.",
		Examples:    []string{`{"text":"Finished the schema; starting on the endpoints."}`},
		Parameters:  schema(`{"type":"object","additionalProperties":false,"required":["text"],"properties":{"text":{"type":"string"}}}`),
		Tool:        true,
		TaskOnly:    true,
		NeedsRoom:   true,
	}
}

func (PostMessage) Handle(ctx context.Context, call *plugin.Call) (plugin.Result, error) {
	task, refused := taskOf(call)
	if refused != nil {
		return *refused, nil
	}
	var p struct {
		Text string `json:"text"`
	}
	if r := decode(call.Params, &p); r != nil {
		return *r, nil
	}
	text := strings.TrimSpace(p.Text)
	if text == "" {
		return fail("post_message needs text.")
	}
	if n := utf8.RuneCountInString(text); n > MaxPostRunes {
		return fail("The message is %d characters; post_message takes at most %d.", n, MaxPostRunes)
	}
	if task.RoomID == "" {
		return fail("Task #%d has no chat room to post in.", task.Number)
	}
	n, err := roomMessage(task, "post", text)
	if err != nil {
		return plugin.Result{}, err
	}
	return plugin.Result{Success: true, Text: "posted to " + task.RoomID, Notifications: []domain.Notification{n}}, nil
}

// roomMessage is the outbox row of a message from a task to its room,
// sent at once by the notification service once the iteration commits.
func roomMessage(task *domain.Task, kind, text string) (domain.Notification, error) {
	payload, err := json.Marshal(map[string]string{"kind": kind, "text": text, "task_name": task.Name})
	if err != nil {
		return domain.Notification{}, err
	}
	return domain.Notification{Room: task.RoomID, TaskNumber: task.Number, Category: domain.NotifyMessage, Payload: payload}, nil
}
