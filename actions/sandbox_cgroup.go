package actions

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A sandbox's limits are its own total, not each process's, where the
// kernel lets Taskloom make a cgroup v2 group for it: the memory and
// pids controllers delegated to Taskloom's own group (systemd's
// Delegate=, a container with a private, writable cgroup namespace).
// Then memory.max is the memory limit — shared memory, tmpfs pages and
// the kernel's memory for the sandbox all count, and memory.swap.max 0
// keeps it out of swap — and pids.max the process limit, over every
// process of the sandbox together. Without one (cgroup v1, controllers
// not delegated, a read-only /sys/fs/cgroup) the per-process limits and
// the seccomp filter hold alone, and docs/security.md states the worst
// case.
//
// To make groups beside itself Taskloom moves itself into a leaf of its
// own group, "taskloom", and enables the controllers for the group's
// children: cgroup v2 lets only a group without processes of its own
// hand controllers down. A sandbox's group is "sandbox-…" beside it.

// cgroupLeaf is the group Taskloom moves itself into.
const cgroupLeaf = "taskloom"

var cgroups struct {
	once sync.Once
	base string // the group sandboxes' groups are made in; "" without
	why  string // why there is none
}

// cgroupBase is the group sandbox groups are made in, found (and made
// ready) once; "" and the reason when the sandbox must do without.
func cgroupBase() (string, string) {
	cgroups.once.Do(func() {
		self, err := os.ReadFile("/proc/self/cgroup")
		if err != nil {
			cgroups.why = err.Error()
			return
		}
		mounts, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			cgroups.why = err.Error()
			return
		}
		base, err := prepareCgroups(string(self), string(mounts), os.Getpid())
		if err == nil {
			err = probeCgroup(base)
		}
		if err != nil {
			cgroups.why = err.Error()
			return
		}
		cgroups.base = base
	})
	return cgroups.base, cgroups.why
}

// prepareCgroups finds this process's cgroup v2 group from the contents
// of /proc/self/cgroup and /proc/self/mountinfo, checks that the memory
// and pids controllers are there, moves pid into a leaf of the group and
// enables the controllers for the group's children.
func prepareCgroups(self, mountinfo string, pid int) (string, error) {
	var path string
	for _, line := range strings.Split(self, "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			path = p
		}
	}
	if path == "" {
		return "", errors.New("no cgroup v2 hierarchy (cgroup v1 only)")
	}
	mount, root := "", ""
	for _, line := range strings.Split(mountinfo, "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if ok && len(f) >= 5 && len(g) >= 1 && g[0] == "cgroup2" {
			mount, root = f[4], f[3]
		}
	}
	if mount == "" {
		return "", errors.New("the cgroup v2 hierarchy is not mounted")
	}
	rel, ok := strings.CutPrefix(path, strings.TrimSuffix(root, "/"))
	if !ok {
		return "", fmt.Errorf("this process's cgroup %s is outside the mounted hierarchy %s", path, root)
	}
	group := filepath.Join(mount, rel)
	if filepath.Base(group) == cgroupLeaf {
		// Moved already, by an earlier start of this process's parent
		// group: its parent is where the sandboxes go.
		group = filepath.Dir(group)
	}
	controllers, err := os.ReadFile(filepath.Join(group, "cgroup.controllers"))
	if err != nil {
		return "", err
	}
	have := strings.Fields(string(controllers))
	if !slices.Contains(have, "memory") || !slices.Contains(have, "pids") {
		return "", fmt.Errorf("the memory and pids controllers are not delegated to Taskloom's cgroup %s (it has %q)", group, strings.TrimSpace(string(controllers)))
	}
	leaf := filepath.Join(group, cgroupLeaf)
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("cgroup %s cannot be made: %w", leaf, err)
	}
	if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		return "", fmt.Errorf("move Taskloom into %s: %w", leaf, err)
	}
	if err := os.WriteFile(filepath.Join(group, "cgroup.subtree_control"), []byte("+memory +pids"), 0); err != nil {
		return "", fmt.Errorf("enable the memory and pids controllers in %s (other processes in the group?): %w", group, err)
	}
	return group, nil
}

// probeCgroup starts a shell that does nothing in a group of base the
// way a sandbox is started (clone3 with CLONE_INTO_CGROUP, Linux 5.7),
// so that a kernel without it costs the per-sandbox limits, not
// run_command.
func probeCgroup(base string) error {
	g, f, err := newSandboxCgroup(base, DefaultLimits())
	if err != nil {
		return err
	}
	g.fd = f
	defer g.remove()
	cmd := exec.Command("/bin/sh", "-c", ":")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(f.Fd())}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("a process cannot be started in a cgroup of %s: %w", base, err)
	}
	return nil
}

// sandboxCgroup is one sandbox's group.
type sandboxCgroup struct {
	dir string
	fd  *os.File // the open folder bwrap is started in; closed once it is
}

// newSandboxCgroup makes a group for one sandbox in base with the
// limits l, and opens it for the sandbox's process to start in.
func newSandboxCgroup(base string, l Limits) (*sandboxCgroup, *os.File, error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	dir := filepath.Join(base, "sandbox-"+hex.EncodeToString(b[:]))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("sandbox cgroup: %w", err)
	}
	g := &sandboxCgroup{dir: dir}
	set := func(file, value string) error {
		return os.WriteFile(filepath.Join(dir, file), []byte(value), 0)
	}
	err := set("memory.max", strconv.FormatInt(l.Memory, 10))
	if err == nil {
		err = set("pids.max", strconv.Itoa(l.Processes))
	}
	if err == nil {
		// Without swap accounting the file is absent and nothing goes
		// to swap on the group's account anyway.
		if serr := set("memory.swap.max", "0"); serr != nil && !errors.Is(serr, fs.ErrNotExist) {
			err = serr
		}
	}
	var f *os.File
	if err == nil {
		f, err = os.Open(dir)
	}
	if err != nil {
		_ = g.remove()
		return nil, nil, fmt.Errorf("sandbox cgroup: %w", err)
	}
	return g, f, nil
}

// limitHit says which of the group's limits stopped something in it, if
// any: the memory limit when the kernel's OOM killer killed in the group
// or refused it memory, the process limit when a fork was refused.
func (g *sandboxCgroup) limitHit() string {
	if events(filepath.Join(g.dir, "memory.events"), "oom_kill") > 0 || events(filepath.Join(g.dir, "memory.events"), "max") > 0 {
		return LimitMemory
	}
	if events(filepath.Join(g.dir, "pids.events"), "max") > 0 {
		return LimitProcesses
	}
	return ""
}

// events is the count named key of a cgroup events file, 0 when absent.
func events(path, key string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		if k == key {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// remove kills what is left in the group and removes it. The kernel
// removes a group only once its last process has gone, which follows
// the kill within moments.
func (g *sandboxCgroup) remove() error {
	if g.fd != nil {
		_ = g.fd.Close()
	}
	_ = os.WriteFile(filepath.Join(g.dir, "cgroup.kill"), []byte("1"), 0)
	var err error
	for i := 0; i < 200; i++ {
		if err = os.Remove(g.dir); err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("remove the sandbox's cgroup %s: %w", g.dir, err)
}
