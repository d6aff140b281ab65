package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/taskloom/taskloom/plugin"
)

// maxErrorText bounds the text of an isError result kept as the step's
// error; the whole text is the step's result.
const maxErrorText = 2000

// tool is one tool of an MCP server, as the action "<server>.<tool>".
type tool struct {
	conn *conn
	name string // the server's name for it
	info plugin.ActionInfo
}

var _ plugin.Action = (*tool)(nil)

// newTool makes the action for a listed tool, or says why its name cannot
// be an action's.
func newTool(c *conn, t *sdk.Tool) (*tool, error) {
	if err := toolName(t.Name); err != nil {
		return nil, err
	}
	params := json.RawMessage(`{"type":"object"}`)
	if t.InputSchema != nil {
		raw, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("its input schema: %w", err)
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil || obj == nil {
			return nil, errors.New("its input schema is not a JSON object")
		}
		params = raw
	}
	desc := strings.TrimSpace(t.Description)
	if desc == "" {
		desc = strings.TrimSpace(t.Title)
	}
	if desc == "" {
		desc = fmt.Sprintf("The tool %s of the MCP server %s.", t.Name, c.server.Name)
	}
	return &tool{conn: c, name: t.Name, info: plugin.ActionInfo{
		Name:        c.server.Name + "." + t.Name,
		Description: desc,
		Parameters:  params,
		Tool:        true,
		TaskOnly:    true,
	}}, nil
}

// toolName checks an MCP tool name as the specification has it: 1 to 128
// letters, digits, _, - and ., which TASKLOOM_APPROVE_TOOLS can name.
func toolName(name string) error {
	if name == "" || len(name) > 128 {
		return fmt.Errorf("the tool name %q is not 1 to 128 characters", name)
	}
	for _, c := range name {
		if c != '_' && c != '-' && c != '.' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return fmt.Errorf("the tool name %q has %q, which is not a letter, digit, _, - or .", name, c)
		}
	}
	return nil
}

// Info implements plugin.Action.
func (a *tool) Info() plugin.ActionInfo { return a.info }

// Handle calls the tool with the call's parameters as its arguments,
// within Options.CallTimeout.
func (a *tool) Handle(ctx context.Context, call *plugin.Call) (plugin.Result, error) {
	if call.Task == nil {
		return plugin.Result{Error: "That is a tool for agent tasks; it cannot be used from chat."}, nil
	}
	args := call.Params
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil {
		return plugin.Result{Error: "The parameters are not a JSON object: " + err.Error()}, nil
	}
	timeout := a.conn.t.opts.CallTimeout
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := a.conn.session.CallTool(callCtx, &sdk.CallToolParams{Name: a.name, Arguments: args})
	if err != nil {
		if ctx.Err() == nil && errors.Is(callCtx.Err(), context.DeadlineExceeded) {
			return plugin.Result{}, fmt.Errorf("the MCP server %s did not answer within %s", a.conn.server.Name, timeout)
		}
		return plugin.Result{}, fmt.Errorf("call the MCP server %s: %w", a.conn.server.Name, err)
	}
	text := resultText(res)
	if cut := a.conn.cutOff(); cut != "" {
		return plugin.Result{Text: text, Error: cut}, nil
	}
	if res.IsError {
		reason := clip(text, maxErrorText)
		if reason == "" {
			reason = "the tool reported an error and said nothing more"
		}
		return plugin.Result{Text: text, Error: reason}, nil
	}
	return plugin.Result{Success: true, Text: text}, nil
}

// resultText is a tool result as text: its text content joined by
// newlines, with a note for each other kind of content. A result with no
// content but structured content is that content's JSON.
func resultText(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[an image, %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio, %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[a link to the resource %s: %s]", c.Name, c.URI))
		case *sdk.EmbeddedResource:
			switch r := c.Resource; {
			case r == nil:
			case r.Text != "":
				parts = append(parts, r.Text)
			default:
				parts = append(parts, fmt.Sprintf("[the resource %s, %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob)))
			}
		default:
			parts = append(parts, fmt.Sprintf("[content of a kind Taskloom does not show: %T]", c))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if raw, err := json.Marshal(res.StructuredContent); err == nil {
			return string(raw)
		}
	}
	return strings.Join(parts, "\n")
}

// clip cuts s to at most n bytes on a character boundary.
func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
