package actions

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// asRoot says whether Taskloom runs as root, and so starts bwrap as
// SandboxUID.
func asRoot() bool { return os.Geteuid() == 0 }

// stagingDir is a directory of Taskloom's own in the temporary directory
// where the sandbox's helper binary (when it must be copied) and the
// egress proxy's socket live. It is searchable by others but not
// listable, so that the sandbox's user, started by bwrap, can reach the
// paths in it; a directory of that name that someone else owns, or that
// others may write, is not used.
func stagingDir() (string, error) {
	dir := filepath.Join(os.TempDir(), "taskloom-sandbox-"+strconv.Itoa(os.Geteuid()))
	if err := os.Mkdir(dir, 0o711); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("sandbox staging directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("sandbox staging directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o022 != 0 {
		return "", fmt.Errorf("sandbox staging directory %s is not a directory of this user's that only it may write", dir)
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return "", fmt.Errorf("sandbox staging directory: %w", err)
	}
	return dir, nil
}

var helper struct {
	mu   sync.Mutex
	path string
}

// sandboxHelper is the path of the binary bound into the sandbox as its
// helper: this process's own executable, or, when the sandbox's user
// could not read it there, a copy of it in the staging directory (named
// after its contents, so a later run of the same binary reuses it). The
// copy is made again if it went away.
func sandboxHelper() (string, error) {
	helper.mu.Lock()
	defer helper.mu.Unlock()
	if helper.path != "" {
		if _, err := os.Stat(helper.path); err == nil {
			return helper.path, nil
		}
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return "", fmt.Errorf("sandbox helper: find this executable: %w", err)
	}
	if !asRoot() || reachableByOthers(exe, 0o005) {
		helper.path = exe
		return exe, nil
	}
	path, err := copyHelper(exe)
	if err != nil {
		return "", err
	}
	helper.path = path
	return path, nil
}

func copyHelper(exe string) (string, error) {
	dir, err := stagingDir()
	if err != nil {
		return "", err
	}
	src, err := os.Open(exe)
	if err != nil {
		return "", fmt.Errorf("sandbox helper: %w", err)
	}
	defer src.Close()
	h := sha256.New()
	if _, err := io.Copy(h, src); err != nil {
		return "", fmt.Errorf("sandbox helper: read %s: %w", exe, err)
	}
	path := filepath.Join(dir, "init-"+hex.EncodeToString(h.Sum(nil))[:24])
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm() == 0o755 {
		return path, nil
	}
	if _, err := src.Seek(0, io.SeekStart); err != nil {
		return "", fmt.Errorf("sandbox helper: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "init-*.tmp")
	if err != nil {
		return "", fmt.Errorf("sandbox helper: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = io.Copy(tmp, src)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o755)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return "", fmt.Errorf("sandbox helper: copy %s: %w", exe, err)
	}
	removeOldHelpers(dir, path)
	return path, nil
}

// removeOldHelpers removes the copies of other binaries made more than a
// day ago, so that builds that came and went (tests, upgrades) do not
// pile up. A process still using one copies its binary again when it
// finds its copy gone.
func removeOldHelpers(dir, keep string) {
	old, _ := filepath.Glob(filepath.Join(dir, "init-*"))
	for _, p := range old {
		if fi, err := os.Lstat(p); err == nil && p != keep && time.Since(fi.ModTime()) > 24*time.Hour {
			os.Remove(p)
		}
	}
}

// reachableByOthers says whether a user other than the owner, in no
// group of the file's, can search every directory above path and has
// the permissions want (0o004 read, 0o001 execute/search) on path itself.
func reachableByOthers(path string, want os.FileMode) bool {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm()&want != want {
		return false
	}
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if dir == "/" || dir == "." {
			return true
		}
	}
}

// giveToSandbox makes dir and everything in it SandboxUID's, so that the
// sandbox's user may change it, after checking that user can reach it.
func giveToSandbox(dir string) error {
	if !reachableByOthers(filepath.Dir(dir), 0o001) {
		return fmt.Errorf("sandbox directory %s: the sandbox's user (uid %d) cannot reach it: a folder above it is closed to others", dir, SandboxUID)
	}
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, SandboxUID, SandboxUID)
	})
	if err != nil {
		return fmt.Errorf("sandbox directory %s: give it to the sandbox's user: %w", dir, err)
	}
	return nil
}

// scratch maps a working directory WorkDir made inside a tmpfs to the
// tmpfs's root, where the sandbox's /tmp and /dev/shm are too.
var scratch sync.Map // dir → root

// WorkDir makes a temporary directory for a command's files. Where
// Taskloom may mount file systems (as root) it is a folder of a tmpfs of
// Limits.Disk bytes, which also holds the sandbox's /tmp and /dev/shm:
// all a command can write in memory, together, is bounded by the disk
// limit; bounded says so. Remove it with RemoveWorkDir, then remove the
// directory (gone already when it was in a tmpfs).
func (s *Sandbox) WorkDir(pattern string) (dir string, bounded bool, err error) {
	root, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", false, fmt.Errorf("make the command's directory: %w", err)
	}
	if !asRoot() {
		return root, false, nil
	}
	size := s.Limits.withDefaults().Disk
	// Others may pass through the root (the sandbox's user, started by
	// bwrap, must reach work in it); its folders are the sandbox's user's.
	opts := fmt.Sprintf("size=%d,mode=0711", size)
	if err := unix.Mount("tmpfs", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		// Root without CAP_SYS_ADMIN (a container): the directory
		// stays, unbounded but for the size of each file, and the
		// sandbox makes /tmp and /dev/shm of its own.
		return root, false, nil
	}
	for _, d := range []string{"work", "tmp", "shm"} {
		p := filepath.Join(root, d)
		err := os.Mkdir(p, 0o700)
		if err == nil {
			err = os.Lchown(p, SandboxUID, SandboxUID)
		}
		if err != nil {
			_ = unix.Unmount(root, unix.MNT_DETACH)
			_ = os.Remove(root)
			return "", false, fmt.Errorf("make the command's directory: %w", err)
		}
	}
	dir = filepath.Join(root, "work")
	scratch.Store(dir, root)
	return dir, true, nil
}

// scratchOf is the tmpfs root WorkDir made dir in, or "".
func scratchOf(dir string) string {
	if root, ok := scratch.Load(dir); ok {
		return root.(string)
	}
	return ""
}

// RemoveWorkDir unmounts the tmpfs of a directory WorkDir made, when it
// is in one, and removes its mount point; the caller removes the
// directory (gone already when it was in a tmpfs).
func RemoveWorkDir(dir string) error {
	root := scratchOf(dir)
	if root == "" {
		// A directory of an earlier layout, or one that is a mount
		// itself: unmounting what is not a mount changes nothing.
		err := unix.Unmount(dir, unix.MNT_DETACH)
		if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("unmount the command's directory %s: %w", dir, err)
		}
		return nil
	}
	if err := unix.Unmount(root, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("unmount the command's directory %s: %w", root, err)
	}
	scratch.Delete(dir)
	if err := os.Remove(root); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the command's directory %s: %w", root, err)
	}
	return nil
}
