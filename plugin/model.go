package plugin

import (
	"context"
	"encoding/json"
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
)

// ChatMessage is one message of a model conversation.
type ChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

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
	// Strategy and Role say whose turn the call is (PRODUCT §8); empty
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
}
