package testkit

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/taskloom/taskloom/plugin"
)

// ScriptedModel is an in-process plugin.Model that answers from a script:
// each call takes the next scripted answer, or the default when the script
// is empty. It records every request. Use it where the model's wire
// protocol is not the point (the task service's rules); the OpenAI adapter
// is tested against NewOpenAI.
type ScriptedModel struct {
	mu       sync.Mutex
	script   []func(ctx context.Context, req plugin.ModelRequest) (plugin.ModelResponse, error)
	fallback func(ctx context.Context, req plugin.ModelRequest) (plugin.ModelResponse, error)
	requests []plugin.ModelRequest
}

var _ plugin.Model = (*ScriptedModel)(nil)

// ErrScriptEmpty is what a ScriptedModel with no answer left and no
// default returns.
var ErrScriptEmpty = errors.New("scripted model: script is empty")

// NewScriptedModel returns a model with an empty script.
func NewScriptedModel() *ScriptedModel { return &ScriptedModel{} }

// Then appends an answer computed by fn.
func (m *ScriptedModel) Then(fn func(ctx context.Context, req plugin.ModelRequest) (plugin.ModelResponse, error)) *ScriptedModel {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.script = append(m.script, fn)
	return m
}

// Reply appends a plain text answer.
func (m *ScriptedModel) Reply(text string) *ScriptedModel {
	return m.Then(func(context.Context, plugin.ModelRequest) (plugin.ModelResponse, error) {
		return plugin.ModelResponse{Text: text, Model: "scripted", Usage: plugin.Usage{PromptTokens: 100, CompletionTokens: 20}}, nil
	})
}

// Decide appends an iteration decision.
func (m *ScriptedModel) Decide(action string, params any, progress int, status string) *ScriptedModel {
	return m.Reply(DecisionJSON(action, params, progress, status))
}

// Default sets the answer used when the script is empty.
func (m *ScriptedModel) Default(fn func(ctx context.Context, req plugin.ModelRequest) (plugin.ModelResponse, error)) *ScriptedModel {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fallback = fn
	return m
}

// Generate implements plugin.Model.
func (m *ScriptedModel) Generate(ctx context.Context, req plugin.ModelRequest) (plugin.ModelResponse, error) {
	m.mu.Lock()
	m.requests = append(m.requests, req)
	var fn func(context.Context, plugin.ModelRequest) (plugin.ModelResponse, error)
	if len(m.script) > 0 {
		fn, m.script = m.script[0], m.script[1:]
	} else {
		fn = m.fallback
	}
	m.mu.Unlock()
	if fn == nil {
		return plugin.ModelResponse{}, ErrScriptEmpty
	}
	return fn(ctx, req)
}

// Requests returns the requests seen so far.
func (m *ScriptedModel) Requests() []plugin.ModelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]plugin.ModelRequest(nil), m.requests...)
}

// DecisionJSON renders an iteration decision as a model would send it.
func DecisionJSON(action string, params any, progress int, status string) string {
	if params == nil {
		params = map[string]any{}
	}
	raw, err := json.Marshal(map[string]any{
		"thought": "scripted", "action": action, "params": params,
		"progress": progress, "status": status, "summary": "scripted " + status,
	})
	if err != nil {
		panic(err)
	}
	return string(raw)
}
