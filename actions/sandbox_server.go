package actions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ServerSpec is a long-lived server to run in the sandbox: an MCP stdio
// server, spoken to over its stdin and stdout.
type ServerSpec struct {
	// Name names the server in its directory's name and in errors.
	Name string
	// Command is the program: a path, or a name looked up in the
	// sandbox's PATH and then in LookPath.
	Command string
	Args    []string
	// Env is added to the PATH, HOME and LANG the sandbox gives (and may
	// replace them); it is all of the environment the server has.
	Env map[string]string
	// Network lets the server reach public addresses through the egress
	// proxy, as run_command does with the network allowed; without it,
	// it has no network at all.
	Network bool
	// LookPath is a PATH list where a command named without a folder is
	// looked for when the sandbox's PATH does not have it (Taskloom's
	// own PATH).
	LookPath string
}

// Server is a server's process made ready in the sandbox. Cmd is not
// started; whoever starts it sets its standard streams. Once the process
// has ended, Release undoes what was made for it on the host.
type Server struct {
	Cmd *exec.Cmd
	// Dir is the server's writable directory on the host, seen inside
	// as SandboxWorkDir, which is also its HOME.
	Dir string
	// ReadOnly are the host paths it sees read-only, besides the system.
	ReadOnly []string

	release []func() error
	door    *EgressDoor
}

// CutOff says why the egress proxy cut the server off from the network
// ("it kept opening …"), or "" when it did not.
func (s *Server) CutOff() string { return s.door.CutOff() }

// Server makes the process of a long-lived server in the sandbox, in the
// same sandbox as Run's commands, with these differences:
//
//   - its environment is PATH, HOME and LANG and its own Env, nothing of
//     Taskloom's;
//   - its working directory and HOME is a scratch directory of its own
//     (a tmpfs of Limits.Disk bytes where Taskloom may mount one),
//     removed by Release;
//   - the memory, process and file size limits hold, but not the CPU
//     time limit: a server lives for days, and its CPU time adds up over
//     all of them, so a per-process CPU limit would kill a healthy
//     server sooner or later;
//   - it has the network only when spec.Network says so, and then only
//     through Egress;
//   - no deadline: the process lives until it is stopped.
//
// The server's own files are made visible read-only (serverPaths): the
// folder of its command — a whole node_modules tree, or a Python
// virtual environment, when the command is in one — the same for the
// interpreter its script names with #!, and the files and folders its
// arguments name by absolute path. Nothing else of the host is, beyond
// the system Run's commands see.
//
// When Taskloom runs as root, the sandbox runs as SandboxUID, which
// cannot open a path under a folder closed to others (a server installed
// under /root). bwrap's --ro-bind-fd does not help: bwrap resolves the
// descriptor's path again, as the sandbox's user, because a mount cannot
// be moved across user namespaces. So Taskloom, as root, bind-mounts such
// a folder read-only into a directory of the staging folder that only
// SandboxUID may enter, and bwrap binds it from there to where the server
// expects it (stageReadOnly). Release unmounts it.
func (s *Sandbox) Server(ctx context.Context, spec ServerSpec) (*Server, error) {
	env := map[string]string{"PATH": sandboxPath, "HOME": SandboxWorkDir, "LANG": "C.UTF-8"}
	maps.Copy(env, spec.Env)
	command, err := resolveCommand(spec.Command, env["PATH"], spec.LookPath)
	if err != nil {
		return nil, fmt.Errorf("sandbox for %s: %w", spec.Name, err)
	}
	paths, err := serverPaths(command, spec.Args, env["PATH"])
	if err != nil {
		return nil, fmt.Errorf("sandbox for %s: %w", spec.Name, err)
	}
	srv := &Server{ReadOnly: paths}
	fail := func(err error) (*Server, error) {
		_ = srv.Release()
		return nil, fmt.Errorf("sandbox for %s: %w", spec.Name, err)
	}
	dir, _, err := s.WorkDir("taskloom-mcp-" + spec.Name + "-")
	if err != nil {
		return fail(err)
	}
	srv.Dir = dir
	srv.release = append(srv.release, func() error {
		if err := RemoveWorkDir(dir); err != nil {
			return err
		}
		return os.RemoveAll(dir)
	})
	var staged map[string]string
	if asRoot() {
		var closed []string
		for _, p := range paths {
			if !reachableByOthers(p, 0o005) {
				closed = append(closed, p)
			}
		}
		if len(closed) > 0 {
			var undo func() error
			staged, undo, err = stageReadOnly(closed)
			if err != nil {
				return fail(err)
			}
			srv.release = append(srv.release, undo)
		}
	}
	sb := *s
	sb.Network = spec.Network
	door, err := sb.openDoor("MCP server " + spec.Name)
	if err != nil {
		return fail(err)
	}
	if door != nil {
		srv.door = door
		srv.release = append(srv.release, door.Close)
	}
	envList := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		envList = append(envList, k+"="+env[k])
	}
	// The process lives beyond the call that starts it: it is ended by
	// closing its input and killing its process group, not by ctx.
	cmd, err := sb.Command(context.WithoutCancel(ctx), Spec{
		Dir:        dir,
		Argv:       append([]string{command}, spec.Args...),
		Env:        envList,
		ReadOnly:   paths,
		NoCPULimit: true,
		staged:     staged,
		door:       door,
	})
	if err != nil {
		return fail(err)
	}
	srv.Cmd = cmd
	srv.release = append(srv.release, func() error {
		closeExtraFiles(cmd)
		_, err := releaseCgroup(cmd)
		return err
	})
	return srv, nil
}

// Release undoes, in reverse, what was made on the host for the server:
// the staged mounts of its files and its directory. Call it once its
// process has ended; calling it again does nothing.
func (s *Server) Release() error {
	var errs []error
	for i := len(s.release) - 1; i >= 0; i-- {
		if err := s.release[i](); err != nil {
			errs = append(errs, err)
		}
	}
	s.release = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("release the sandbox: %w", err)
	}
	return nil
}

// resolveCommand is the absolute path of command: itself when it names a
// folder, else the first executable of that name in the PATH lists.
func resolveCommand(command string, paths ...string) (string, error) {
	if strings.Contains(command, "/") {
		abs, err := filepath.Abs(command)
		if err != nil {
			return "", fmt.Errorf("command %s: %w", command, err)
		}
		if err := executable(abs); err != nil {
			return "", fmt.Errorf("command %s: %w", command, err)
		}
		return abs, nil
	}
	for _, list := range paths {
		for _, dir := range filepath.SplitList(list) {
			if !filepath.IsAbs(dir) {
				continue // never a program of the working directory
			}
			if p := filepath.Join(dir, command); executable(p) == nil {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("command %s: not found in the sandbox's PATH nor Taskloom's", command)
}

// executable says why path is not an executable file, or nil.
func executable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return err
	case fi.IsDir():
		return errors.New("is a directory")
	case fi.Mode().Perm()&0o111 == 0:
		return errors.New("is not executable")
	}
	return nil
}

// serverPaths are the host paths a server started as command with args
// needs to see, besides the system: the tree of the command (as named
// and once its links are followed), of the interpreter its script names
// with #! (looked up in path for "#!/usr/bin/env NAME"), and of each
// existing file or folder its arguments name by absolute path. Paths the
// system mounts already show are left out, and so is a path inside
// another.
func serverPaths(command string, args []string, path string) ([]string, error) {
	var out []string
	add := func(p string) error {
		for _, q := range []string{p, realPath(p)} {
			fi, err := os.Stat(q)
			if err != nil {
				return err
			}
			t := pathTree(q, fi.IsDir())
			if t == "/" {
				return fmt.Errorf("%s is at the root of the file system, which is not bound into the sandbox whole; put it in a folder of its own", p)
			}
			if !systemPath(t) {
				out = append(out, t)
			}
		}
		return nil
	}
	if err := add(command); err != nil {
		return nil, fmt.Errorf("command %s: %w", command, err)
	}
	interp, err := interpreter(realPath(command), path)
	if err != nil {
		return nil, fmt.Errorf("command %s: %w", command, err)
	}
	if interp != "" {
		if err := add(interp); err != nil {
			return nil, fmt.Errorf("the interpreter of %s: %w", command, err)
		}
	}
	for _, a := range args {
		if !filepath.IsAbs(a) || filepath.Clean(a) == "/" {
			continue
		}
		if _, err := os.Stat(a); err == nil {
			if err := add(filepath.Clean(a)); err != nil {
				return nil, fmt.Errorf("argument %s: %w", a, err)
			}
		}
	}
	return outermost(out), nil
}

// realPath is p with its links followed, or p when they cannot be.
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// pathTree is the folder to bind for the file or folder p: the outermost
// node_modules above it (a Node package needs its dependencies beside
// it), a Python virtual environment whose bin it is in, or else the
// folder that holds it (or p itself, for a folder).
func pathTree(p string, isDir bool) string {
	if i := strings.Index(p+"/", "/node_modules/"); i >= 0 {
		return p[:i+len("/node_modules")]
	}
	dir := p
	if !isDir {
		dir = filepath.Dir(p)
	}
	if filepath.Base(dir) == "bin" {
		if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "pyvenv.cfg")); err == nil {
			return filepath.Dir(dir)
		}
	}
	return dir
}

// systemPath says whether p is already in the sandbox through the system
// mounts (or is a file system the sandbox makes its own).
func systemPath(p string) bool {
	for _, root := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/dev", "/sys"} {
		if within(p, root) {
			return true
		}
	}
	return false
}

// within says whether p is root or inside it.
func within(p, root string) bool {
	return p == root || strings.HasPrefix(p, root+"/")
}

// outermost sorts paths and drops those inside another, and repeats.
func outermost(paths []string) []string {
	slices.Sort(paths)
	var out []string
	for _, p := range slices.Compact(paths) {
		if len(out) == 0 || !within(p, out[len(out)-1]) {
			out = append(out, p)
		}
	}
	return out
}

// interpreter is the program a script's #! line names, as a path: a
// name after /usr/bin/env is looked up in path, the PATH the server will
// have. It is "" for a file that is not a script.
func interpreter(script, path string) (string, error) {
	f, err := os.Open(script)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var head [512]byte
	n, _ := io.ReadFull(f, head[:])
	line, _, _ := strings.Cut(string(head[:n]), "\n")
	rest, ok := strings.CutPrefix(line, "#!")
	if !ok {
		return "", nil
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", nil
	}
	if filepath.Base(fields[0]) != "env" {
		return fields[0], nil
	}
	for _, f := range fields[1:] {
		if strings.HasPrefix(f, "-") || strings.Contains(f, "=") {
			continue // env's options (-S) and assignments
		}
		p, err := resolveCommand(f, path)
		if err != nil {
			return "", fmt.Errorf("its interpreter %s is not on the sandbox's PATH (%s)", f, path)
		}
		return p, nil
	}
	return "", nil
}

// stageReadOnly bind-mounts each of paths read-only into a new directory
// of the staging folder that belongs to SandboxUID and only it may enter
// (others cannot, though the mount table names it), and returns where
// each is, and how to undo it. It needs root's CAP_SYS_ADMIN; without it
// the error says how to install the server instead. Mounts left by a
// Taskloom that died are removed first.
func stageReadOnly(paths []string) (map[string]string, func() error, error) {
	staging, err := stagingDir()
	if err != nil {
		return nil, nil, err
	}
	removeDeadStages(staging)
	var b [8]byte
	_, _ = rand.Read(b[:])
	base := filepath.Join(staging, fmt.Sprintf("mnt-%d-%s", os.Getpid(), hex.EncodeToString(b[:])))
	if err := os.Mkdir(base, 0o700); err != nil {
		return nil, nil, fmt.Errorf("stage the server's files: %w", err)
	}
	var mounted []string
	undo := func() error {
		var errs []error
		for _, m := range mounted {
			if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
				errs = append(errs, fmt.Errorf("unmount %s: %w", m, err))
				continue
			}
			_ = os.Remove(m)
		}
		if len(errs) == 0 {
			_ = os.Remove(base)
		}
		return errors.Join(errs...)
	}
	staged := map[string]string{}
	for i, p := range paths {
		target := filepath.Join(base, strconv.Itoa(i))
		if err := stageOne(p, target); err != nil {
			_ = undo()
			return nil, nil, fmt.Errorf("the sandbox's user (uid %d) cannot read %s (a folder above it is closed to others), and it could not be bound in for that user: %w; install the server where others may read it, such as /opt or /usr/local", SandboxUID, p, err)
		}
		mounted = append(mounted, target)
		staged[p] = target
	}
	if err := os.Lchown(base, SandboxUID, SandboxUID); err != nil {
		_ = undo()
		return nil, nil, fmt.Errorf("stage the server's files: %w", err)
	}
	return staged, undo, nil
}

// stageOne bind-mounts p read-only at target, which it makes.
func stageOne(p, target string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		err = os.Mkdir(target, 0o700)
	} else {
		err = os.WriteFile(target, nil, 0o600)
	}
	if err != nil {
		return err
	}
	if err := unix.Mount(p, target, "", unix.MS_BIND, ""); err != nil {
		_ = os.Remove(target)
		return fmt.Errorf("bind mount: %w", err)
	}
	// A bind mount takes the read-only flag only when remounted.
	if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		_ = unix.Unmount(target, unix.MNT_DETACH)
		_ = os.Remove(target)
		return fmt.Errorf("make the bind mount read-only: %w", err)
	}
	return nil
}

// removeDeadStages unmounts and removes the staged directories of
// processes that are gone. Only empty directories and mount points are
// removed, never what is under a mount still in place.
func removeDeadStages(staging string) {
	dirs, _ := filepath.Glob(filepath.Join(staging, "mnt-*"))
	for _, d := range dirs {
		pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(filepath.Base(d), "mnt-"), "-", 2)[0])
		if err != nil || pid == os.Getpid() || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue
		}
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			m := filepath.Join(d, e.Name())
			if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
				continue
			}
			_ = os.Remove(m)
		}
		_ = os.Remove(d)
	}
}
