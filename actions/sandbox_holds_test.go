package actions_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/taskloom/taskloom/actions"
)

// boundedDir is a working directory WorkDir made for s, removed at the
// end of the test.
func boundedDir(t *testing.T, s *actions.Sandbox) (string, bool) {
	t.Helper()
	dir, bounded, err := s.WorkDir("taskloom-holds-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := actions.RemoveWorkDir(dir); err != nil {
			t.Error(err)
		}
		os.RemoveAll(dir)
	})
	return dir, bounded
}

// TestSandboxHoldsHoweverMemoryIsTaken: the ways around RLIMIT_DATA a
// probe found — shared anonymous memory, memfd, a shared mapping of
// /dev/zero, System V shared memory, a tmpfs of a nested user namespace,
// bwrap's own /dev — are each refused, and the output names the limit.
// Each command touches 1 GiB (or writes 50 MB), past every limit, and
// would succeed without the refusal: a user wants one approved command
// not to be able to take the host's memory, and Taskloom and its
// database with it.
func TestSandboxHoldsHoweverMemoryIsTaken(t *testing.T) {
	needBwrap(t)
	needProgram(t, "python3")
	t.Parallel()
	const touch = `m = mmap.mmap(%s)
for i in range(0, len(m), 4096): m[i] = 1
print("ALLOCATED")`
	py := func(setup, args string) string {
		return "python3 -c '" + strings.ReplaceAll("import mmap, os\n"+setup+"\n"+strings.Replace(touch, "%s", args, 1), "'", `'"'"'`) + "'"
	}
	for _, c := range []struct {
		name, command, limit string
	}{
		{"shared anonymous", py("", "-1, 1<<30, flags=mmap.MAP_SHARED|mmap.MAP_ANONYMOUS"), actions.LimitMemory},
		{"anonymous, python's default", py("", "-1, 1<<30"), actions.LimitMemory},
		{"grows down", py("", "-1, 1<<30, flags=mmap.MAP_PRIVATE|mmap.MAP_ANONYMOUS|0x100"), actions.LimitMemory},
		{"memfd", py("fd = os.memfd_create('x'); os.ftruncate(fd, 1<<30)", "fd, 1<<30"), actions.LimitMemory},
		{"memfd written", `python3 -c 'import os; fd = os.memfd_create("x"); [os.write(fd, bytes(1<<20)) for _ in range(1024)]; print("ALLOCATED")'`, actions.LimitMemory},
		{"dev zero", py("fd = os.open('/dev/zero', os.O_RDWR)", "fd, 1<<30, flags=mmap.MAP_SHARED"), ""},
		{"system v", `python3 -c 'import ctypes; libc = ctypes.CDLL(None, use_errno=True); id = libc.shmget(0, 1<<30, 0o1600); print("ALLOCATED") if id >= 0 else exit("shmget: " + __import__("os").strerror(ctypes.get_errno()))'`, actions.LimitMemory},
		{"nested namespace mount", `unshare -U -r -m sh -c 'mkdir -p /tmp/n && mount -t tmpfs none /tmp/n && head -c 50000000 /dev/zero > /tmp/n/f && echo ALLOCATED'`, actions.LimitNamespaces},
		{"nested user namespace", `unshare -U true && echo ALLOCATED`, actions.LimitNamespaces},
		{"nested mount namespace", `unshare -m true && echo ALLOCATED`, actions.LimitNamespaces},
		{"dev", `head -c 50000000 /dev/zero > /dev/f && echo ALLOCATED`, ""},
		// The main stack is not data; it may grow to 64 MiB, no further.
		{"stack", `ulimit -S -s 65536 && ulimit -S -s unlimited && echo ALLOCATED`, ""},
		// Nor may it open more than 4096 descriptors, each a pipe or a
		// socket whose buffers are kernel memory.
		{"descriptors", `ulimit -S -n 4096 && test "$(ulimit -H -n)" -le 4096 && exit 1; echo ALLOCATED`, ""},
		// Pages written through /proc/self/mem into a read-only private
		// mapping are copied, and RLIMIT_DATA does not count them; the
		// address space limit (memory + 4 GiB) bounds the mapping: 5 GiB
		// of it cannot be made.
		{"read-only mapping", `python3 -c 'import mmap
m = mmap.mmap(-1, 5<<30, flags=mmap.MAP_PRIVATE|mmap.MAP_ANONYMOUS, prot=mmap.PROT_READ)
print("ALLOCATED")'`, actions.LimitMemory},
	} {
		t.Run(c.name, func(t *testing.T) {
			if strings.HasPrefix(c.command, "unshare") {
				needProgram(t, "unshare")
			}
			t.Parallel()
			s := &actions.Sandbox{Timeout: 30 * time.Second, Limits: small}
			dir, _ := boundedDir(t, s)
			out := run(t, s, dir, c.command)
			if strings.Contains(out.Text, "ALLOCATED") || out.ExitCode == 0 || out.TimedOut || out.Limit != c.limit {
				t.Errorf("exit %d, timed out %v, limit %q, output %q; want it refused, naming the limit %q", out.ExitCode, out.TimedOut, out.Limit, out.Text, c.limit)
			}
		})
	}
}

// TestSandboxIsFirstForTheOOMKiller: should the host run out of memory
// all the same, the kernel kills a sandbox's process before Taskloom or
// its database. (A command may lower its score back to 0, the default,
// never below it: the kernel lets an unprivileged process undo its own
// raise.)
func TestSandboxIsFirstForTheOOMKiller(t *testing.T) {
	needBwrap(t)
	t.Parallel()
	s := &actions.Sandbox{Timeout: 30 * time.Second}
	dir, _ := boundedDir(t, s)
	out := run(t, s, dir, `cat /proc/self/oom_score_adj; echo -1 > /proc/self/oom_score_adj && echo LOWERED`)
	if !strings.HasPrefix(out.Text, "1000\n") || strings.Contains(out.Text, "LOWERED") {
		t.Errorf("OOM score: %q; want 1000, not lowered below 0", out.Text)
	}
}

// TestSandboxScratchIsWithinTheDiskLimit: the working directory, /tmp
// and /dev/shm together hold no more than the disk limit (8 MiB here):
// 5 MB in /tmp leaves no room for 5 MB in /dev/shm. Where the working
// directory cannot be a tmpfs, /tmp and /dev/shm have half each. Files
// of 1 MB, under the file size limit (1 MiB here).
func TestSandboxScratchIsWithinTheDiskLimit(t *testing.T) {
	needBwrap(t)
	t.Parallel()
	s := &actions.Sandbox{Timeout: 30 * time.Second, Limits: small}
	dir, bounded := boundedDir(t, s)
	out := run(t, s, dir, `w() { for i in 1 2 3 4 5; do head -c 1000000 /dev/zero > $1$i || return 1; done; }; w /tmp/a && echo TMP && w /dev/shm/b && echo ALLOCATED`)
	if !strings.Contains(out.Text, "TMP") || strings.Contains(out.Text, "ALLOCATED") || out.Limit != actions.LimitDisk {
		t.Errorf("5 MB in /tmp then 5 MB in /dev/shm under 8 MiB: exit %d, limit %q, %q; want the second refused", out.ExitCode, out.Limit, out.Text)
	}
	if !bounded {
		return
	}
	dir, _ = boundedDir(t, s)
	out = run(t, s, dir, `w() { for i in 1 2 3 4 5; do head -c 1000000 /dev/zero > $1$i || return 1; done; }; w a && echo WORK && w /tmp/b && echo ALLOCATED`)
	if !strings.Contains(out.Text, "WORK") || strings.Contains(out.Text, "ALLOCATED") || out.Limit != actions.LimitDisk {
		t.Errorf("5 MB in the working directory then 5 MB in /tmp under 8 MiB: exit %d, limit %q, %q; want the second refused", out.ExitCode, out.Limit, out.Text)
	}
}

// TestSandboxRefusesWhatATaskNeverNeeds: the seccomp filter refuses
// the calls that reach other processes or the kernel, and clone3 says
// it does not exist so that libc falls back to clone, whose flags the
// filter reads.
func TestSandboxRefusesWhatATaskNeverNeeds(t *testing.T) {
	needBwrap(t)
	needProgram(t, "python3")
	t.Parallel()
	s := &actions.Sandbox{Timeout: 30 * time.Second}
	dir, _ := boundedDir(t, s)
	const script = `import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def call(name, nr, *args):
    r = libc.syscall(nr, *args)
    print(name, r, os.strerror(ctypes.get_errno()) if r < 0 else "")
call("ptrace", 101, 16, 1, 0, 0)           # PTRACE_ATTACH to pid 1
call("keyctl", 250, 0, -1, 0)
call("bpf", 321, 0, 0, 0)
call("userfaultfd", 323, 0)
call("perf_event_open", 298, 0, 0, -1, -1, 0)
call("io_uring_setup", 425, 1, 0)
call("clone3", 435, 0, 0)
call("clone_newuser", 56, 0x10000000 | 17, 0, 0, 0, 0)
call("personality", 135, 0x0040000)        # ADDR_NO_RANDOMIZE
call("personality_query", 135, 0xffffffff)
`
	if runtime.GOARCH != "amd64" {
		t.Skip("the script's system call numbers are x86_64's")
	}
	if err := os.WriteFile(filepath.Join(dir, "calls.py"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	out := run(t, s, dir, "python3 calls.py")
	want := map[string]string{
		"ptrace": "-1 Operation not permitted", "keyctl": "-1 Operation not permitted",
		"bpf": "-1 Operation not permitted", "userfaultfd": "-1 Operation not permitted",
		"perf_event_open": "-1 Operation not permitted", "io_uring_setup": "-1 Operation not permitted",
		"clone3": "-1 Function not implemented", "clone_newuser": "-1 Operation not permitted",
		"personality": "-1 Operation not permitted",
	}
	for _, line := range strings.Split(strings.TrimSpace(out.Text), "\n") {
		name, rest, _ := strings.Cut(line, " ")
		if w, ok := want[name]; ok {
			if strings.TrimSpace(rest) != w {
				t.Errorf("%s: %q; want %q", name, rest, w)
			}
			delete(want, name)
		} else if name == "personality_query" && strings.HasPrefix(rest, "-1") {
			t.Errorf("asking for the personality: %q; want it allowed", rest)
		}
	}
	if len(want) > 0 {
		t.Errorf("calls not made: %v; output %q", want, out.Text)
	}
}

// TestRuntimesRunUnderTheDefaultLimits: the limits that bind shared
// memory leave the runtimes tasks use working: Python (with
// multiprocessing, which shares memory through /dev/shm), Node (with a
// worker thread, which reserves more address space), a Go program and,
// where installed, Java.
func TestRuntimesRunUnderTheDefaultLimits(t *testing.T) {
	needBwrap(t)
	t.Parallel()
	s := &actions.Sandbox{Timeout: 60 * time.Second}
	dir, _ := boundedDir(t, s)
	cases := []struct{ name, command, want string }{
		{"python3", `python3 -c 'import json, sqlite3, multiprocessing as m; x = bytearray(200 << 20); q = m.Queue(); q.put(len(x)); print("python", q.get())'`, "python 209715200"},
		{"node", `node -e 'const {Worker} = require("worker_threads"); const b = Buffer.alloc(200 << 20, 1); new Worker("require(\"worker_threads\").parentPort.postMessage(1)", {eval: true}).on("message", () => console.log("node", b.length))'`, "node 209715200"},
		{"java", `java -version 2>&1 | head -1`, "version"},
	}
	if gobin, err := exec.LookPath("go"); err == nil {
		src := filepath.Join(t.TempDir(), "main.go")
		if err := os.WriteFile(src, []byte("package main\n\nimport \"fmt\"\n\nfunc main() {\n\tb := make([]byte, 200<<20)\n\tfor i := range b {\n\t\tb[i] = 1\n\t}\n\tdone := make(chan int)\n\tgo func() { done <- len(b) }()\n\tfmt.Println(\"go\", <-done)\n}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		build := exec.Command(gobin, "build", "-o", filepath.Join(dir, "hello"), src)
		build.Dir = filepath.Dir(src)
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		if os.Geteuid() == 0 {
			if err := os.Chown(filepath.Join(dir, "hello"), actions.SandboxUID, actions.SandboxUID); err != nil {
				t.Fatal(err)
			}
		}
		cases = append(cases, struct{ name, command, want string }{"go", "./hello", "go 209715200"})
	}
	// Also at 32 processes, the least that start-up chooses for a small
	// host without a cgroup (internal/app's fitProcesses): threads count.
	floor := &actions.Sandbox{Timeout: 60 * time.Second, Limits: actions.Limits{Processes: 32}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name != "go" {
				needProgram(t, c.name)
			}
			for _, s := range []*actions.Sandbox{s, floor} {
				out := run(t, s, dir, c.command)
				if out.ExitCode != 0 || !strings.Contains(out.Text, c.want) {
					t.Errorf("%s: exit %d, limit %q, output %q; want %q", s.Limits, out.ExitCode, out.Limit, out.Text, c.want)
				}
			}
		})
	}
}

// needProgram skips a test whose commands need a program the system
// (what the sandbox sees) does not have.
func needProgram(t *testing.T, name string) {
	t.Helper()
	if !visible(name) {
		t.Skipf("%s is not installed where the sandbox sees it", name)
	}
}

// visible says whether a program is installed where the sandbox sees it.
func visible(name string) bool {
	for _, d := range []string{"/usr/bin", "/bin", "/usr/local/bin"} {
		if _, err := os.Stat(filepath.Join(d, name)); err == nil {
			return true
		}
	}
	return false
}

// TestSandboxManyProcessesTogether: 40 processes of 40 MiB each, every
// one under the memory limit (64 MiB here) but 1.6 GiB together, are
// stopped: by the sandbox's memory limit where it is a cgroup's total,
// else by the process limit (32 here), which with the per-process memory
// limit bounds the whole (docs/security.md states the worst case).
func TestSandboxManyProcessesTogether(t *testing.T) {
	needBwrap(t)
	needProgram(t, "python3")
	t.Parallel()
	s := &actions.Sandbox{Timeout: 30 * time.Second, Limits: small}
	dir, _ := boundedDir(t, s)
	out := run(t, s, dir, `for i in $(seq 40); do python3 -c 'import time; x = bytearray(40 << 20); time.sleep(2)' & done; wait; echo ALLOCATED`)
	want := actions.LimitProcesses
	if strings.HasPrefix(actions.CgroupMode(), "per sandbox") {
		want = actions.LimitMemory
	}
	if strings.Contains(out.Text, "ALLOCATED") && out.ExitCode == 0 || out.Limit != want {
		t.Errorf("exit %d, limit %q, output %q; want it stopped by the %s limit (%s)", out.ExitCode, out.Limit, out.Text, want, actions.CgroupMode())
	}
}

// TestSandboxKillsAForeignArchitecture: a 32-bit x86 program (the i386
// system call table, through which the filter's x86_64 numbers would
// mean other calls) is killed at its first call rather than let through.
// The same program runs outside the sandbox.
func TestSandboxKillsAForeignArchitecture(t *testing.T) {
	needBwrap(t)
	if runtime.GOARCH != "amd64" {
		t.Skip("a foreign architecture is tried from x86_64")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not installed to build a 32-bit program")
	}
	t.Parallel()
	s := &actions.Sandbox{Timeout: 30 * time.Second}
	dir, _ := boundedDir(t, s)
	src := filepath.Join(t.TempDir(), "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"RAN\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "hello386")
	build := exec.Command(gobin, "build", "-o", bin, src)
	build.Dir, build.Env = filepath.Dir(src), append(os.Environ(), "GOARCH=386", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin).Output(); err != nil || !strings.Contains(string(out), "RAN") {
		t.Skipf("this kernel does not run 32-bit programs: %v", err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(bin, actions.SandboxUID, actions.SandboxUID); err != nil {
			t.Fatal(err)
		}
	}
	out := run(t, s, dir, "./hello386")
	if strings.Contains(out.Text, "RAN") || out.ExitCode != 128+int(syscall.SIGSYS) {
		t.Errorf("a 32-bit program in the sandbox: exit %d, %q; want it killed by SIGSYS", out.ExitCode, out.Text)
	}
}
