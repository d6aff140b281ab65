package testkit_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/taskloom/taskloom/internal/testkit"
)

// weather is a function tool as go-openai sends one.
func weather(name string) goopenai.Tool {
	return goopenai.Tool{Type: goopenai.ToolTypeFunction, Function: &goopenai.FunctionDefinition{
		Name: name, Description: "the weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}}
}

func toolChat(t *testing.T, c *goopenai.Client, tools []goopenai.Tool, msgs ...goopenai.ChatCompletionMessage) (goopenai.ChatCompletionResponse, error) {
	t.Helper()
	if len(msgs) == 0 {
		msgs = []goopenai.ChatCompletionMessage{{Role: "user", Content: "weather in Oslo and Rome?"}}
	}
	return c.CreateChatCompletion(t.Context(), goopenai.ChatCompletionRequest{Model: "gpt-4o-mini", Messages: msgs, Tools: tools})
}

// TestOpenAIToolCalls: a scripted reply with tool calls reaches go-openai
// as the API sends it — tool_calls with IDs, content null, finish_reason
// tool_calls — and the tools and tool messages of the next request are
// recorded as sent.
func TestOpenAIToolCalls(t *testing.T) {
	t.Parallel()
	o := testkit.NewOpenAI(t)
	o.ReplyToolCalls("", testkit.OpenAIToolCall{Name: "get_weather", Arguments: `{"city":"Oslo"}`},
		testkit.OpenAIToolCall{ID: "call_rome", Name: "get_weather", Arguments: `{"city":"Rome"}`})
	o.Reply("Oslo is cold, Rome is warm.")
	c := client(o)
	tools := []goopenai.Tool{weather("get_weather")}

	resp, err := toolChat(t, c, tools)
	if err != nil {
		t.Fatal(err)
	}
	ch := resp.Choices[0]
	if ch.FinishReason != goopenai.FinishReasonToolCalls || len(ch.Message.ToolCalls) != 2 || ch.Message.Content != "" {
		t.Fatalf("reply = %+v, want two tool calls, no content, finish_reason tool_calls", ch)
	}
	first, second := ch.Message.ToolCalls[0], ch.Message.ToolCalls[1]
	if !strings.HasPrefix(first.ID, "call_") || second.ID != "call_rome" || first.ID == second.ID ||
		first.Type != goopenai.ToolTypeFunction || first.Function.Name != "get_weather" || first.Function.Arguments != `{"city":"Oslo"}` {
		t.Fatalf("tool calls = %+v", ch.Message.ToolCalls)
	}
	raw := o.Requests()[0].Raw
	if !strings.Contains(string(raw), `"tools":[{`) {
		t.Errorf("request body %s has no tools", raw)
	}
	if got := o.Requests()[0].ToolNames(); len(got) != 1 || got[0] != "get_weather" {
		t.Errorf("ToolNames() = %v", got)
	}

	next := []goopenai.ChatCompletionMessage{
		{Role: "user", Content: "weather in Oslo and Rome?"},
		ch.Message,
		{Role: "tool", ToolCallID: first.ID, Content: "-3°C"},
		{Role: "tool", ToolCallID: second.ID, Content: "24°C"},
	}
	resp, err = toolChat(t, c, tools, next...)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].FinishReason != goopenai.FinishReasonStop || resp.Choices[0].Message.Content != "Oslo is cold, Rome is warm." {
		t.Fatalf("final reply = %+v", resp.Choices[0])
	}
	msgs := o.Requests()[1].Body.Messages
	if len(msgs) != 4 || msgs[1].ToolCalls[1].ID != "call_rome" || msgs[3].ToolCallID != "call_rome" || msgs[3].Content != "24°C" {
		t.Errorf("recorded messages = %+v", msgs)
	}
}

// TestOpenAIToolCallsRefused: what the API refuses with a 400 is refused
// here too, taking nothing from the script.
func TestOpenAIToolCallsRefused(t *testing.T) {
	t.Parallel()
	call := goopenai.ToolCall{ID: "call_1", Type: goopenai.ToolTypeFunction, Function: goopenai.FunctionCall{Name: "get_weather", Arguments: `{}`}}
	user := goopenai.ChatCompletionMessage{Role: "user", Content: "hi"}
	asked := goopenai.ChatCompletionMessage{Role: "assistant", ToolCalls: []goopenai.ToolCall{call}}
	tests := []struct {
		name  string
		tools []goopenai.Tool
		msgs  []goopenai.ChatCompletionMessage
		param string
		want  string
	}{
		{"a dot in a function name", []goopenai.Tool{weather("everything.get-env")}, nil, "tools[0].function.name", "does not match pattern"},
		{"a name too long", []goopenai.Tool{weather(strings.Repeat("a", 65))}, nil, "tools[0].function.name", "maximum length 64"},
		{"a tool message answering nothing", nil, []goopenai.ChatCompletionMessage{user, {Role: "tool", ToolCallID: "call_1", Content: "x"}},
			"messages.[1].role", "must be a response to a preceeding message with 'tool_calls'"},
		{"a call left unanswered", nil, []goopenai.ChatCompletionMessage{user, asked, user}, "messages.[1].role", "did not have response messages: call_1"},
		{"an answer to another call", nil, []goopenai.ChatCompletionMessage{user, asked, {Role: "tool", ToolCallID: "call_2", Content: "x"}},
			"messages.[2].tool_call_id", "'call_2' not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := testkit.NewOpenAI(t)
			o.Reply("never sent")
			_, err := toolChat(t, client(o), tt.tools, tt.msgs...)
			var apiErr *goopenai.APIError
			if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != http.StatusBadRequest || apiErr.Param == nil ||
				*apiErr.Param != tt.param || !strings.Contains(apiErr.Message, tt.want) {
				t.Fatalf("error %#v, want a 400 on %s saying %q", err, tt.param, tt.want)
			}
			if o.Pending() != 1 {
				t.Error("the refusal took a reply from the script")
			}
		})
	}
}

// TestOpenAIRejectTools: a model that cannot call tools refuses every
// request offering them, as Ollama does, and answers the rest.
func TestOpenAIRejectTools(t *testing.T) {
	t.Parallel()
	o := testkit.NewOpenAI(t)
	o.RejectTools()
	o.Reply("plain")
	c := client(o)
	_, err := toolChat(t, c, []goopenai.Tool{weather("get_weather")})
	var apiErr *goopenai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != http.StatusBadRequest || !strings.Contains(apiErr.Message, "does not support tools") {
		t.Fatalf("error %#v, want a 400 saying the model does not support tools", err)
	}
	if text, err := chat(t, c, "", 0); err != nil || text != "plain" {
		t.Fatalf("without tools = %q, %v; want the reply", text, err)
	}
}
