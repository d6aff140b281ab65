package actions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Sandbox limits.
const (
	DefaultCommandTimeout = 60 * time.Second
	DefaultCommandOutput  = 64 << 10
)

// SandboxWorkDir is where the command's working directory appears inside
// the sandbox; it is also the command's HOME.
const SandboxWorkDir = "/work"

// sandboxPath is the command's PATH inside the sandbox.
const sandboxPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Sandbox runs commands under bubblewrap (bwrap) so that a command a
// model chose sees nothing of Taskloom: new user, PID, mount, network,
// IPC, UTS and cgroup namespaces, no capabilities, no nested user
// namespace (--disable-userns) and a seccomp filter (sandbox_seccomp.go);
// the system (/usr, /bin, /lib*, a few files of /etc) read-only; a fresh
// /proc, a read-only /dev whose /dev/zero cannot be mapped, and /tmp and
// /dev/shm within the disk limit with the working directory; one
// writable directory, mounted at SandboxWorkDir; in a cgroup v2 group of
// its own where Taskloom can make one (sandbox_cgroup.go); and an
// environment of PATH, HOME, LANG and
// TASKLOOM_TASK only. bwrap itself is started with an empty environment
// too, because the PID namespace's init is bwrap and the command can read
// its /proc/1/environ.
//
// The command runs as an unprivileged user: Taskloom's own when it is not
// root, and SandboxUID when it is (bwrap is started as that user), so
// that the limits (Limits) bind — the kernel does not apply
// RLIMIT_NPROC to root. With Network, the sandbox still has a network
// namespace of its own, with nothing but a loopback: it reaches the world
// only through Egress, Taskloom's proxy, which refuses loopback, private
// and other special-purpose addresses as http_get does.
type Sandbox struct {
	// Bwrap is the bwrap binary; "" looks "bwrap" up in PATH.
	Bwrap string
	// Network lets the command reach public addresses through Egress
	// (TASKLOOM_RUN_COMMAND_NETWORK), as HTTP_PROXY and HTTPS_PROXY.
	// Without it, no proxy is offered either.
	Network bool
	// Egress is the proxy a sandbox with Network reaches the world
	// through; it must be set when Network is.
	Egress *Egress
	// Timeout bounds a run; the command and every process it started are
	// killed when it passes. Zero means DefaultCommandTimeout.
	Timeout time.Duration
	// MaxOutput caps the output kept; the rest is counted. Zero means
	// DefaultCommandOutput.
	MaxOutput int
	// Limits bound memory, processes, file size, writable space and CPU
	// time; zero fields take DefaultLimits.
	Limits Limits

	// filter is the seccomp filter; nil is seccompFilter. A test sets
	// another to see what holds without it.
	filter func() ([]unix.SockFilter, error)
}

// SandboxUID is the user (and group) a sandbox runs as on the host when
// Taskloom runs as root: nobody.
const SandboxUID = 65534

// Output is what a sandboxed command did.
type Output struct {
	Text     string // stdout and stderr as written, at most MaxOutput bytes
	Dropped  int    // bytes written beyond MaxOutput
	ExitCode int    // -1 when it was killed at the timeout
	TimedOut bool
	// Limit names the limit that stopped the command (LimitMemory, …),
	// when one did as far as can be told; "" otherwise.
	Limit string
	// CutOff says why the egress proxy cut the sandbox off from the
	// network ("it kept opening …"); "" when it did not.
	CutOff string
}

// Run runs command with sh -c in the sandbox, with dir as its working
// directory, and waits for it. A command that fails or times out is an
// Output, not an error; the error is for a sandbox that could not be made.
// When Taskloom runs as root, dir and what is in it are given to
// SandboxUID first, and the sandbox user must be able to reach dir.
func (s *Sandbox) Run(ctx context.Context, dir, command string, taskNumber int64) (Output, error) {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultCommandTimeout
	}
	limit := s.MaxOutput
	if limit <= 0 {
		limit = DefaultCommandOutput
	}

	door, err := s.openDoor(fmt.Sprintf("run_command of task #%d", taskNumber))
	if err != nil {
		return Output{}, err
	}
	defer door.Close()
	// The shell inside first writes a byte to fd 3, so a run that never
	// got that far is told apart from a command that failed; then it
	// closes fd 3 and hands over to the command.
	started, startedW, err := os.Pipe()
	if err != nil {
		return Output{}, fmt.Errorf("sandbox: %w", err)
	}
	defer started.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd, err := s.Command(ctx, Spec{
		Dir:        dir,
		Argv:       []string{"/bin/sh", "-c", `printf . >&3 && exec 3>&- && exec /bin/sh -c "$0"`, command},
		Env:        []string{"PATH=" + sandboxPath, "HOME=" + SandboxWorkDir, "LANG=C.UTF-8", "TASKLOOM_TASK=" + strconv.FormatInt(taskNumber, 10)},
		ExtraFiles: []*os.File{startedW},
		door:       door,
	})
	if err != nil {
		startedW.Close()
		return Output{}, err
	}
	defer closeExtraFiles(cmd)
	defer func() { _, _ = releaseCgroup(cmd) }() // on the paths that return before Wait
	out := &capped{n: limit}
	cmd.Stdout, cmd.Stderr = out, out
	// At the timeout bwrap's process group is killed. The sandbox's init
	// has a session of its own (--new-session) but dies with bwrap
	// (--die-with-parent), and when a PID namespace's init dies the kernel
	// kills every process left in it, however it detached itself.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	err = cmd.Start()
	closeExtraFiles(cmd)
	if err != nil {
		return Output{}, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	err = cmd.Wait()
	groupLimit, gerr := releaseCgroup(cmd)
	if gerr != nil {
		return Output{}, gerr
	}
	var mark [1]byte
	n, _ := io.ReadFull(started, mark[:])

	res := Output{Text: out.buf.String(), Dropped: out.dropped, CutOff: door.CutOff()}
	var exit *exec.ExitError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		res.TimedOut, res.ExitCode = true, -1
		return res, nil
	case ctx.Err() != nil:
		return Output{}, fmt.Errorf("run in the sandbox: %w", ctx.Err())
	case n == 0:
		return Output{}, fmt.Errorf("bwrap could not make the sandbox: %s", firstLine(res.Text, err))
	case errors.As(err, &exit):
		res.ExitCode = exit.ExitCode()
	case err != nil:
		return Output{}, fmt.Errorf("run in the sandbox: %w", err)
	}
	res.Limit = limitHit(res.ExitCode, res.Text)
	if groupLimit != "" && res.ExitCode != 0 {
		res.Limit = groupLimit // the kernel's word over the program's
	}
	return res, nil
}

// Spec is one process to run in the sandbox.
type Spec struct {
	// Dir is the writable directory mounted at SandboxWorkDir, where the
	// process starts.
	Dir string
	// Argv is the command and its arguments, as seen inside the sandbox.
	Argv []string
	// Env is the whole environment of the process ("NAME=value"); the
	// egress proxy's variables are added when the sandbox has Network.
	Env []string
	// ExtraFiles are given to the process as descriptors 3 and on
	// (through bwrap, which keeps them open).
	ExtraFiles []*os.File
	// ReadOnly are host paths bound read-only at the same place inside,
	// besides the system: an MCP server's own files. They are mounted
	// after /tmp and the working directory, so a path under /tmp (a
	// test's binary) is not hidden by the sandbox's own /tmp.
	ReadOnly []string
	// NoCPULimit leaves CPU time unlimited, for a long-lived server whose
	// CPU time adds up over days.
	NoCPULimit bool

	// staged maps a path of ReadOnly to where it was bound for the
	// sandbox's user on the host (stageReadOnly), when that user cannot
	// reach it where it is.
	staged map[string]string
	// door is the sandbox's way to the egress proxy (openDoor), which a
	// sandbox with Network must have.
	door *EgressDoor
}

// openDoor opens a door to the egress proxy for one sandbox named name,
// when the sandbox has a network; nil otherwise. Close it once the
// sandbox has ended.
func (s *Sandbox) openDoor(name string) (*EgressDoor, error) {
	if !s.Network {
		return nil, nil
	}
	if s.Egress == nil {
		return nil, errors.New("the sandbox has a network but no egress proxy")
	}
	d, err := s.Egress.Open(name)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	return d, nil
}

// Command makes the bwrap command that runs spec in the sandbox, not yet
// started. It has its own process group, an empty environment of its
// own, and, when Taskloom is root, runs as SandboxUID.
func (s *Sandbox) Command(ctx context.Context, spec Spec) (*exec.Cmd, error) {
	bwrap, err := s.bwrap()
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(spec.Dir)
	if err != nil {
		return nil, fmt.Errorf("sandbox directory %s: %w", spec.Dir, err)
	}
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("sandbox directory: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("sandbox directory %s is not a directory", dir)
	}
	if s.Network && spec.door == nil {
		return nil, errors.New("the sandbox has a network but no door to the egress proxy")
	}
	helper, err := sandboxHelper()
	if err != nil {
		return nil, err
	}
	if asRoot() {
		if err := giveToSandbox(dir); err != nil {
			return nil, err
		}
	}
	limits := s.Limits.withDefaults()
	filter, err := seccompFile(s.filter)
	if err != nil {
		return nil, err
	}
	// The filter follows the process's own descriptors; bwrap reads it
	// and closes its copy before the command starts. Ours is closed by
	// whoever starts cmd, once it has (or by the garbage collector).
	args := s.args(dir, helper, limits, spec, 3+len(spec.ExtraFiles))
	cmd := exec.CommandContext(ctx, bwrap, args...)
	cmd.ExtraFiles = append(slices.Clone(spec.ExtraFiles), filter)
	cmd.Env = []string{} // not nil: nil would hand bwrap our environment
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if asRoot() {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: SandboxUID, Gid: SandboxUID, Groups: []uint32{}}
	}
	if base, _ := cgroupBase(); base != "" {
		// bwrap starts in the sandbox's own group (clone3 with
		// CLONE_INTO_CGROUP): nothing of it runs outside the limits,
		// not even for a moment.
		g, f, err := newSandboxCgroup(base, limits)
		if err != nil {
			filter.Close()
			return nil, err
		}
		// Not one of cmd's files: the sandbox must not hold its own
		// group's folder (as Taskloom's user, it could raise its limits).
		g.fd = f
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(f.Fd())
		commandCgroups.Store(cmd, g)
	}
	return cmd, nil
}

// commandCgroups are the cgroups Command made, by command, until
// releaseCgroup removes them.
var commandCgroups sync.Map // *exec.Cmd → *sandboxCgroup

// releaseCgroup removes the cgroup of a command Command made, once it
// has ended, and says which of the group's limits it reached ("" when
// none, or when it had no group).
func releaseCgroup(cmd *exec.Cmd) (string, error) {
	v, ok := commandCgroups.LoadAndDelete(cmd)
	if !ok {
		return "", nil
	}
	g := v.(*sandboxCgroup)
	hit := g.limitHit()
	return hit, g.remove()
}

// CgroupLimits says whether the sandbox's memory and process limits
// are each sandbox's total, in a cgroup v2 group.
func CgroupLimits() bool {
	base, _ := cgroupBase()
	return base != ""
}

// CgroupMode says how the sandbox's limits bind here, for a log line at
// start-up: over the whole sandbox in a cgroup v2 group, or, when
// Taskloom cannot make one, process by process, and why.
func CgroupMode() string {
	base, why := cgroupBase()
	if base != "" {
		return "per sandbox, in cgroup v2 groups under " + base
	}
	return "per process (no cgroup v2 group: " + why + ")"
}

// Check makes a sandbox and runs true in it, so that start-up can refuse
// to offer run_command when the sandbox cannot be made (no bwrap, user
// namespaces refused). The error is one line saying why.
func (s *Sandbox) Check(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "taskloom-sandbox-check-")
	if err != nil {
		return fmt.Errorf("sandbox check: %w", err)
	}
	defer os.RemoveAll(dir)
	probe := *s
	probe.Timeout = 30 * time.Second
	out, err := probe.Run(ctx, dir, "true", 0)
	switch {
	case err != nil:
		return err
	case out.TimedOut:
		return errors.New("bwrap did not run true within 30s")
	case out.ExitCode != 0:
		return fmt.Errorf("true exited with status %d in the sandbox: %s", out.ExitCode, firstLine(out.Text, nil))
	}
	return nil
}

func (s *Sandbox) bwrap() (string, error) {
	if s.Bwrap == "" {
		return LookBwrap(os.Getenv("PATH"))
	}
	return s.Bwrap, nil
}

// LookBwrap finds bwrap in the directories of a PATH list.
func LookBwrap(path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // never run a bwrap from the working directory
		}
		p := filepath.Join(dir, "bwrap")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("bwrap is not installed (no bwrap on PATH; the Debian package is bubblewrap)")
}

// args are bwrap's arguments for spec, the command included, with the
// seccomp filter on descriptor seccompFD.
func (s *Sandbox) args(dir, helper string, l Limits, spec Spec, seccompFD int) []string {
	args := []string{
		"--unshare-all",    // user (if it can), PID, mount, network, IPC, UTS, cgroup
		"--unshare-user",   // …and the user namespace is not optional
		"--disable-userns", // and no user namespace can be made inside it
		"--seccomp", strconv.Itoa(seccompFD),
		"--cap-drop", "ALL",
		"--die-with-parent",
		"--new-session", // no controlling terminal to push input into
		"--hostname", "sandbox",
	}
	args = append(args, systemMounts()...)
	args = append(args, "--ro-bind", helper, sandboxInitPath)
	proxy := ""
	if s.Network {
		proxy = sandboxEgressSock
		args = append(args, "--bind", spec.door.SocketPath(), sandboxEgressSock)
	}
	args = append(args, "--proc", "/proc", "--dev", "/dev")
	// All the sandbox can write in memory is within the disk limit: the
	// working directory, /tmp and /dev/shm are folders of one tmpfs of
	// that size when WorkDir made it; else /tmp and /dev/shm are
	// bwrap's, half of it each, and the working directory is on disk.
	if root := scratchOf(dir); root != "" {
		args = append(args,
			"--bind", filepath.Join(root, "shm"), "/dev/shm",
			"--bind", filepath.Join(root, "tmp"), "/tmp")
	} else {
		half := strconv.FormatInt(l.Disk/2, 10)
		args = append(args,
			"--size", half, "--tmpfs", "/dev/shm",
			"--size", half, "--tmpfs", "/tmp")
	}
	args = append(args,
		// /dev/full reads as zeros too but cannot be mapped: a shared
		// mapping of /dev/zero is shared memory no limit counts.
		"--dev-bind", "/dev/full", "/dev/zero",
		"--remount-ro", "/dev", // bwrap's /dev is a tmpfs of no size the command could fill
		"--bind", dir, SandboxWorkDir,
	)
	for _, p := range spec.ReadOnly {
		src := p
		if staged, ok := spec.staged[p]; ok {
			src = staged
		}
		args = append(args, "--ro-bind", src, p)
	}
	args = append(args,
		"--chdir", SandboxWorkDir,
		"--remount-ro", "/", // the root bwrap built; /work, /tmp, /dev/shm stay writable
		"--clearenv",
	)
	env := spec.Env
	if s.Network {
		u := "http://" + sandboxProxyAddr
		env = append(env[:len(env):len(env)], "HTTP_PROXY="+u, "HTTPS_PROXY="+u, "http_proxy="+u, "https_proxy="+u)
	}
	for _, e := range env {
		name, value, _ := strings.Cut(e, "=")
		args = append(args, "--setenv", name, value)
	}
	args = append(args, "--")
	return append(args, initArgs(l, !spec.NoCPULimit, proxy, spec.Argv)...)
}

// etcFiles are the parts of /etc that programs need to run, find users,
// names and certificates; nothing in them is a secret. The rest of /etc
// (credentials, service configuration) stays out.
var etcFiles = []string{
	"/etc/alternatives",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/hosts",
	"/etc/localtime",
	"/etc/ssl/certs", "/etc/pki/tls/certs", "/etc/pki/ca-trust/extracted",
}

// systemMounts binds the system read-only. /bin, /sbin and /lib* are
// symlinks into /usr on merged-/usr systems and directories elsewhere.
func systemMounts() []string {
	args := []string{"--ro-bind", "/usr", "/usr"}
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				args = append(args, "--symlink", target, d)
			}
		case fi.IsDir():
			args = append(args, "--ro-bind", d, d)
		}
	}
	for _, f := range etcFiles {
		args = append(args, "--ro-bind-try", f, f)
	}
	return args
}

// closeExtraFiles closes the descriptors cmd was given (the start pipe,
// the seccomp filter) and its cgroup's, once it started or will not:
// bwrap has its own. Closing one twice does nothing.
func closeExtraFiles(cmd *exec.Cmd) {
	for _, f := range cmd.ExtraFiles {
		_ = f.Close()
	}
	if g, ok := commandCgroups.Load(cmd); ok && g.(*sandboxCgroup).fd != nil {
		_ = g.(*sandboxCgroup).fd.Close()
	}
}

// capped keeps the first n bytes written to it and counts the rest.
type capped struct {
	buf     bytes.Buffer
	n       int
	dropped int
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.n - c.buf.Len()
	if room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	if len(p) > room {
		c.dropped += len(p) - max(room, 0)
	}
	return len(p), nil
}

// firstLine is the first non-empty line of text, or err's text.
func firstLine(text string, err error) string {
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	if err != nil {
		return err.Error()
	}
	return "no output"
}
