package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
	k := start(t, mcp.Options{StartTimeout: 10 * time.Second, Servers: []mcp.Server{
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

// TestStdioServerSeesOnlyItsEnvironment: a stdio server has PATH, HOME and
// its own env; no variable of Taskloom's process reaches it.
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
	k := start(t, mcp.Options{Servers: []mcp.Server{{
		Name: "local", Command: os.Args[0],
		Env: map[string]string{roleVar: "stdio-server", "LOCAL_KEY": "its own key"},
	}}})
	if got, want := k.tools("local."), []string{"local.env", "local.exit", "local.pid"}; !slices.Equal(got, want) {
		t.Fatalf("tools = %q, want %q", got, want)
	}
	res, err := k.call(context.Background(), "local.env", `{}`)
	if err != nil || !res.Success {
		t.Fatalf("local.env = %+v, %v", res, err)
	}
	got := map[string]string{}
	for _, kv := range strings.Split(res.Text, "\n") {
		name, value, _ := strings.Cut(kv, "=")
		got[name] = value
	}
	want := map[string]string{"PATH": os.Getenv("PATH"), "HOME": "/home/taskloom-test", roleVar: "stdio-server", "LOCAL_KEY": "its own key"}
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

// TestStopEndsStdioServers: after the runtime stops, the server's
// process is gone and its tools with it.
func TestStopEndsStdioServers(t *testing.T) {
	t.Parallel()
	k := start(t, mcp.Options{Servers: []mcp.Server{{Name: "local", Command: os.Args[0], Env: map[string]string{roleVar: "stdio-server"}}}})
	res, err := k.call(context.Background(), "local.pid", `{}`)
	pid, perr := strconv.Atoi(res.Text)
	if err != nil || perr != nil {
		t.Fatalf("local.pid = %+v, %v", res, err)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the server (pid %d) is not running before stop: %v", pid, err)
	}
	if err := k.rt.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the server (pid %d) after stop: kill 0 = %v, want no such process", pid, err)
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
	k := start(t, mcp.Options{Servers: []mcp.Server{{Name: "local", Command: os.Args[0], Env: map[string]string{roleVar: "stdio-server"}}}})
	k.waitTools("local.", "local.env", "local.exit", "local.pid")
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

// TestStdioServerCannotReadTaskloomsProcess: a stdio server runs as
// Taskloom's user, and Taskloom's /proc/PID/environ holds the environment
// it was started with — its tokens and keys — which serverEnv keeps from
// the server; once a stdio server has started, that file is closed to it.
// The control first shows that the same read, on this machine, reaches
// the environment while the process is dumpable. As root (whose
// capabilities read any process's environment: a Taskloom run as root has
// no secret from its servers), the test runs itself as nobody.
func TestStdioServerCannotReadTaskloomsProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/PID/environ is Linux's")
	}
	if os.Geteuid() == 0 {
		asNobody(t, "TestStdioServerCannotReadTaskloomsProcess")
		return
	}
	// The file holds the environment the process was started with.
	self, err := os.ReadFile("/proc/self/environ")
	if err != nil || len(self) == 0 {
		t.Fatalf("/proc/self/environ: %v, %d bytes", err, len(self))
	}
	secret, _, _ := strings.Cut(string(self), "\x00")
	dumpable := func(on uintptr) {
		if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, on, 0); errno != 0 {
			t.Fatal(errno)
		}
	}
	dumpable(1)
	t.Cleanup(func() { dumpable(1) })

	control := exec.Command(os.Args[0])
	control.Env = []string{roleVar + "=read-parent-environ"}
	out, err := control.Output()
	if err != nil || !strings.Contains(string(out), secret) {
		t.Fatalf("control: a dumpable process's environment was not readable (%v): %.200q", err, out)
	}

	k := start(t, mcp.Options{Servers: []mcp.Server{{
		Name: "local", Command: os.Args[0],
		Env: map[string]string{roleVar: "stdio-server", "MCP_TEST_PARENT_ENVIRON": "1"},
	}}})
	res, err := k.call(context.Background(), "local.parent_environ", `{}`)
	if err != nil || !res.Success {
		t.Fatalf("local.parent_environ = %+v, %v", res, err)
	}
	if strings.Contains(res.Text, secret) || !strings.Contains(res.Text, "permission denied") {
		t.Fatalf("the server read Taskloom's /proc/PID/environ: %.200q", res.Text)
	}
}

// asNobody runs the test named test of this binary as the user nobody
// (65534), in an environment with one variable of Taskloom's, and fails
// unless it passes.
func asNobody(t *testing.T, test string) {
	dir, err := os.MkdirTemp("", "mcp-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "mcp.test")
	if err := os.WriteFile(path, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, "-test.run=^"+test+"$", "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = []string{"TASKLOOM_API_TOKEN=hunter2-api", "PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+test) {
		t.Fatalf("%s as nobody: %v\n%s", test, err, out)
	}
}
