package plugin_test

import (
	"context"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/plugin"
)

// TestChatModelIsNotOfferedTaskTools: the chat model picks among what chat
// can do; a task's tool (the task's files, a web fetch, a post to the
// task's room), which refuses a call from chat, is not in its list. A
// person asking a question in chat wants an answer or a command, not a
// pick that can only be refused.
func TestChatModelIsNotOfferedTaskTools(t *testing.T) {
	t.Parallel()
	var prompt string
	model := plugin.ModelFunc(func(_ context.Context, r plugin.ModelRequest) (plugin.ModelResponse, error) {
		prompt = r.Messages[0].Content
		return plugin.ModelResponse{Text: `{"action":"none","params":{},"reply":"hello"}`}, nil
	})
	taskTool := &action{info: plugin.ActionInfo{Name: "write_file", Tool: true, TaskOnly: true}}
	both := &action{info: plugin.ActionInfo{Name: "lookup_weather", Tool: true}} // a tool chat may use too
	f := newPipeline(t, model, echo("help"), echo("list_tasks"), taskTool, both)
	f.send(t, plugin.Message{Text: "how is it going?", Mentioned: true})
	if strings.Contains(prompt, "- write_file:") {
		t.Errorf("the chat model is offered a task's tool:\n%s", prompt)
	}
	for _, name := range []string{"list_tasks", "lookup_weather"} {
		if !strings.Contains(prompt, "- "+name+":") {
			t.Errorf("the chat model is not offered %s:\n%s", name, prompt)
		}
	}
}
