package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/app"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/plugin"
)

// TestServeWiresMCPServers: with TASKLOOM_MCP_SERVERS, a task's model sees
// a server's tool as <server>.<tool> and calling it puts the tool's text
// in the step; a server that cannot start is one log line and the rest
// runs.
func TestServeWiresMCPServers(t *testing.T) {
	t.Parallel()
	server := sdk.NewServer(&sdk.Implementation{Name: "notes", Version: "1"}, nil)
	type in struct {
		Topic string `json:"topic"`
	}
	sdk.AddTool(server, &sdk.Tool{Name: "lookup", Description: "Looks up a note."}, func(_ context.Context, _ *sdk.CallToolRequest, args in) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "note about " + args.Topic}}}, nil, nil
	})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, nil))
	defer ts.Close()

	fake := testkit.NewOpenAI(t)
	fake.Reply(testkit.DecisionJSON("notes.lookup", map[string]string{"topic": "otters"}, 60, "continue"))
	fake.Reply(testkit.DecisionJSON("", nil, 100, "done"))
	servers := fmt.Sprintf(`{"notes": {"url": %q}, "missing": {"command": "/nonexistent/mcp-server"}}`, ts.URL)
	// A stdio server runs in the sandbox, which start-up checks: bwrap is
	// looked for on PATH.
	if _, err := actions.LookBwrap(os.Getenv("PATH")); err != nil {
		t.Skipf("cannot test stdio MCP servers, which run in the sandbox: %v", err)
	}
	srv := launch(t, map[string]string{"TASKLOOM_DATA_DIR": t.TempDir(), "TASKLOOM_HTTP_ADDR": "127.0.0.1:0",
		"OPENAI_BASE_URL": fake.URL(), "TASKLOOM_MCP_SERVERS": servers, "PATH": os.Getenv("PATH")})
	defer func() {
		srv.stop()
		if code := srv.wait(t, app.ShutdownTimeout+5*time.Second); code != 0 {
			t.Errorf("exit %d:\n%s", code, srv.stderr.String())
		}
	}()
	resp, err := http.Post(srv.base+"/api/tasks", "application/json", strings.NewReader(`{"goal":"Find the note about otters"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create = %d", resp.StatusCode)
	}
	var task struct {
		Status string `json:"status"`
		Steps  []struct {
			Action  string `json:"action"`
			Result  string `json:"result"`
			Success bool   `json:"success"`
		} `json:"steps"`
	}
	for deadline := time.Now().Add(30 * time.Second); task.Status != "completed"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("task = %+v after 30s:\n%s", task, srv.stderr.String())
		}
		resp, err := http.Get(srv.base + "/api/tasks/1")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&task)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(task.Steps) < 1 || task.Steps[0].Action != "notes.lookup" || !task.Steps[0].Success || task.Steps[0].Result != "note about otters" {
		t.Fatalf("steps = %+v; want notes.lookup's text", task.Steps)
	}
	if reqs := fake.Requests(); len(reqs) == 0 || !strings.Contains(string(reqs[0].Raw), "notes.lookup") || !strings.Contains(string(reqs[0].Raw), "Looks up a note.") {
		t.Errorf("the first iteration's prompt does not offer notes.lookup")
	}
	logs := srv.stderr.String()
	if n := strings.Count(logs, "mcp_server=missing"); n != 1 || !strings.Contains(logs, "MCP server did not start; its tools are absent") ||
		!strings.Contains(logs, "command /nonexistent/mcp-server: stat /nonexistent/mcp-server: no such file or directory") {
		t.Errorf("%d log lines name the missing server; want 1:\n%s", n, logs)
	}
}

// TestStdioMCPServersWithoutASandboxStopStartUp: stdio MCP servers run
// only in the sandbox; where it cannot be made, start-up stops with one
// line naming TASKLOOM_MCP_SERVERS and the reason. A url server needs no
// sandbox.
func TestStdioMCPServersWithoutASandboxStopStartUp(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"", filepath.Join(t.TempDir(), "nothing-here")} {
		code, stderr := refusedServe(t, map[string]string{"TASKLOOM_DATA_DIR": t.TempDir(), "TASKLOOM_HTTP_ADDR": "127.0.0.1:0", "PATH": path,
			"TASKLOOM_MCP_SERVERS": `{"files": {"command": "mcp-files"}, "web": {"url": "https://mcp.example.com/mcp"}}`})
		want := "taskloom: TASKLOOM_MCP_SERVERS: the sandbox MCP stdio servers run in cannot be made: bwrap is not installed"
		if code != app.ExitUsage || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, want) {
			t.Errorf("PATH=%q: exit %d, stderr %q; want exit %d and one line %q…", path, code, stderr, app.ExitUsage, want)
		}
	}
	srv := launch(t, map[string]string{"TASKLOOM_DATA_DIR": t.TempDir(), "TASKLOOM_HTTP_ADDR": "127.0.0.1:0",
		"TASKLOOM_MCP_SERVERS": `{"web": {"url": "http://127.0.0.1:1/mcp"}}`})
	srv.stop()
	if code := srv.wait(t, app.ShutdownTimeout+5*time.Second); code != app.ExitOK {
		t.Errorf("a url server without bwrap: exit %d\n%s", code, srv.stderr.String())
	}
}

// TestCoreRunsStdioMCPServersInTheSandbox: NewCore gives stdio MCP
// servers the sandbox, with the egress proxy only for a server whose
// configuration says "network": true — also when run_command is off.
func TestCoreRunsStdioMCPServersInTheSandbox(t *testing.T) {
	if _, err := actions.LookBwrap(os.Getenv("PATH")); err != nil {
		t.Skipf("cannot test stdio MCP servers, which run in the sandbox: %v", err)
	}
	t.Setenv("TASKLOOM_API_TOKEN", "hunter2-api-token-hunter2-api-token")
	servers, _ := json.Marshal(map[string]any{
		"offline": map[string]any{"command": os.Args[0], "env": map[string]string{mcpRoleVar: "env-server"}},
		"online":  map[string]any{"command": os.Args[0], "env": map[string]string{mcpRoleVar: "env-server"}, "network": true},
	})
	vars := map[string]string{"TASKLOOM_DATA_DIR": t.TempDir(), "TASKLOOM_MCP_SERVERS": string(servers)}
	core := startCore(t, vars)
	for server, proxied := range map[string]bool{"offline": false, "online": true} {
		res, err := core.Runtime.RunAction(context.Background(), server+".env", &plugin.Call{Task: &domain.Task{Number: 1}, Params: json.RawMessage(`{}`)})
		if err != nil || !res.Success {
			t.Fatalf("%s.env = %+v, %v", server, res, err)
		}
		if strings.Contains(res.Text, "HTTPS_PROXY=http://127.0.0.1:3128") != proxied || !strings.Contains(res.Text, "HOME=/work") || strings.Contains(res.Text, "hunter2") {
			t.Errorf("%s's environment: %q; want the sandbox's, a proxy: %v", server, res.Text, proxied)
		}
	}
}

// TestBadMCPConfigurationIsOneLine: a bad TASKLOOM_MCP_SERVERS stops
// start-up with one line naming it.
func TestBadMCPConfigurationIsOneLine(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ value, want string }{
		{`{"files": {}}`, `TASKLOOM_MCP_SERVERS: server "files" has neither a command`},
		{`{"files": `, "TASKLOOM_MCP_SERVERS: want a JSON object"},
		{`{"my.files": {"command": "mcp-files"}}`, `TASKLOOM_MCP_SERVERS: the server name "my.files" is not usable`},
	} {
		code, stderr := refusedServe(t, map[string]string{"TASKLOOM_DATA_DIR": t.TempDir(), "TASKLOOM_HTTP_ADDR": "127.0.0.1:0", "TASKLOOM_MCP_SERVERS": tt.value})
		if code != app.ExitUsage || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and one line saying %q", tt.value, code, stderr, app.ExitUsage, tt.want)
		}
	}
}

// TestApprovalOfAnUnknownMCPServerStopsStartUp: TASKLOOM_APPROVE_TOOLS
// naming server.tool for a server TASKLOOM_MCP_SERVERS does not have is a
// typo that would let the tool it meant run unasked: serve refuses it.
func TestApprovalOfAnUnknownMCPServerStopsStartUp(t *testing.T) {
	t.Parallel()
	for _, servers := range []string{"", `{"file": {"url": "http://127.0.0.1:1/mcp"}}`} {
		code, stderr := refusedServe(t, map[string]string{"TASKLOOM_DATA_DIR": t.TempDir(), "TASKLOOM_HTTP_ADDR": "127.0.0.1:0",
			"TASKLOOM_MCP_SERVERS": servers, "TASKLOOM_APPROVE_TOOLS": "run_command,files.delete"})
		if code == app.ExitOK || !strings.Contains(stderr, `taskloom: TASKLOOM_APPROVE_TOOLS="run_command,files.delete": "files.delete" names no MCP server of TASKLOOM_MCP_SERVERS`) {
			t.Errorf("servers %s: exit %d, stderr:\n%s", servers, code, stderr)
		}
	}
}

// refusedServe runs `taskloom serve` with env, which is expected to refuse
// to start; one that starts anyway is stopped after a while rather than
// left running.
func refusedServe(t *testing.T, env map[string]string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stdout, stderr syncBuffer
	code := app.Main(ctx, app.Options{Getenv: envOf(env), Stdout: &stdout, Stderr: &stderr})
	return code, stderr.String()
}

// TestApprovalOfABuiltInTool: TASKLOOM_APPROVE_TOOLS may name any built-in
// tool — they are checked against the plugins' actions before the runtime
// has added them — and a name that is no tool is refused.
func TestApprovalOfABuiltInTool(t *testing.T) {
	t.Parallel()
	s := launch(t, map[string]string{"TASKLOOM_DATA_DIR": t.TempDir(), "TASKLOOM_HTTP_ADDR": "127.0.0.1:0",
		"TASKLOOM_APPROVE_TOOLS": "http_get,write_file"})
	s.stop()
	if code := s.wait(t, 20*time.Second); code != app.ExitOK {
		t.Fatalf("TASKLOOM_APPROVE_TOOLS=http_get,write_file: exit %d\n%s", code, s.stderr.String())
	}
	code, stderr := refusedServe(t, map[string]string{"TASKLOOM_DATA_DIR": t.TempDir(), "TASKLOOM_HTTP_ADDR": "127.0.0.1:0",
		"TASKLOOM_APPROVE_TOOLS": "htp_get"})
	if code == app.ExitOK || !strings.Contains(stderr, `"htp_get" is not a tool tasks can use; they are `) {
		t.Errorf("TASKLOOM_APPROVE_TOOLS=htp_get: exit %d, stderr:\n%s", code, stderr)
	}
}
