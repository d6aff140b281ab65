package config_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/internal/config"
)

func TestMCPServers(t *testing.T) {
	t.Parallel()
	c, err := config.Load(env("TASKLOOM_MCP_SERVERS", `{
		"web": {"url": "https://mcp.example.com/mcp"},
		"files": {"command": "mcp-files", "args": ["/srv", "--ro"], "env": {"FILES_KEY": "k1"}, "network": true},
		"git_hub-2": {"command": "gh-mcp", "network": false}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []config.MCPServer{
		{Name: "files", Command: "mcp-files", Args: []string{"/srv", "--ro"}, Env: map[string]string{"FILES_KEY": "k1"}, Network: true},
		{Name: "git_hub-2", Command: "gh-mcp"},
		{Name: "web", URL: "https://mcp.example.com/mcp"},
	}
	if !reflect.DeepEqual(c.MCPServers, want) {
		t.Fatalf("MCPServers = %+v\nwant %+v", c.MCPServers, want)
	}
	for _, v := range []string{"", "  ", "{}"} {
		if c, err := config.Load(env("TASKLOOM_MCP_SERVERS", v)); err != nil || len(c.MCPServers) != 0 {
			t.Errorf("%q: servers %+v, err %v; want none", v, c.MCPServers, err)
		}
	}
}

// TestBadMCPServers: each mistake is one line naming the variable, and
// the value — whose env may hold a key — is not repeated.
func TestBadMCPServers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		value, want string
	}{
		{`{"files": {"command": "mcp-files"`, "want a JSON object from server name"},
		{`["mcp-files"]`, "want a JSON object from server name"},
		{`null`, "want a JSON object from server name"},
		{`{"files": {}}`, `server "files" has neither a command (stdio) nor a url (streamable HTTP)`},
		{`{"files": {"command": "  ", "env": {"K": "hunter2"}}}`, `server "files" has neither a command`},
		{`{"files": null}`, `server "files" has neither`},
		{`{"files": {"command": "mcp-files", "url": "https://x.example/mcp"}}`, `server "files" has both a command and a url; give one`},
		{`{"my.files": {"command": "mcp-files"}}`, `the server name "my.files" is not usable in tool names (my.files.<tool>)`},
		{`{"my files": {"command": "mcp-files"}}`, `the server name "my files" is not usable`},
		{`{"": {"command": "mcp-files"}}`, `the server name "" is not usable`},
		{`{"fíles": {"command": "mcp-files"}}`, `the server name "fíles" is not usable`},
		{`{"` + strings.Repeat("a", 65) + `": {"command": "x"}}`, "is not usable in tool names"},
		{`{"files": {"cmd": "mcp-files", "env": {"K": "hunter2"}}}`, `server "files": want an object with command, args, env and network, or url: unknown field "cmd"`},
		{`{"files": {"command": "mcp-files", "args": "/srv"}}`, `server "files": want an object with command, args, env and network, or url`},
		{`{"files": {"command": "mcp-files", "network": "yes"}}`, `server "files": want an object with command, args, env and network, or url`},
		{`{"web": {"url": "https://mcp.example.com", "network": true}}`, `server "web": network is for a command, which runs in the sandbox`},
		{`{"files": {"command": "mcp-files", "env": {"K": 1}}}`, `server "files": want an object`},
		{`{"files": "mcp-files"}`, `server "files": want an object`},
		{`{"files": {"command": "mcp-files", "env": {"A=B": "hunter2"}}}`, `server "files": "A=B" is not an environment variable name`},
		{`{"files": {"command": "mcp-files", "env": {"": "hunter2"}}}`, `server "files": "" is not an environment variable name`},
		{`{"web": {"url": "mcp.example.com"}}`, `server "web": the url is not an http:// or https:// URL`},
		{`{"web": {"url": "ftp://hunter2@mcp.example.com"}}`, `server "web": the url is not an http:// or https:// URL`},
		{`{"web": {"url": "https://mcp.example.com", "env": {"K": "hunter2"}}}`, `server "web": args and env are for a command, not a url`},
		{`{"a": {"command": "x"}, "b": {}, "c": {}}`, `server "b" has neither`}, // the first, in name order
	}
	for _, tt := range tests {
		_, err := config.Load(env("TASKLOOM_MCP_SERVERS", tt.value))
		var ce *config.Error
		if !errors.As(err, &ce) || ce.Var != "TASKLOOM_MCP_SERVERS" || !strings.HasPrefix(err.Error(), "TASKLOOM_MCP_SERVERS: ") ||
			!strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err = %v, want one line naming TASKLOOM_MCP_SERVERS and saying %q", tt.value, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the error repeats a secret: %v", tt.value, err)
		}
	}
}
