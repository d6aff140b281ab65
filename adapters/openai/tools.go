package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/taskloom/taskloom/plugin"
)

// maxToolName is the longest function name the API takes; a name must
// also match ^[a-zA-Z0-9_-]+$.
const maxToolName = 64

// toolNames maps the actions a request offers as tools to function names
// the API accepts, and back. Actions may hold characters it refuses (MCP
// tools are "<server>.<tool>"): a dot becomes "__", anything else outside
// [a-zA-Z0-9_-] an underscore, and a name that would clash with one
// already given gets a numeric suffix. The mapping is built afresh for
// each request from its tools, in their order, so a reply's calls map
// back exactly to the actions that request offered.
type toolNames struct {
	wire   map[string]string // action → function name
	action map[string]string // function name → action
}

func newToolNames(specs []plugin.ToolSpec) toolNames {
	n := toolNames{wire: map[string]string{}, action: map[string]string{}}
	for _, s := range specs {
		n.add(s.Name)
	}
	return n
}

// add gives action a function name, unless it has one.
func (n toolNames) add(action string) string {
	if w, ok := n.wire[action]; ok {
		return w
	}
	base := functionName(action)
	w := base
	for i := 2; ; i++ {
		if _, taken := n.action[w]; !taken {
			break
		}
		suffix := "_" + strconv.Itoa(i)
		w = base[:min(len(base), maxToolName-len(suffix))] + suffix
	}
	n.wire[action], n.action[w] = w, action
	return w
}

// toWire is the function name of action: its own when the request
// offers it, else one made the same way (a call of a tool no longer
// offered, in the history).
func (n toolNames) toWire(action string) string { return n.add(action) }

// toAction is the action a reply's function name calls; a name the
// request did not give is returned as is, for the caller to refuse.
func (n toolNames) toAction(wire string) string {
	if a, ok := n.action[wire]; ok {
		return a
	}
	return wire
}

// functionName is action with what the API refuses in a function name
// replaced, cut to maxToolName bytes.
func functionName(action string) string {
	var b strings.Builder
	for _, r := range action {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		case r == '.':
			b.WriteString("__")
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if s == "" {
		s = "tool"
	}
	return s[:min(len(s), maxToolName)]
}

// tools is req's tools and tool choice as go-openai sends them.
func (n toolNames) tools(req plugin.ModelRequest) ([]goopenai.Tool, any) {
	if len(req.Tools) == 0 {
		return nil, nil
	}
	out := make([]goopenai.Tool, len(req.Tools))
	for i, s := range req.Tools {
		params := json.RawMessage(s.Parameters)
		if len(strings.TrimSpace(string(params))) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out[i] = goopenai.Tool{Type: goopenai.ToolTypeFunction, Function: &goopenai.FunctionDefinition{
			Name: n.toWire(s.Name), Description: s.Description, Parameters: params,
		}}
	}
	var choice any
	switch req.ToolChoice {
	case "":
	case "auto", "none", "required":
		choice = req.ToolChoice
	default:
		choice = goopenai.ToolChoice{Type: goopenai.ToolTypeFunction, Function: goopenai.ToolFunction{Name: n.toWire(req.ToolChoice)}}
	}
	return out, choice
}

// message is msg as go-openai sends it, its tool calls named as the API
// takes them.
func (n toolNames) message(msg plugin.ChatMessage) goopenai.ChatCompletionMessage {
	out := goopenai.ChatCompletionMessage{Role: msg.Role, Content: msg.Content, ToolCallID: msg.ToolCallID}
	for _, c := range msg.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, goopenai.ToolCall{ID: c.ID, Type: goopenai.ToolTypeFunction,
			Function: goopenai.FunctionCall{Name: n.toWire(c.Name), Arguments: c.Arguments}})
	}
	return out
}

// calls is a reply's tool calls, named by the actions they call.
func (n toolNames) calls(in []goopenai.ToolCall) []plugin.ToolCall {
	var out []plugin.ToolCall
	for _, c := range in {
		if c.Type != "" && c.Type != goopenai.ToolTypeFunction {
			continue // not a function: nothing here could run it
		}
		out = append(out, plugin.ToolCall{ID: c.ID, Name: n.toAction(c.Function.Name), Arguments: c.Function.Arguments})
	}
	return out
}

// toolsRefusedSigns are what servers say when a model cannot call tools:
// Ollama ("<model> does not support tools"), OpenAI ("'tools' is not
// supported with this model"), vLLM started without tool parsing ("auto"
// tool choice requires --enable-auto-tool-choice …) and llama.cpp
// without a chat template that has them ("tools param requires --jinja").
var toolsRefusedSigns = []string{
	"does not support tools", "does not support tool", "not support tool calling", "not support function calling",
	"'tools' is not supported", "tools is not supported", "tool calling is not supported", "function calling is not supported",
	"enable-auto-tool-choice", "tools param requires",
}

// toolsRefused reports whether err is the server refusing a request for
// offering tools to a model that cannot call them: a 4xx whose param is
// tools or tool_choice, or whose message says so — also a 500 that says
// so, since llama.cpp answers that way and it is no passing failure.
func toolsRefused(err error) bool {
	var text, param string
	var status int
	var apiErr *goopenai.APIError
	var reqErr *goopenai.RequestError
	switch {
	case errors.As(err, &apiErr):
		status, text = apiErr.HTTPStatusCode, apiErr.Message
		if apiErr.Param != nil {
			param = *apiErr.Param
		}
	case errors.As(err, &reqErr):
		status, text = reqErr.HTTPStatusCode, string(reqErr.Body)
	default:
		return false
	}
	if status < http.StatusBadRequest || (status >= 500 && status != http.StatusInternalServerError) {
		return false
	}
	if status < 500 && (param == "tools" || param == "tool_choice") {
		return true
	}
	text = strings.ToLower(text)
	for _, s := range toolsRefusedSigns {
		if strings.Contains(text, s) {
			return true
		}
	}
	return false
}

// withToolsUnsupported puts plugin.ErrToolsUnsupported in the chain of
// fail, a call refused by toolsRefused. A 500 saying so is no outage: it
// becomes permanent.
func withToolsUnsupported(fail *plugin.ModelError) *plugin.ModelError {
	var e *Error
	if errors.As(fail, &e) {
		e.Err = fmt.Errorf("%w: %w", plugin.ErrToolsUnsupported, e.Err)
	}
	fail.Class = plugin.ModelPermanent
	return fail
}

// generateWithTools sends req, which offers tools, as one chat completion
// (with no response_format: a reply either calls tools or answers in
// text) and names the reply's calls by their actions. A refusal because
// the model cannot call tools has plugin.ErrToolsUnsupported in its
// chain.
func (m *Model) generateWithTools(ctx context.Context, req plugin.ModelRequest) (plugin.ModelResponse, error) {
	req.Schema = nil
	names := newToolNames(req.Tools)
	resp, err := m.complete(ctx, m.request(req, withJSONSchema))
	if err != nil {
		var fail *plugin.ModelError
		if errors.As(err, &fail) && toolsRefused(err) {
			m.log.LogAttrs(ctx, slog.LevelWarn, "openai: the model does not support tool calling",
				slog.String("model", m.model), slog.String("error", detail(err)))
			return resp, withToolsUnsupported(fail)
		}
		return resp, err
	}
	for i, c := range resp.ToolCalls {
		resp.ToolCalls[i].Name = names.toAction(c.Name)
	}
	return resp, nil
}
