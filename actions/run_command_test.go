package actions_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
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

// workDir is a directory for a sandbox to work in. When the tests run as
// root the sandbox runs as nobody, which must be able to reach it: the
// test's own temporary directory is opened to others for that.
func workDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
		t.Fatal(err)
	}
	return dir
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
	// What the command wrote is the iteration's: later tools read it, and
	// the store has it once the iteration commits.
	if ok, text := k.call("read_file", map[string]string{"path": "out.txt"}); !ok || text != "hi\n" {
		t.Fatalf("read_file out.txt after the command: %v %q", ok, text)
	}
	if got := k.stored(); len(got) != 0 {
		t.Fatalf("stored before the iteration's commit: %v", got)
	}
	k.commit()
	if got := k.stored(); got["out.txt"] != "hi\n" || len(got) != 1 {
		t.Fatalf("stored after the commit: %q", got)
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

// TestRunCommandWorksOnTheTasksFiles: the command finds the task's files,
// those its iteration has not committed yet included; what it makes,
// changes and removes is written back; links, pipes and empty folders are
// not files of the task; files it did not change are not rewritten.
func TestRunCommandWorksOnTheTasksFiles(t *testing.T) {
	needBwrap(t)
	t.Parallel()
	k := newKit(t)
	write(t, k, "notes/plan.md", "plan\n")
	write(t, k, "keep.txt", "keep\n")
	write(t, k, "gone.txt", "bye\n")
	write(t, k, "link-me.txt", "a file that becomes a link\n")
	k.commit()
	kept, _, err := k.rt.Store().ReadTaskFile(context.Background(), k.task.Number, "keep.txt")
	if err != nil {
		t.Fatal(err)
	}
	write(t, k, "pending.txt", "not committed yet\n")
	ok, text := k.call("run_command", map[string]string{"command": strings.Join([]string{
		"cat notes/plan.md pending.txt",
		"echo step 2 >> notes/plan.md",
		"rm gone.txt",
		"mkdir -p new/dir empty && echo made > new/dir/file.txt",
		"ln -s /etc/passwd passwd-link",
		"rm link-me.txt && ln -s keep.txt link-me.txt",
		"mkfifo pipe",
		"touch keep.txt",
	}, " && ")})
	if !ok || !strings.Contains(text, "plan\nnot committed yet\n") || strings.Contains(text, "not kept") {
		t.Fatalf("%v %q", ok, text)
	}
	k.commit()
	want := map[string]string{
		"notes/plan.md":    "plan\nstep 2\n",
		"keep.txt":         "keep\n",
		"pending.txt":      "not committed yet\n",
		"new/dir/file.txt": "made\n",
	}
	if got := k.stored(); !maps.Equal(got, want) {
		t.Errorf("stored %q\nwant   %q", got, want)
	}
	if f, _, err := k.rt.Store().ReadTaskFile(context.Background(), k.task.Number, "keep.txt"); err != nil || f != kept {
		t.Errorf("an unchanged file was rewritten: %+v, %v; was %+v", f, err, kept)
	}
}

// TestRunCommandKeepsWithinTheLimits: what a command makes past the limits
// of docs/deploy.md is not kept, and its result says so, a line a file.
func TestRunCommandKeepsWithinTheLimits(t *testing.T) {
	needBwrap(t)
	t.Parallel()
	k := newKit(t)
	ok, text := k.call("run_command", map[string]string{"command": "head -c 1048577 /dev/zero > big.bin && mkdir f && for i in $(seq -w 1 1020); do echo $i > f/$i; done && echo done"})
	if !ok || !strings.Contains(text, "done") {
		t.Fatalf("%v %q", ok, text)
	}
	for _, want := range []string{
		"\n[not kept: big.bin is 1048577 bytes; a file may hold at most 1048576 (1 MiB)]",
		"\n[not kept: f/1001 would be file 1001; a task may keep at most 1000]",
		"\n[not kept: f/1009 would be file 1001; a task may keep at most 1000]",
		"\n[and 11 more files not kept]",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the result lacks %q:\n%s", want, text[strings.Index(text, "done"):])
		}
	}
	if strings.Contains(text, "f/1010 would") {
		t.Errorf("more than %d files are named one by one", 10)
	}
	k.commit()
	if got := k.stored(); len(got) != 1000 || got["f/1000"] != "1000\n" {
		t.Errorf("stored %d files, f/1000 = %q; want f/0001 to f/1000", len(got), got["f/1000"])
	}

	k2 := newKit(t)
	ok, text = k2.call("run_command", map[string]string{"command": "for i in $(seq -w 1 21); do head -c 1048576 /dev/zero > $i.bin; done"})
	if !ok || !strings.Contains(text, "[not kept: 21.bin (1048576 bytes) would bring the task's files past 20971520 bytes (20 MiB) in all]") {
		t.Errorf("past 20 MiB: %v %q", ok, text)
	}
}

// Not parallel: it points TMPDIR at a directory of its own, to see that
// the command's directory is gone afterwards, even when the command took
// away the permissions needed to remove it.
func TestRunCommandRemovesItsDirectory(t *testing.T) {
	needBwrap(t)
	tmp := workDir(t)
	t.Setenv("TMPDIR", tmp)
	k := newKit(t)
	write(t, k, "a/b.txt", "b")
	ok, text := k.call("run_command", map[string]string{"command": "mkdir -p locked/inner && echo x > locked/inner/f && echo y > unreadable && chmod 000 unreadable locked/inner locked"})
	if !ok {
		t.Fatalf("%v %q", ok, text)
	}
	entries, err := os.ReadDir(tmp)
	// The sandbox's staging directory (its helper and the egress
	// socket) is kept for the life of the process and after.
	entries = slices.DeleteFunc(entries, func(e os.DirEntry) bool { return strings.HasPrefix(e.Name(), "taskloom-sandbox-") })
	if err != nil || len(entries) != 0 {
		t.Errorf("left behind in TMPDIR: %v, %v", entries, err)
	}
	k.commit()
	want := map[string]string{"a/b.txt": "b", "locked/inner/f": "x\n", "unreadable": "y\n"}
	if got := k.stored(); !maps.Equal(got, want) {
		t.Errorf("stored %q, want %q", got, want)
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
	dir := workDir(t)

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
	port, accepted := hostListener(t)
	connect := fmt.Sprintf(`bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d && echo CONNECTED-OK'`, port)

	out := run(t, &actions.Sandbox{Timeout: 20 * time.Second}, workDir(t), connect)
	if strings.Contains(out.Text, "CONNECTED-OK") || out.ExitCode == 0 {
		t.Errorf("without TASKLOOM_RUN_COMMAND_NETWORK the sandbox reached the host's 127.0.0.1:%d: exit %d %q", port, out.ExitCode, out.Text)
	}
	select {
	case <-accepted:
		t.Error("the host's listener accepted a connection from the sandbox")
	default:
	}

}

func TestSandboxWritesOnlyItsDirectory(t *testing.T) {
	needBwrap(t)
	t.Parallel()
	dir, outside := workDir(t), workDir(t)
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
	out := run(t, &actions.Sandbox{Timeout: 2 * time.Second}, workDir(t), command)
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
	out := run(t, &actions.Sandbox{Timeout: 20 * time.Second}, workDir(t), `head -c 100000 /dev/zero | tr '\0' x`)
	if len(out.Text) != actions.DefaultCommandOutput || out.Dropped != 100000-actions.DefaultCommandOutput || out.ExitCode != 0 {
		t.Fatalf("kept %d bytes, dropped %d, exit %d; want %d kept", len(out.Text), out.Dropped, out.ExitCode, actions.DefaultCommandOutput)
	}
}

func TestSandboxThatCannotBeMadeIsAnError(t *testing.T) {
	t.Parallel()
	if _, err := actions.LookBwrap(""); err == nil || !strings.Contains(err.Error(), "bwrap is not installed") {
		t.Errorf("LookBwrap with no PATH: %v", err)
	}
	bin := workDir(t)
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
	if _, err := s.Run(context.Background(), workDir(t), "true", 1); err == nil || !strings.Contains(err.Error(), "bwrap could not make the sandbox: bwrap: setting up uid map: Permission denied") {
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
	if err := (&actions.Sandbox{}).Check(context.Background()); err != nil {
		t.Errorf("Check: %v", err)
	}
}
