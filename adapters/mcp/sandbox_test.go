package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/adapters/mcp"
)

// stdioTools are the tools of the test's stdio server, as actions of the
// server "local".
var stdioTools = []string{"local.alloc", "local.dial", "local.env", "local.exit", "local.flood", "local.get", "local.pid", "local.procs", "local.read", "local.spawn", "local.spin", "local.write"}

// callText calls a tool of the server and returns its text.
func (k *kit) callText(name string, params any) string {
	k.t.Helper()
	p, _ := json.Marshal(params)
	res, err := k.call(context.Background(), name, string(p))
	if err != nil {
		k.t.Fatalf("%s: %v; log:\n%s", name, err, strings.Join(k.log.lines(), "\n"))
	}
	return res.Text
}

// TestStdioServerIsSandboxed: a stdio server sees no process but those
// of its sandbox — none of Taskloom's, whose environment holds the
// secrets — cannot read a file only Taskloom can read, and has a
// writable HOME of its own.
func TestStdioServerIsSandboxed(t *testing.T) {
	t.Setenv("TASKLOOM_API_TOKEN", "hunter2-api")
	sb := sandbox(t)
	// A database-like file in a folder closed to others.
	private := t.TempDir()
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	secretFile := filepath.Join(private, "taskloom.db")
	if err := os.WriteFile(secretFile, []byte("SQLite format 3 hunter2-db"), 0o600); err != nil {
		t.Fatal(err)
	}
	k := start(t, mcp.Options{Sandbox: sb, Servers: []mcp.Server{{
		Name: "local", Command: os.Args[0],
		Env: map[string]string{roleVar: "stdio-server", "MCP_TEST_PARENT_ENVIRON": "1"},
	}}})
	k.waitTools("local.", slices.Sorted(slices.Values(append(slices.Clone(stdioTools), "local.parent_environ")))...)

	procs := k.callText("local.procs", nil)
	pid := k.callText("local.pid", nil)
	lines := strings.Split(strings.TrimSpace(procs), "\n")
	if lines[len(lines)-1] != "<nil>" {
		t.Fatalf("listing /proc: %q", procs)
	}
	lines = lines[:len(lines)-1]
	// bwrap's init (pid 1) and the server itself; nothing of the host's.
	if len(lines) > 2 || !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, pid+" ") }) {
		t.Errorf("the server (pid %s in its sandbox) sees these processes:\n%s\nwant only its own and the sandbox's init", pid, procs)
	}
	for _, p := range []string{"/proc/1/environ", fmt.Sprintf("/proc/%d/environ", os.Getpid()), secretFile} {
		if got := k.callText("local.read", pathIn{p}); strings.Contains(got, "hunter2") {
			t.Errorf("the server read %s: %q", p, got)
		}
	}
	if got := k.callText("local.parent_environ", nil); strings.Contains(got, "hunter2") || strings.Contains(got, "TASKLOOM_") {
		t.Errorf("the server read its parent's environment: %q", got)
	}
	if got := k.callText("local.read", pathIn{secretFile}); !strings.Contains(got, "no such file or directory") {
		t.Errorf("reading %s in the sandbox: %q; want it absent", secretFile, got)
	}
	if got := k.callText("local.write", nil); got != "kept in HOME <nil> <nil> in /work" {
		t.Errorf("writing in HOME: %q", got)
	}
}

// TestStdioServerLimits: the sandbox's memory and process limits stop a
// stdio server; the CPU time limit does not apply to it.
func TestStdioServerLimits(t *testing.T) {
	if raceEnabled {
		t.Skip("a server built with the race detector cannot start under a 192 MiB memory limit")
	}
	t.Parallel()
	sb := sandbox(t)
	sb.Limits = actions.Limits{Memory: 192 << 20, Processes: 32, CPU: time.Second}
	env := map[string]string{roleVar: "stdio-server"}
	// At debug level, for the servers' stderr.
	k := startLogging(t, mcp.Options{Sandbox: sb, Servers: []mcp.Server{
		{Name: "mem", Command: os.Args[0], Env: env},
		{Name: "procs", Command: os.Args[0], Env: env},
	}}, slog.LevelDebug)
	k.waitTools("mem.", "mem.alloc", "mem.dial", "mem.env", "mem.exit", "mem.flood", "mem.get", "mem.pid", "mem.procs", "mem.read", "mem.spawn", "mem.spin", "mem.write")

	// More than the second of CPU time run_command would allow, and
	// than the second after it when SIGKILL follows the SIGXCPU a Go
	// program ignores: a long-lived server is not held to it.
	if got := k.callText("mem.spin", countIn{2500}); got != "spun 2500ms" {
		t.Fatalf("spin: %q", got)
	}
	if got := k.callText("mem.alloc", countIn{40}); got != "allocated 40 MiB" {
		t.Fatalf("alloc 40 MiB: %q", got)
	}

	got := k.callText("procs.spawn", countIn{100})
	if !strings.Contains(got, "resource temporarily unavailable") {
		t.Errorf("spawning 100 processes under a limit of 32: %q; want the limit to refuse some", got)
	}
	if n, _ := strconv.Atoi(strings.Fields(strings.TrimPrefix(got, "started "))[0]); n >= 32 {
		t.Errorf("spawn: %q; want fewer than 32 started", got)
	}

	// Past the memory limit the Go runtime cannot get memory, and the
	// server dies saying so; its tools go with it.
	p, _ := json.Marshal(countIn{400})
	if res, err := k.call(context.Background(), "mem.alloc", string(p)); err == nil && res.Success {
		t.Fatalf("alloc 400 MiB under a limit of 192 MiB: %+v", res)
	}
	k.waitTools("mem.")
	if !slices.ContainsFunc(k.log.lines(), func(l string) bool {
		return strings.Contains(l, "MCP server stderr") && strings.Contains(l, "mcp_server=mem") && strings.Contains(l, "out of memory")
	}) {
		t.Fatalf("no line says the server ran out of memory:\n%s", strings.Join(k.log.lines(), "\n"))
	}
}

// TestStdioServerHolds: a stdio server, which lives for days, is held
// by the same sandbox as run_command however it takes memory or disk:
// shared anonymous memory, memfd, System V shared memory, a nested
// namespace, a tmpfs mounted in one. Each would take 1 GiB (or 50 MB of
// a tmpfs) past the limits without its refusal; a user wants one
// misbehaving server not to be able to take the host down with it.
func TestStdioServerHolds(t *testing.T) {
	t.Parallel()
	sb := sandbox(t)
	k := start(t, mcp.Options{Sandbox: sb, Servers: []mcp.Server{
		{Name: "local", Command: os.Args[0], Env: map[string]string{roleVar: "stdio-server", "MCP_TEST_ESCAPES": "1"}},
	}})
	k.waitTools("local.", slices.Sorted(slices.Values(append(slices.Clone(stdioTools), "local.escape")))...)
	for how, want := range map[string]string{
		"shared":    "cannot allocate memory",
		"memfd":     "cannot allocate memory",
		"sysv":      "cannot allocate memory",
		"namespace": "unshare: operation not permitted",
		"tmpfs":     "unshare failed: Operation not permitted",
	} {
		if _, err := os.Stat("/usr/bin/unshare"); err != nil && how == "tmpfs" {
			continue // util-linux's unshare is not installed
		}
		if got := k.callText("local.escape", pathIn{how}); strings.Contains(got, "escaped") || !strings.Contains(got, want) {
			t.Errorf("%s: %q; want it refused with %q", how, got, want)
		}
	}
	// The server still works, as before.
	if got := k.callText("local.alloc", countIn{40}); got != "allocated 40 MiB" {
		t.Errorf("alloc 40 MiB: %q", got)
	}
}

// resolver answers loopback.example with the loopback address and every
// other name with one public address, which the test's dial then
// connects to a local server instead: the allowed path through the
// proxy is proven without the internet.
type resolver struct{}

func (resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if host == "loopback.example" {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
}

// TestStdioServerNetwork: a stdio server has no network unless its
// configuration says so, and then only through the egress proxy, which
// refuses the host's loopback (where Taskloom's API is).
func TestStdioServerNetwork(t *testing.T) {
	t.Parallel()
	sb := sandbox(t)
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s", r.Host)
	}))
	defer host.Close()
	e := actions.NewEgress(actions.EgressOptions{Timeout: 3 * time.Second, Resolver: resolver{},
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, host.Listener.Addr().String())
		}})
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	sb.Egress = e
	k := start(t, mcp.Options{Sandbox: sb, Servers: []mcp.Server{
		{Name: "local", Command: os.Args[0], Env: map[string]string{roleVar: "stdio-server"}},
		{Name: "online", Command: os.Args[0], Env: map[string]string{roleVar: "stdio-server"}, Network: true},
	}})
	k.waitTools("local.", stdioTools...)
	addr := host.Listener.Addr().String()
	_, port, _ := net.SplitHostPort(addr)

	for _, server := range []string{"local", "online"} {
		if got := k.callText(server+".dial", pathIn{addr}); got == "connected" {
			t.Errorf("%s reached the host's %s directly", server, addr)
		}
	}
	if got := k.callText("local.env", nil); strings.Contains(strings.ToLower(got), "proxy") {
		t.Errorf("the server without network is offered a proxy: %q", got)
	}
	if got := k.callText("local.get", pathIn{"http://public.example/"}); strings.Contains(got, "hello") {
		t.Errorf("the server without network fetched a page: %q", got)
	}
	if got := k.callText("online.env", nil); !strings.Contains(got, "HTTP_PROXY=http://127.0.0.1:3128") {
		t.Errorf("the server with network has no proxy: %q", got)
	}
	if got := k.callText("online.get", pathIn{"http://public.example/"}); got != "200 hello public.example" {
		t.Errorf("the server with network, a public name through the proxy: %q", got)
	}
	// (Go's client itself never sends a loopback address to a proxy.)
	if got := k.callText("online.get", pathIn{"http://loopback.example:" + port + "/"}); !strings.Contains(got, "403 Taskloom's egress proxy refused") || !strings.Contains(got, "not a public address") {
		t.Errorf("the server with network, the host's loopback through the proxy: %q; want it refused", got)
	}
}

// TestStdioServerFloodIsCutOff: a server with network that floods the
// egress proxy with connections is cut off from the network, and every
// call of its tools says so from then on, so that the task sees why its
// server lost the network; Taskloom is not taken down with it.
func TestStdioServerFloodIsCutOff(t *testing.T) {
	t.Parallel()
	sb := sandbox(t)
	egressLog := &syncBuffer{}
	e := actions.NewEgress(actions.EgressOptions{Timeout: 3 * time.Second, Resolver: resolver{}, Logger: slog.New(slog.NewTextHandler(egressLog, nil))})
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	sb.Egress = e
	k := start(t, mcp.Options{Sandbox: sb, Servers: []mcp.Server{
		{Name: "online", Command: os.Args[0], Env: map[string]string{roleVar: "stdio-server"}, Network: true},
	}})
	k.waitTools("online.", slices.Sorted(slices.Values(strings.Split(strings.ReplaceAll(strings.Join(stdioTools, ","), "local.", "online."), ",")))...)
	const want = "The MCP server online was cut off from the network: it kept opening more than 64 connections at once to Taskloom's network proxy."
	for _, call := range []struct{ name, params string }{{"online.flood", `{"n":3000}`}, {"online.env", `{}`}} {
		res, err := k.call(context.Background(), call.name, call.params)
		if err != nil {
			t.Fatal(err)
		}
		if res.Success || res.Error != want {
			t.Errorf("%s: %v %q (%q); want %q", call.name, res.Success, res.Error, res.Text, want)
		}
	}
	if n := strings.Count(strings.Join(egressLog.lines(), "\n"), `msg="egress proxy cut a sandbox off" sandbox="MCP server online"`); n != 1 {
		t.Errorf("%d lines saying the server was cut off, want 1:\n%s", n, strings.Join(egressLog.lines(), "\n"))
	}
}
