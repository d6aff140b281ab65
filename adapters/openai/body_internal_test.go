package openai

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/taskloom/taskloom/plugin"
)

// TestRequestBodyAsGoOpenAIEncodesIt: the body of a chat completion, its
// messages encoded apart from the rest (encodeMessages), is byte for byte
// what go-openai makes of the whole request — with tool calls, a schema,
// and text JSON escapes.
func TestRequestBodyAsGoOpenAIEncodesIt(t *testing.T) {
	var got []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		if r.ContentLength != int64(len(got)) {
			t.Errorf("Content-Length %d for a body of %d bytes", r.ContentLength, len(got))
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	defer srv.Close()
	m, err := New(Config{BaseURL: srv.URL + "/v1", APIKey: "k", Model: "m", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	temp := float32(0.3)
	req := plugin.ModelRequest{
		Messages: []plugin.ChatMessage{
			{Role: plugin.RoleSystem, Content: "You are <careful> & \"exact\".\nLine\u2028sep, tab\t, emoji 🧵, nul-ish \x01."},
			{Role: plugin.RoleUser, Content: `{"json": "inside", "messages":null}`},
			{Role: plugin.RoleAssistant, ToolCalls: []plugin.ToolCall{{ID: "c1", Name: "write_file", Arguments: `{"path":"a.md"}`}}},
			{Role: "tool", ToolCallID: "c1", Content: "wrote a.md"},
		},
		MaxTokens:   100,
		Temperature: &temp,
		Schema:      &plugin.JSONSchema{Name: "decision", Strict: true, Schema: json.RawMessage(`{"type": "object",  "properties": {}}`)},
	}
	if _, err := m.Generate(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(m.request(req, withJSONSchema))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("body sent:\n%s\nwant go-openai's encoding:\n%s", got, want)
	}
	var back goopenai.ChatCompletionRequest
	if err := json.Unmarshal(got, &back); err != nil || len(back.Messages) != 4 || back.Messages[1].Content != req.Messages[1].Content {
		t.Errorf("body read back: %+v, %v", back, err)
	}
}

// BenchmarkRequestEncoding compares encoding a request of a 9 KB prompt
// as go-openai does alone (goopenai) and as complete has it done
// (split: the messages here, the rest by go-openai, joined).
func BenchmarkRequestEncoding(b *testing.B) {
	prompt := string(bytes.Repeat([]byte("Step 12 wrote notes.md (20 bytes): \"# Notes\" <ok> & more.\n"), 150))
	creq := goopenai.ChatCompletionRequest{Model: "m", MaxTokens: 100, Messages: []goopenai.ChatCompletionMessage{
		{Role: plugin.RoleSystem, Content: prompt[:2000]}, {Role: plugin.RoleUser, Content: prompt}}}
	b.Run("goopenai", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(creq); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("split", func(b *testing.B) {
		for b.Loop() {
			msgs, err := encodeMessages(creq.Messages)
			if err != nil {
				b.Fatal(err)
			}
			stub := creq
			stub.Messages = nil
			body, err := json.Marshal(stub)
			if err != nil {
				b.Fatal(err)
			}
			req, _ := http.NewRequest(http.MethodPost, "http://x", bytes.NewReader(body))
			if err := withMessages(req, msgs); err != nil {
				b.Fatal(err)
			}
		}
	})
}
