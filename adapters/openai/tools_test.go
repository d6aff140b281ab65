package openai_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"testing"

	"github.com/taskloom/taskloom/adapters/openai"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/plugin"
)

var toolSpecs = []plugin.ToolSpec{
	{Name: "write_file", Description: "Write a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`)},
	{Name: "everything.get-env", Description: "An MCP tool.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
}

// TestGenerateWithTools: the actions go out as function tools under names
// the API takes (the fake refuses a dot as the API does), the reply's
// calls come back under the actions' names, and a conversation that
// carries earlier calls and their results is sent as the API wants it.
func TestGenerateWithTools(t *testing.T) {
	t.Parallel()
	m, srv, _ := setup(t, openai.Config{APIKey: "k"})
	srv.ReplyToolCalls("Writing and checking.",
		testkit.OpenAIToolCall{ID: "call_1", Name: "write_file", Arguments: `{"path":"a.md","content":"x"}`},
		testkit.OpenAIToolCall{ID: "call_2", Name: "everything__get-env", Arguments: `{}`})
	srv.Reply("All done.")

	req := plugin.ModelRequest{Messages: []plugin.ChatMessage{{Role: plugin.RoleUser, Content: "Goal: write a.md"}}, Tools: toolSpecs}
	r := generate(t, m, req)
	if r.err != nil {
		t.Fatal(r.err)
	}
	want := []plugin.ToolCall{
		{ID: "call_1", Name: "write_file", Arguments: `{"path":"a.md","content":"x"}`},
		{ID: "call_2", Name: "everything.get-env", Arguments: `{}`},
	}
	if !reflect.DeepEqual(r.resp.ToolCalls, want) || r.resp.Text != "Writing and checking." {
		t.Fatalf("reply = %+v, want the calls %+v", r.resp, want)
	}
	sent := srv.Requests()[0]
	if got := sent.ToolNames(); !reflect.DeepEqual(got, []string{"write_file", "everything__get-env"}) {
		t.Errorf("tools sent as %v", got)
	}
	if sent.ResponseFormat() != "" || sent.Body.ToolChoice != nil {
		t.Errorf("a request with tools asked for response_format %q, tool_choice %v", sent.ResponseFormat(), sent.Body.ToolChoice)
	}

	req.Messages = append(req.Messages,
		plugin.ChatMessage{Role: plugin.RoleAssistant, Content: r.resp.Text, ToolCalls: r.resp.ToolCalls},
		plugin.ChatMessage{Role: plugin.RoleTool, ToolCallID: "call_1", Content: "wrote a.md"},
		plugin.ChatMessage{Role: plugin.RoleTool, ToolCallID: "call_2", Content: "PATH=/bin"})
	req.ToolChoice = "everything.get-env"
	r = generate(t, m, req)
	if r.err != nil || r.resp.Text != "All done." || len(r.resp.ToolCalls) != 0 {
		t.Fatalf("final reply = %+v, %v", r.resp, r.err)
	}
	msgs := srv.Requests()[1].Body.Messages
	if len(msgs) != 4 || msgs[1].ToolCalls[1].Function.Name != "everything__get-env" || msgs[1].ToolCalls[1].ID != "call_2" ||
		msgs[3].Role != "tool" || msgs[3].ToolCallID != "call_2" || msgs[3].Content != "PATH=/bin" {
		t.Errorf("conversation sent = %+v", msgs)
	}
	var body struct {
		ToolChoice struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tool_choice"`
	}
	if err := json.Unmarshal(srv.Requests()[1].Raw, &body); err != nil || body.ToolChoice.Type != "function" || body.ToolChoice.Function.Name != "everything__get-env" {
		t.Errorf("tool_choice sent as %s", srv.Requests()[1].Raw)
	}
}

// TestGenerateToolsUnsupported: a model that cannot call tools refuses
// once, and the error says so (plugin.ErrToolsUnsupported) while staying
// a permanent failure; the same 400 to a request without tools is not
// taken for it.
func TestGenerateToolsUnsupported(t *testing.T) {
	t.Parallel()
	m, srv, _ := setup(t, openai.Config{APIKey: "k"})
	srv.RejectTools()
	r := generate(t, m, plugin.ModelRequest{Messages: []plugin.ChatMessage{{Role: plugin.RoleUser, Content: "hi"}}, Tools: toolSpecs})
	if !errors.Is(r.err, plugin.ErrToolsUnsupported) || classOf(r.err) != plugin.ModelPermanent || statusOf(r.err) != http.StatusBadRequest {
		t.Fatalf("error %v (class %v), want ErrToolsUnsupported, permanent, 400", r.err, classOf(r.err))
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want exactly 1", n)
	}

	srv.Fail(http.StatusBadRequest, "", `{"error":{"message":"qwen does not support tools","type":"api_error","param":null,"code":null}}`)
	r = generate(t, m, plugin.ModelRequest{Messages: []plugin.ChatMessage{{Role: plugin.RoleUser, Content: "hi"}}})
	if r.err == nil || errors.Is(r.err, plugin.ErrToolsUnsupported) {
		t.Errorf("without tools: error %v, want a plain 400", r.err)
	}
}
