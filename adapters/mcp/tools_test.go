package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/taskloom/taskloom/adapters/mcp"
	"github.com/taskloom/taskloom/plugin"
)

// TestToolsOfAServer: a server's tools are actions <server>.<tool> with
// their schemas; a call's text content is the result, and isError fails
// it with the text.
func TestToolsOfAServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var calls atomic.Int32
	k := start(t, mcp.Options{Servers: []mcp.Server{{Name: "web", URL: httpServer(t, webServer(&calls))}}})
	if got, want := k.tools("web."), []string{"web.echo", "web.fail", "web.mixed"}; !slices.Equal(got, want) {
		t.Fatalf("tools = %q, want %q", got, want)
	}
	a, _ := k.rt.Action("web.echo")
	info := a.Info()
	var schema struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Type        string `json:"type"`
			Description string `json:"description"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(info.Parameters, &schema); err != nil {
		t.Fatalf("parameters %s: %v", info.Parameters, err)
	}
	if info.Description != "Echoes a message." || schema.Type != "object" || schema.Properties["message"].Type != "string" ||
		schema.Properties["message"].Description != "the text to echo" || !slices.Equal(schema.Required, []string{"message"}) {
		t.Fatalf("web.echo = %q %s; want the tool's description and input schema", info.Description, info.Parameters)
	}

	res, err := k.call(ctx, "web.echo", `{"message":"hi there"}`)
	if err != nil || !res.Success || res.Text != "echo: hi there" {
		t.Fatalf("web.echo = %+v, %v; want the echoed text", res, err)
	}
	res, err = k.call(ctx, "web.fail", `{}`)
	if err != nil || res.Success || res.Error != "disk full\non /srv" || res.Text != "disk full\non /srv" {
		t.Fatalf("web.fail = %+v, %v; want a failure with the tool's text", res, err)
	}
	res, err = k.call(ctx, "web.mixed", ``)
	if err != nil || !res.Success || res.Text != "before\n[an image, image/png, 7 bytes]\nafter" {
		t.Fatalf("web.mixed = %+v, %v", res, err)
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("the server answered %d calls, want 3", n)
	}

	// Refused before the server is asked: a chat message (which would
	// skip tool approval) and parameters that are not an object.
	res, err = k.rt.RunAction(ctx, "web.echo", &plugin.Call{Message: &plugin.Message{Text: "hi"}, Params: json.RawMessage(`{"message":"x"}`)})
	if err != nil || res.Success || !strings.Contains(res.Error, "tool for agent tasks") {
		t.Fatalf("a chat call = %+v, %v; want it refused", res, err)
	}
	res, err = k.call(ctx, "web.echo", `["x"]`)
	if err != nil || res.Success || !strings.Contains(res.Error, "not a JSON object") {
		t.Fatalf("array parameters = %+v, %v; want them refused", res, err)
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("refused calls reached the server (%d calls)", n)
	}
}

// TestToolListChanged: when the server says its tools changed, the
// runtime's actions follow.
func TestToolListChanged(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	s := webServer(&calls)
	k := start(t, mcp.Options{Servers: []mcp.Server{{Name: "web", URL: httpServer(t, s)}}})
	k.waitTools("web.", "web.echo", "web.fail", "web.mixed")

	s.AddTool(&sdk.Tool{Name: "later", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return text("added while running"), nil
	})
	k.waitTools("web.", "web.echo", "web.fail", "web.later", "web.mixed")
	if res, err := k.call(context.Background(), "web.later", `{}`); err != nil || res.Text != "added while running" {
		t.Fatalf("web.later = %+v, %v", res, err)
	}
	s.RemoveTools("echo")
	k.waitTools("web.", "web.fail", "web.later", "web.mixed")
	if _, err := k.call(context.Background(), "web.echo", `{"message":"x"}`); !errors.Is(err, plugin.ErrUnknownAction) {
		t.Fatalf("a removed tool: err = %v, want ErrUnknownAction", err)
	}
}

// TestServersThatFailToStartAreAbsent: each server that cannot be started,
// reached or listed is one error line naming it; the others' tools work.
func TestServersThatFailToStartAreAbsent(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	k := start(t, mcp.Options{StartTimeout: 10 * time.Second, Sandbox: sandbox(t), Servers: []mcp.Server{
		{Name: "missing", Command: "/nonexistent/mcp-server"},
		{Name: "crashing", Command: "sh", Args: []string{"-c", "echo cannot open the database >&2; exit 7"}},
		{Name: "gone", URL: gone.URL + "/mcp"},
		{Name: "web", URL: httpServer(t, webServer(&calls))},
	}})
	if got, want := k.tools(""), []string{"web.echo", "web.fail", "web.mixed"}; !slices.Equal(got, want) {
		t.Fatalf("tools = %q, want the good server's only", got)
	}
	if res, err := k.call(context.Background(), "web.echo", `{"message":"still here"}`); err != nil || res.Text != "echo: still here" {
		t.Fatalf("web.echo = %+v, %v", res, err)
	}
	var errs []string
	for _, l := range k.log.lines() {
		if strings.Contains(l, "level=ERROR") {
			errs = append(errs, l)
		}
	}
	t.Logf("the log's error lines:\n%s", strings.Join(errs, "\n"))
	if len(errs) != 3 {
		t.Fatalf("error lines = %q; want one for each server that failed", errs)
	}
	for _, want := range []string{"mcp_server=missing", "mcp_server=crashing", "mcp_server=gone"} {
		n := 0
		for _, l := range errs {
			if strings.Contains(l, want) {
				n++
				if !strings.Contains(l, "MCP server did not start; its tools are absent") {
					t.Errorf("%s", l)
				}
			}
		}
		if n != 1 {
			t.Errorf("%d lines for %s in %q, want 1", n, want, errs)
		}
	}
	if !slices.ContainsFunc(errs, func(l string) bool {
		return strings.Contains(l, "mcp_server=crashing") && strings.Contains(l, "cannot open the database")
	}) {
		t.Errorf("the crashing server's line does not say what it wrote to stderr: %q", errs)
	}
}

// sandboxPATH is the PATH the sandbox gives a command.
const sandboxPATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// TestStdioServerSeesOnlyItsEnvironment: a stdio server runs in the
// sandbox with the sandbox's PATH, HOME and LANG and its own env; no
// variable of Taskloom's process reaches it.
func TestStdioServerSeesOnlyItsEnvironment(t *testing.T) {
	for k, v := range map[string]string{
		"TASKLOOM_API_TOKEN":   "hunter2-api",
		"OPENAI_API_KEY":       "hunter2-openai",
		"DATABASE_URL":         "postgres://u:hunter2@db/taskloom",
		"SOME_OTHER_VARIABLE":  "hunter2-other",
		"TASKLOOM_MCP_SERVERS": `{"x":{"command":"y"}}`,
	} {
		t.Setenv(k, v)
	}
	t.Setenv("HOME", "/home/taskloom-test")
	k := start(t, mcp.Options{Sandbox: sandbox(t), Servers: []mcp.Server{{
		Name: "local", Command: os.Args[0],
		Env: map[string]string{roleVar: "stdio-server", "LOCAL_KEY": "its own key"},
	}}})
	k.waitTools("local.", "local.alloc", "local.dial", "local.env", "local.exit", "local.flood", "local.get", "local.pid", "local.procs", "local.read", "local.spawn", "local.spin", "local.write")
	res, err := k.call(context.Background(), "local.env", `{}`)
	if err != nil || !res.Success {
		t.Fatalf("local.env = %+v, %v", res, err)
	}
	got := map[string]string{}
	for _, kv := range strings.Split(res.Text, "\n") {
		name, value, _ := strings.Cut(kv, "=")
		got[name] = value
	}
	// (bwrap sets PWD, where it starts the server.)
	want := map[string]string{"PATH": sandboxPATH, "HOME": "/work", "LANG": "C.UTF-8", "PWD": "/work", roleVar: "stdio-server", "LOCAL_KEY": "its own key"}
	if len(got) != len(want) {
		t.Errorf("the server's environment is %q; want exactly %q", res.Text, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("the server's %s = %q, want %q", k, got[k], v)
		}
	}
	if strings.Contains(res.Text, "hunter2") || strings.Contains(res.Text, "TASKLOOM_") {
		t.Errorf("a variable of Taskloom's reached the server: %q", res.Text)
	}
}

// hostProcesses are the host's processes whose command line holds
// marker, as pids.
func hostProcesses(t *testing.T, marker string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && strings.Contains(string(cmdline), marker) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestStopEndsStdioServers: after the runtime stops, the server's
// processes (bwrap's and the server's) are gone and its tools with them.
func TestStopEndsStdioServers(t *testing.T) {
	t.Parallel()
	marker := fmt.Sprintf("mcp-test-stop-%d", time.Now().UnixNano())
	k := start(t, mcp.Options{Sandbox: sandbox(t), Servers: []mcp.Server{{Name: "local", Command: os.Args[0], Args: []string{marker},
		Env: map[string]string{roleVar: "stdio-server"}}}})
	k.waitTools("local.", "local.alloc", "local.dial", "local.env", "local.exit", "local.flood", "local.get", "local.pid", "local.procs", "local.read", "local.spawn", "local.spin", "local.write")
	pids := hostProcesses(t, marker)
	if len(pids) < 2 {
		t.Fatalf("processes with %s before stop: %v; want bwrap's and the server's", marker, pids)
	}
	if err := k.rt.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		left := slices.DeleteFunc(slices.Clone(pids), func(pid int) bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) })
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server's processes %v after stop: %v still there", pids, left)
		}
	}
	if got := k.tools("local."); len(got) != 0 {
		t.Fatalf("tools after stop = %q, want none", got)
	}
}

// TestAServerThatEndsLosesItsTools: a stdio server that exits is logged
// and its tools removed; calling one then is an unknown action, not a
// hang.
func TestAServerThatEndsLosesItsTools(t *testing.T) {
	t.Parallel()
	k := start(t, mcp.Options{Sandbox: sandbox(t), Servers: []mcp.Server{{Name: "local", Command: os.Args[0], Env: map[string]string{roleVar: "stdio-server"}}}})
	k.waitTools("local.", "local.alloc", "local.dial", "local.env", "local.exit", "local.flood", "local.get", "local.pid", "local.procs", "local.read", "local.spawn", "local.spin", "local.write")
	if res, err := k.call(context.Background(), "local.exit", `{}`); err == nil && res.Success {
		t.Fatalf("local.exit = %+v; want the call to fail with the server gone", res)
	}
	k.waitTools("local.")
	if !slices.ContainsFunc(k.log.lines(), func(l string) bool {
		return strings.Contains(l, "MCP server ended; its tools are removed") && strings.Contains(l, "mcp_server=local") && strings.Contains(l, "exiting as asked")
	}) {
		t.Fatalf("no line says the server ended:\n%s", strings.Join(k.log.lines(), "\n"))
	}
}

// TestCallDeadlineAndContext: a call that the server does not answer ends
// at the call timeout, or sooner when the caller's context ends.
func TestCallDeadlineAndContext(t *testing.T) {
	t.Parallel()
	s := sdk.NewServer(&sdk.Implementation{Name: "slow", Version: "1"}, nil)
	release := make(chan struct{})
	defer close(release) // before the cleanups: closing a session or the server waits for its handlers
	s.AddTool(&sdk.Tool{Name: "wait", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		select { // the client's cancellation, if it arrives, or the test's end
		case <-ctx.Done():
		case <-release:
		}
		return text("too late"), nil
	})
	url := httpServer(t, s)
	k := start(t, mcp.Options{CallTimeout: 300 * time.Millisecond, Servers: []mcp.Server{{Name: "slow", URL: url}}})

	began := time.Now()
	_, err := k.call(context.Background(), "slow.wait", `{}`)
	if err == nil || !strings.Contains(err.Error(), "the MCP server slow did not answer within 300ms") {
		t.Fatalf("err = %v; want the call timed out", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("the timed-out call took %s", took)
	}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	k2 := start(t, mcp.Options{CallTimeout: time.Hour, Servers: []mcp.Server{{Name: "slow", URL: url}}})
	began = time.Now()
	_, err = k2.call(ctx, "slow.wait", `{}`)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v; want the caller's cancellation", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("the canceled call took %s", took)
	}
}
