package actions_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/actions"
)

// small are limits small enough to be reached quickly.
var small = actions.Limits{Memory: 64 << 20, Processes: 32, FileSize: 1 << 20, Disk: 8 << 20, CPU: time.Second}

// TestSandboxLimits: a command that allocates 3 GiB, starts 1,500
// processes, writes a 700 MB file, fills its writable space or spins is
// stopped by the limit, and the output names it. Each command would run
// to the end without its limit (the break-check: remove the line setting
// it), so a pass means the limit did it.
func TestSandboxLimits(t *testing.T) {
	needBwrap(t)
	t.Parallel()
	for _, c := range []struct {
		name, command, limit string
	}{
		{"memory", `perl -e '$x = "a" x (3 * 1024 * 1024 * 1024); print "ALLOCATED\n"'`, actions.LimitMemory},
		{"processes", `for i in $(seq 1500); do sleep 5 & done; echo ALLOCATED; kill $(jobs -p) 2>/dev/null`, actions.LimitProcesses},
		{"file size", `head -c 700000000 /dev/zero > big && echo ALLOCATED`, actions.LimitFileSize},
		{"disk", `for i in $(seq 700); do head -c 1000000 /dev/zero > f$i || exit 1; done; echo ALLOCATED`, actions.LimitDisk},
		{"tmp", `for i in $(seq 700); do head -c 1000000 /dev/zero > /tmp/f$i || exit 1; done; echo ALLOCATED`, actions.LimitDisk},
		{"shm", `for i in $(seq 700); do head -c 1000000 /dev/zero > /dev/shm/f$i || exit 1; done; echo ALLOCATED`, actions.LimitDisk},
		{"cpu", `i=0; while [ $i -lt 100000000 ]; do i=$((i+1)); done; echo ALLOCATED`, actions.LimitCPU},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := &actions.Sandbox{Timeout: 30 * time.Second, Limits: small}
			dir, bounded, err := s.WorkDir("taskloom-limits-test-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := actions.RemoveWorkDir(dir); err != nil {
					t.Error(err)
				}
				os.RemoveAll(dir)
			})
			if c.name == "disk" && !bounded {
				t.Skip("the working directory is bounded only where Taskloom may mount a tmpfs (as root)")
			}
			out := run(t, s, dir, c.command)
			if strings.Contains(out.Text, "ALLOCATED") || out.ExitCode == 0 || out.TimedOut || out.Limit != c.limit {
				t.Errorf("exit %d, timed out %v, limit %q, output %q; want it stopped by the %s limit", out.ExitCode, out.TimedOut, out.Limit, out.Text, c.limit)
			}
		})
	}
}

// TestRunCommandSaysWhichLimitStoppedIt, with the default limits: the
// step fails with a sentence naming the limit, and a file too big to keep
// is named.
func TestRunCommandSaysWhichLimitStoppedIt(t *testing.T) {
	needBwrap(t)
	t.Parallel()
	k := newKit(t)
	outOfMemory := "It ran out of memory: the memory limit is 512 MiB a process."
	if actions.CgroupLimits() {
		outOfMemory = "It was stopped: the sandbox's memory limit (512 MiB) was reached."
	}
	for _, c := range []struct{ command, want string }{
		{`perl -e '$x = "a" x (3 * 1024 * 1024 * 1024); print "ALLOCATED\n"'`, outOfMemory},
		{`head -c 700000000 /dev/zero > big.bin`, "It was killed at the file size limit: a file may grow to 64 MiB."},
		{`python3 -c 'import mmap; m = mmap.mmap(-1, 1 << 30); m[::4096] = b"x" * (1 << 18)'`, outOfMemory},
		{`unshare -U -r -m sh -c 'mount -t tmpfs none /tmp'`, "It was refused: nested namespaces and mounts are not allowed in the sandbox."},
	} {
		if strings.HasPrefix(c.command, "python3") && !visible("python3") || strings.HasPrefix(c.command, "unshare") && !visible("unshare") {
			continue // not installed where the sandbox sees it
		}
		ok, text := k.call("run_command", map[string]string{"command": c.command})
		if ok || !strings.Contains(text, c.want) {
			t.Errorf("%s: %v %q; want a failure saying %q", c.command, ok, text, c.want)
		}
	}
	if os.Geteuid() != 0 {
		return // the working directory is bounded where Taskloom may mount a tmpfs
	}
	// 700 MB in files of 50 MB, each under the file size limit: the
	// writable space (256 MiB) fills first.
	res, err := k.run("run_command", map[string]string{"command": `for i in $(seq 14); do head -c 50000000 /dev/zero > part$i.bin || exit 1; done`})
	if err != nil {
		t.Fatal(err)
	}
	if res.Success || !strings.Contains(res.Error, "It ran out of writable space: the limit is 256 MiB.") ||
		!strings.Contains(res.Text, "[not kept: part1.bin is 50000000 bytes; a file may hold at most 1048576 (1 MiB)]") {
		t.Errorf("700 MB in 50 MB files: %+v", res)
	}
}
