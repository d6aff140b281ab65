package plugin

import (
	"context"
	"encoding/json"
	"errors"
)

// ModelType names what a model is for; plugins register models by type and
// the runtime's UseModel finds them.
type ModelType string

const (
	// ModelText is the general chat/completion model: task iterations and
	// choosing an action for free text.
	ModelText ModelType = "TEXT"
)

// Model generates text.
type Model interface {
	Generate(ctx context.Context, req ModelRequest) (ModelResponse, error)
}

// ModelFunc adapts a function to Model.
type ModelFunc func(ctx context.Context, req ModelRequest) (ModelResponse, error)

// Generate calls f.
func (f ModelFunc) Generate(ctx context.Context, req ModelRequest) (ModelResponse, error) {
	return f(ctx, req)
}

// Demo is implemented by the built-in demo model. The runtime and the
// messages label whatever it causes, and free text is not sent to it.
type Demo interface {
	IsDemo() bool
}

// IsDemo reports whether m is the built-in demo model.
func IsDemo(m Model) bool {
	d, ok := m.(Demo)
	return ok && d.IsDemo()
}

// Chat roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	// RoleTool is the role of a message carrying the result of one of
	// the assistant's tool calls (native tool calling).
	RoleTool = "tool"
)

// ChatMessage is one message of a model conversation.
type ChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ToolCalls are the tool calls an assistant message made (native
	// tool calling); ToolCallID is the call a RoleTool message answers.
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolSpec offers the model one tool to call natively: an action's name,
// description and parameters (a JSON Schema). Names are the actions'
// (MCP tools' are "<server>.<tool>"): a model adapter whose API restricts
// names maps them there and back.
type ToolSpec struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// ToolCall is one tool call of a model's reply: the call's ID (which the
// RoleTool message with its result names), the tool's name and its
// arguments as the model wrote them (JSON text, not checked).
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ErrToolsUnsupported is in the chain of a model call's error when the
// model refused the call because it cannot call tools (a request with
// Tools to a model without native tool calling). The call's class stays
// what the status says (a 400 is ModelPermanent): a caller that offers
// tools checks for it first and gives up on tools rather than on the
// model.
var ErrToolsUnsupported = errors.New("the model does not support tool calling")

// JSONSchema asks for structured output that follows Schema.
type JSONSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict"`
}

// ModelRequest is one call to a model.
type ModelRequest struct {
	Messages    []ChatMessage
	Schema      *JSONSchema // nil: free text
	MaxTokens   int
	Temperature *float32
	// Tools, when set, are offered for native tool calling: the reply
	// may call them (ModelResponse.ToolCalls) instead of answering.
	Tools []ToolSpec
	// ToolChoice says whether the reply must call a tool: "" lets the
	// model choose ("auto"), "none" forbids calls, "required" demands
	// one, and a tool's name demands that tool.
	ToolChoice string
	// Task, when the call is a task iteration, says which; real models
	// ignore it, the demo model plans from it.
	Task *TaskRef
}

// TaskRef identifies the task an iteration serves.
type TaskRef struct {
	Number    int64
	Goal      string
	Iteration int // the iteration about to run, from 1
	Progress  int
	// Strategy and Role say whose turn the call is (docs/strategies.md); empty
	// Role for a loop iteration.
	Strategy string
	Role     string
}

// Usage counts tokens.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	CachedTokens     int64 `json:"cached_tokens"`
}

// ModelResponse is what a model answered.
type ModelResponse struct {
	Text  string
	Model string
	Usage Usage
	// ToolCalls are the reply's tool calls, in order, when the request
	// offered Tools; a reply with none answers in Text.
	ToolCalls []ToolCall
}
