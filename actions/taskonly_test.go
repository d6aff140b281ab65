package actions_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/plugin"
)

// TestTaskToolsSayTheyAreTaskOnly: every tool that refuses a call from
// chat says so in its ActionInfo (TaskOnly), so that the chat model is
// not offered it: a person's free text is never answered by a pick that
// can only be refused. A chat command is never task-only.
func TestTaskToolsSayTheyAreTaskOnly(t *testing.T) {
	t.Parallel()
	for _, a := range actions.Tools(actions.ToolConfig{RunCommand: true}) {
		info := a.Info()
		res, err := a.Handle(context.Background(), &plugin.Call{Params: json.RawMessage(`{}`),
			Message: &plugin.Message{Platform: "console", Room: "console:local", Text: info.Name}})
		refused := err == nil && res.Error == "That is a tool for agent tasks; it cannot be used from chat."
		if refused != info.TaskOnly {
			t.Errorf("%s: TaskOnly %v, but a call from chat: %+v (%v)", info.Name, info.TaskOnly, res, err)
		}
	}
	for _, a := range actions.Commands(&actions.Chat{}) {
		if a.Info().TaskOnly {
			t.Errorf("the chat command %s says it is task-only", a.Info().Name)
		}
	}
}
