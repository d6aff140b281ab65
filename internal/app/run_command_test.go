package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/app"
	"github.com/taskloom/taskloom/internal/config"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
)

// TASKLOOM_RUN_COMMAND=true where the sandbox cannot be made stops
// start-up with one line naming the variable and the reason.
func TestRunCommandWithoutASandboxStopsStartUp(t *testing.T) {
	t.Parallel()
	// A bwrap that fails as a real one does where user namespaces are
	// refused.
	fakeBin := t.TempDir()
	// Run as root, Taskloom starts bwrap as nobody, who must reach it.
	if err := os.Chmod(filepath.Dir(fakeBin), 0o711); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(fakeBin, "bwrap"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{"", "bwrap is not installed"},
		{filepath.Join(t.TempDir(), "nothing-here"), "bwrap is not installed"},
		{fakeBin, "bwrap: setting up uid map: Permission denied"},
	} {
		env := map[string]string{"TASKLOOM_DATA_DIR": t.TempDir(), "TASKLOOM_HTTP_ADDR": "127.0.0.1:0", "TASKLOOM_RUN_COMMAND": "true", "PATH": c.path}
		// Were the sandbox not checked, serve would run until this
		// deadline and exit 0.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var stdout, stderr syncBuffer
		code := app.Main(ctx, app.Options{Getenv: envOf(env), Stdout: &stdout, Stderr: &stderr})
		cancel()
		out := stderr.String()
		if code != app.ExitUsage || strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, "taskloom: TASKLOOM_RUN_COMMAND: ") || !strings.Contains(out, c.want) {
			t.Errorf("PATH=%q: exit %d, stderr %q; want exit %d and one line naming TASKLOOM_RUN_COMMAND and %q", c.path, code, out, app.ExitUsage, c.want)
		}
	}
}

func TestServeWithRunCommand(t *testing.T) {
	if _, err := actions.LookBwrap(os.Getenv("PATH")); err != nil {
		t.Skipf("cannot test run_command's sandbox: %v", err)
	}
	t.Parallel()
	startServe(t, map[string]string{"TASKLOOM_DATA_DIR": t.TempDir(), "TASKLOOM_HTTP_ADDR": "127.0.0.1:0", "TASKLOOM_RUN_COMMAND": "true", "PATH": os.Getenv("PATH")})
	// With the network, start-up starts the egress proxy and checks the
	// sandbox reaches its forwarder.
	startServe(t, map[string]string{"TASKLOOM_DATA_DIR": t.TempDir(), "TASKLOOM_HTTP_ADDR": "127.0.0.1:0", "TASKLOOM_RUN_COMMAND": "true",
		"TASKLOOM_RUN_COMMAND_NETWORK": "true", "TASKLOOM_RUN_COMMAND_MEMORY": "256MiB", "PATH": os.Getenv("PATH")})
}

// NewCore gives run_command a sandbox with the network
// TASKLOOM_RUN_COMMAND_NETWORK says: none, or only through the egress
// proxy, which refuses the host's loopback (where Taskloom's API is).
func TestCoreRunsCommandsInTheSandbox(t *testing.T) {
	if _, err := actions.LookBwrap(os.Getenv("PATH")); err != nil {
		t.Skipf("cannot test run_command's sandbox: %v", err)
	}
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	connect := fmt.Sprintf(`pwd; if bash -c 'exec 3<>/dev/tcp/127.0.0.1/%[1]d' 2>/dev/null; then echo online; else echo offline; fi; curl -sS -m 5 http://127.0.0.1:%[1]d/ 2>&1`, port)
	for _, network := range []string{"false", "true"} {
		vars := map[string]string{"TASKLOOM_DATA_DIR": t.TempDir(), "TASKLOOM_RUN_COMMAND": "true", "TASKLOOM_RUN_COMMAND_NETWORK": network}
		core := startCore(t, vars)
		params, _ := json.Marshal(map[string]string{"command": connect})
		res, err := core.Runtime.RunAction(context.Background(), "run_command", &plugin.Call{Task: &domain.Task{Number: 1}, Params: params,
			Files: domain.NewFileView(core.Runtime.Store(), 1)})
		want := map[string]string{
			"false": "/work\noffline\ncurl: (7) Failed to connect to 127.0.0.1 port " + fmt.Sprint(port),
			"true":  "/work\noffline\nTaskloom's egress proxy refused 127.0.0.1:" + fmt.Sprint(port) + ": 127.0.0.1 is not a public address",
		}[network]
		if err != nil || !strings.Contains(res.Text, want) {
			t.Errorf("TASKLOOM_RUN_COMMAND_NETWORK=%s: %+v, %v; want output with %q", network, res, err, want)
		}
	}
}

// Taskloom run as root with stdio MCP servers says so at start-up, in
// one warning line.
func TestRootWithMCPServersIsWarned(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		uid     int
		servers string
		warned  bool
	}{
		{0, `{"files": {"command": "mcp-files"}}`, true},
		{1000, `{"files": {"command": "mcp-files"}}`, false},
		{0, `{"web": {"url": "https://mcp.example.com/mcp"}}`, false},
		{0, ``, false},
	} {
		cfg, err := config.Load(func(k string) string {
			return map[string]string{"TASKLOOM_DATA_DIR": "x", "TASKLOOM_MCP_SERVERS": c.servers}[k]
		})
		if err != nil {
			t.Fatal(err)
		}
		var buf strings.Builder
		app.WarnRootMCP(cfg, slog.New(slog.NewTextHandler(&buf, nil)), c.uid)
		got := buf.String()
		if warned := strings.Contains(got, "level=WARN") && strings.Contains(got, "runs as root with stdio MCP servers"); warned != c.warned || strings.Count(got, "\n") > 1 {
			t.Errorf("uid %d, servers %q: logged %q; want a warning: %v", c.uid, c.servers, got, c.warned)
		}
	}
}

// TestSandboxWorstCaseIsLogged: start-up says how the sandbox's limits
// bind and how much memory all sandboxes together can hold, and warns,
// saying what to change, when that is more than the host's memory: an
// operator wants to learn it before the OOM killer does.
func TestSandboxWorstCaseIsLogged(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load(func(k string) string {
		return map[string]string{"TASKLOOM_DATA_DIR": "x", "TASKLOOM_RUN_COMMAND": "true", "TASKLOOM_WORKERS": "4"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	limits := actions.Limits{Memory: cfg.RunCommandMemory, Processes: cfg.RunCommandProcesses, FileSize: cfg.RunCommandFileSize,
		Disk: cfg.RunCommandDisk, CPU: cfg.RunCommandCPU}
	worst := 4 * limits.WorstCase(actions.CgroupLimits())
	for _, c := range []struct {
		host   int64
		warned bool
	}{
		{worst - 1, true},
		{worst, false},
		{0, false}, // unknown
	} {
		var buf strings.Builder
		app.LogSandboxWorstCase(cfg, slog.New(slog.NewTextHandler(&buf, nil)), limits, c.host)
		got := buf.String()
		if !strings.Contains(got, "worst_case=\""+actions.FormatBytes(worst)+"\"") || !strings.Contains(got, "sandboxes=4") {
			t.Errorf("host %d: logged %q; want the worst case of 4 sandboxes, %s", c.host, got, actions.FormatBytes(worst))
		}
		if warned := strings.Contains(got, "level=WARN") && strings.Contains(got, "more memory than the host has"); warned != c.warned {
			t.Errorf("host %d: logged %q; want a warning: %v", c.host, got, c.warned)
		}
	}
	if !actions.CgroupLimits() && worst != 4*(128*(512+64)<<20+256<<20) {
		t.Errorf("per process, the default limits' worst case for 4 sandboxes: %s; want 4 × (128 × (512 MiB + 64 MiB of stack) + 256 MiB)", actions.FormatBytes(worst))
	}
}

// TestProcessLimitFitsTheHost: without a cgroup, the default process
// limit is chosen so that all sandboxes together, process by process,
// fit in three quarters of the host's memory, from 32 (what runtimes
// need to start) to 128. An operator running the defaults wants one
// command unable to take the host, and its database, down.
func TestProcessLimitFitsTheHost(t *testing.T) {
	t.Parallel()
	l := actions.DefaultLimits() // 512 MiB + 64 MiB of stack a process, 256 MiB of disk
	for _, c := range []struct {
		n    int
		host int64
		want int
	}{
		{1, 24 << 30, 32},   // (18 GiB - 256 MiB) / 576 MiB = 31.5: the floor
		{1, 64 << 30, 84},   // (48 GiB - 256 MiB) / 576 MiB
		{1, 128 << 30, 128}, // the default, no more
		{2, 128 << 30, 84},
		{1, 0, 128}, // unknown memory: the default
		{0, 24 << 30, 128},
	} {
		if got := app.FitProcesses(l, c.n, c.host); got != c.want {
			t.Errorf("%d sandboxes on %s: %d processes; want %d", c.n, actions.FormatBytes(c.host), got, c.want)
		}
		if got := app.FitProcesses(l, c.n, c.host); c.n > 0 && c.host > 0 && got > 32 {
			l := l
			l.Processes = got
			if worst := int64(c.n) * l.WorstCase(false); worst > c.host/4*3 {
				t.Errorf("%d sandboxes on %s: %d processes hold %s; more than three quarters of the host", c.n, actions.FormatBytes(c.host), got, actions.FormatBytes(worst))
			}
		}
	}
}

// startCore builds and starts the core serve would from vars, with a
// scripted model and an SQLite store, until the test ends.
func startCore(t *testing.T, vars map[string]string) *app.Core {
	t.Helper()
	cfg, err := config.Load(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	core := app.NewCore(app.CoreOptions{Config: cfg, Store: teststore.SQLite(t), Model: testkit.NewScriptedModel(), Owner: "test"})
	if err := core.Runtime.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = core.Runtime.Stop(context.Background()) })
	return core
}
