package actions_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/taskloom/taskloom/actions"
)

// needBwrap skips a test only where bubblewrap is not installed; .ci/run
// installs it, so in CI these tests run.
func needBwrap(t *testing.T) {
	t.Helper()
	if _, err := actions.LookBwrap(os.Getenv("PATH")); err != nil {
		t.Skipf("cannot test the run_command sandbox: %v", err)
	}
}

func run(t *testing.T, s *actions.Sandbox, dir, command string) actions.Output {
	t.Helper()
	out, err := s.Run(context.Background(), dir, command, 7)
	if err != nil {
		t.Fatalf("%q: %v", command, err)
	}
	return out
}

func TestRunCommand(t *testing.T) {
	needBwrap(t)
	t.Parallel()
	k := newKit(t)
	ok, text := k.call("run_command", map[string]string{"command": "echo hi > out.txt && cat out.txt && pwd && echo task=$TASKLOOM_TASK"})
	if !ok || !strings.Contains(text, "hi\n/work\n") || !strings.Contains(text, fmt.Sprintf("task=%d", k.task.Number)) {
		t.Fatalf("%v %q", ok, text)
	}
	if data, err := os.ReadFile(filepath.Join(k.ws.Dir(k.task.Number), "out.txt")); err != nil || string(data) != "hi\n" {
		t.Fatalf("the file the command wrote is not in the workspace: %q, %v", data, err)
	}
	if ok, text := k.call("run_command", map[string]string{"command": "echo oops >&2; exit 3"}); ok || !strings.Contains(text, "status 3") {
		t.Fatalf("%v %q", ok, text)
	}
	for _, a := range actions.Tools(actions.ToolConfig{}) {
		if a.Info().Name == "run_command" {
			t.Fatal("run_command is registered without the operator enabling it")
		}
	}
}

// Not parallel: it sets the process environment, as Taskloom's own
// configuration would be.
func TestSandboxHidesTaskloomsSecrets(t *testing.T) {
	needBwrap(t)
	const canary = "s3cr3t-canary"
	secrets := map[string]string{
		"SLACK_BOT_TOKEN":      "xoxb-" + canary + "-slack",
		"SLACK_SIGNING_SECRET": canary + "-signing",
		"DISCORD_BOT_TOKEN":    "MTA." + canary + ".discord",
		"OPENAI_API_KEY":       "sk-" + canary + "-openai",
		"TASKLOOM_API_TOKEN":   canary + "-api",
		"DATABASE_URL":         "postgres://taskloom:" + canary + "-pw@db.internal:5432/taskloom",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	s := &actions.Sandbox{Timeout: 20 * time.Second}
	dir := t.TempDir()

	env := run(t, s, dir, "env")
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(env.Text), "\n") {
		name, value, _ := strings.Cut(line, "=")
		got[name] = value
	}
	want := map[string]string{"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/work", "LANG": "C.UTF-8", "TASKLOOM_TASK": "7"}
	for name, value := range want {
		if got[name] != value {
			t.Errorf("env: %s=%q, want %q", name, got[name], value)
		}
	}
	for name := range got {
		// The shell itself sets PWD (and some shells SHLVL and _).
		if _, ok := want[name]; !ok && !slices.Contains([]string{"PWD", "SHLVL", "_", "OLDPWD"}, name) {
			t.Errorf("env: %s is set in the sandbox", name)
		}
	}

	// bwrap is the sandbox's PID 1: its environment is readable from
	// inside, so it must be empty.
	if init := run(t, s, dir, "cat /proc/1/environ"); init.ExitCode != 0 || init.Text != "" {
		t.Errorf("/proc/1/environ: exit %d, %q; want an empty environment", init.ExitCode, init.Text)
	}

	procs := run(t, s, dir, "ls /proc")
	var pids []string
	for _, f := range strings.Fields(procs.Text) {
		if _, err := strconv.Atoi(f); err == nil {
			pids = append(pids, f)
		}
	}
	// bwrap's init, the shell, ls.
	if len(pids) == 0 || len(pids) > 3 {
		t.Errorf("the sandbox sees processes %v; want its own only", pids)
	}

	for _, cmd := range []string{
		"env",
		"cat /proc/self/environ",
		"for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do cat $f; echo; done",
		fmt.Sprintf("cat /proc/%d/environ /proc/%d/environ", os.Getpid(), os.Getppid()),
		"cat /proc/1/environ",
		"grep -r " + canary + " /etc /tmp /work 2>/dev/null | head",
	} {
		if out := run(t, s, dir, cmd); strings.Contains(out.Text, canary) {
			t.Errorf("%q shows a secret: %q", cmd, out.Text)
		}
	}
	// The parent's PID is only meaningful outside; a PID that small would
	// be the sandbox's own.
	if pid := os.Getpid(); pid > 3 {
		if out := run(t, s, dir, fmt.Sprintf("cat /proc/%d/environ", pid)); out.ExitCode == 0 {
			t.Errorf("Taskloom's /proc/%d/environ is readable in the sandbox: %q", pid, out.Text)
		}
	}
}

func TestSandboxHasNoNetworkUnlessAllowed(t *testing.T) {
	needBwrap(t)
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash (for /dev/tcp) is not installed")
	}
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	connect := fmt.Sprintf(`bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d && echo CONNECTED-OK'`, port)

	out := run(t, &actions.Sandbox{Timeout: 20 * time.Second}, t.TempDir(), connect)
	if strings.Contains(out.Text, "CONNECTED-OK") || out.ExitCode == 0 {
		t.Errorf("without TASKLOOM_RUN_COMMAND_NETWORK the sandbox reached the host's 127.0.0.1:%d: exit %d %q", port, out.ExitCode, out.Text)
	}
	select {
	case <-accepted:
		t.Error("the host's listener accepted a connection from the sandbox")
	default:
	}

	// With the network allowed the same command connects: the refusal
	// above is the namespace's doing.
	out = run(t, &actions.Sandbox{Timeout: 20 * time.Second, Network: true}, t.TempDir(), connect)
	if !strings.Contains(out.Text, "CONNECTED-OK") {
		t.Fatalf("with the network allowed: exit %d %q", out.ExitCode, out.Text)
	}
	select {
	case <-accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("with the network allowed, the host's listener saw no connection")
	}
}

func TestSandboxWritesOnlyItsDirectory(t *testing.T) {
	needBwrap(t)
	t.Parallel()
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	stray := fmt.Sprintf("taskloom-sandbox-test-%d", rand.Uint64())
	targets := []string{
		filepath.Join(outside, "evil"),
		"escape/evil",
		"/usr/" + stray,
		"/usr/local/" + stray,
		"/etc/" + stray,
		"/" + stray,
		"/bin/" + stray,
		"/proc/" + stray,
	}
	t.Cleanup(func() {
		for _, p := range targets {
			if filepath.IsAbs(p) && strings.Contains(p, stray) {
				os.Remove(p) // only there if the test failed
			}
		}
	})
	var script strings.Builder
	// With a capability left, the command could remount the system
	// read-write.
	script.WriteString("grep -E '^Cap(Prm|Eff|Bnd|Amb):' /proc/self/status | grep -v '0000000000000000$' && echo ESCAPED with capabilities\n")
	script.WriteString("mount -o remount,bind,rw /usr 2>/dev/null && echo ESCAPED remount\n")
	for _, p := range targets {
		fmt.Fprintf(&script, "if echo pwned > %q 2>/dev/null; then echo ESCAPED %s; fi\n", p, p)
	}
	script.WriteString("echo inside > /work/inside.txt && echo relative > relative.txt && echo scratch > /tmp/scratch && cat /tmp/scratch\n")
	out := run(t, &actions.Sandbox{Timeout: 20 * time.Second}, dir, script.String())
	if strings.Contains(out.Text, "ESCAPED") || !strings.Contains(out.Text, "scratch") {
		t.Errorf("writes outside the working directory: %q", out.Text)
	}
	if entries, _ := os.ReadDir(outside); len(entries) > 0 {
		t.Errorf("the command wrote outside its directory: %v", entries)
	}
	for _, p := range targets {
		if _, err := os.Lstat(p); filepath.IsAbs(p) && err == nil {
			t.Errorf("%s was written on the host", p)
		}
	}
	for name, want := range map[string]string{"inside.txt": "inside\n", "relative.txt": "relative\n"} {
		if data, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(data) != want {
			t.Errorf("%s in the working directory: %q, %v", name, data, err)
		}
	}
}

func TestSandboxTimeoutKillsEveryProcess(t *testing.T) {
	needBwrap(t)
	t.Parallel()
	// Unique sleeps, to find on the host: one in the background, one in a
	// session of its own, one ignoring hangups, and the shell's own.
	base := 700000 + rand.IntN(99999)
	markers := []string{fmt.Sprintf("%d.11", base), fmt.Sprintf("%d.22", base), fmt.Sprintf("%d.33", base), fmt.Sprintf("%d.44", base)}
	command := fmt.Sprintf("sleep %s & setsid sleep %s & nohup sleep %s >/dev/null 2>&1 & sleep %s", markers[0], markers[1], markers[2], markers[3])
	t.Cleanup(func() {
		for _, pid := range findSleeps(markers) {
			_ = syscall.Kill(pid, syscall.SIGKILL) // only there if the test failed
		}
	})

	seen := make(chan int, 1)
	done := make(chan struct{})
	go func() {
		most := 0
		defer func() { seen <- most }()
		for {
			most = max(most, len(findSleeps(markers)))
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	out := run(t, &actions.Sandbox{Timeout: 2 * time.Second}, t.TempDir(), command)
	took := time.Since(start)
	close(done)
	if n := <-seen; n != len(markers) {
		t.Fatalf("saw %d of the %d background sleeps while the command ran: the test proves nothing", n, len(markers))
	}
	if !out.TimedOut || out.ExitCode != -1 {
		t.Errorf("TimedOut=%v ExitCode=%d, want a timeout", out.TimedOut, out.ExitCode)
	}
	if took > 10*time.Second {
		t.Errorf("the run took %s with a 2s timeout", took)
	}
	deadline := time.Now().Add(5 * time.Second)
	for left := findSleeps(markers); len(left) > 0; left = findSleeps(markers) {
		if time.Now().After(deadline) {
			t.Fatalf("processes the command started outlived its timeout: pids %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// findSleeps returns the host PIDs of `sleep <marker>` processes.
func findSleeps(markers []string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if len(args) == 2 && filepath.Base(args[0]) == "sleep" && slices.Contains(markers, args[1]) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestSandboxCapsOutput(t *testing.T) {
	needBwrap(t)
	t.Parallel()
	out := run(t, &actions.Sandbox{Timeout: 20 * time.Second}, t.TempDir(), `head -c 100000 /dev/zero | tr '\0' x`)
	if len(out.Text) != actions.DefaultCommandOutput || out.Dropped != 100000-actions.DefaultCommandOutput || out.ExitCode != 0 {
		t.Fatalf("kept %d bytes, dropped %d, exit %d; want %d kept", len(out.Text), out.Dropped, out.ExitCode, actions.DefaultCommandOutput)
	}
}

func TestSandboxThatCannotBeMadeIsAnError(t *testing.T) {
	t.Parallel()
	if _, err := actions.LookBwrap(""); err == nil || !strings.Contains(err.Error(), "bwrap is not installed") {
		t.Errorf("LookBwrap with no PATH: %v", err)
	}
	bin := t.TempDir()
	// A bwrap that fails as a real one does when user namespaces are
	// refused.
	fake := filepath.Join(bin, "bwrap")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := actions.LookBwrap("relative/dir:" + bin); err != nil || got != fake {
		t.Errorf("LookBwrap = %q, %v; want %s", got, err, fake)
	}
	s := &actions.Sandbox{Bwrap: fake}
	if _, err := s.Run(context.Background(), t.TempDir(), "true", 1); err == nil || !strings.Contains(err.Error(), "bwrap could not make the sandbox: bwrap: setting up uid map: Permission denied") {
		t.Errorf("Run with a failing bwrap: %v", err)
	}
	if err := s.Check(context.Background()); err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "Permission denied") {
		t.Errorf("Check with a failing bwrap: %v", err)
	}
	if _, err := (&actions.Sandbox{Bwrap: fake}).Run(context.Background(), filepath.Join(bin, "missing"), "true", 1); err == nil {
		t.Error("Run in a missing directory succeeded")
	}
}

func TestSandboxCheck(t *testing.T) {
	needBwrap(t)
	t.Parallel()
	for _, network := range []bool{false, true} {
		if err := (&actions.Sandbox{Network: network}).Check(context.Background()); err != nil {
			t.Errorf("Check (network %v): %v", network, err)
		}
	}
}
