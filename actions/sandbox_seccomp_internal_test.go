package actions

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestNoNestedUserNamespaceWithoutTheFilter: bwrap's --disable-userns
// refuses a nested user namespace on its own, should the seccomp filter
// miss a way to ask for one. A user wants two locks on the door through
// which a command mounts a tmpfs the disk limit does not see.
func TestNoNestedUserNamespaceWithoutTheFilter(t *testing.T) {
	if _, err := LookBwrap(os.Getenv("PATH")); err != nil {
		t.Skipf("cannot test the sandbox: %v", err)
	}
	t.Parallel()
	allowAll := func() ([]unix.SockFilter, error) {
		return []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}}, nil
	}
	s := &Sandbox{Timeout: 30 * time.Second, filter: allowAll}
	dir, _, err := s.WorkDir("taskloom-userns-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = RemoveWorkDir(dir)
		os.RemoveAll(dir)
	}()
	out, err := s.Run(context.Background(), dir, `unshare -U true && echo NESTED; unshare -U -r -m true && echo MOUNTED`, 1)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.Text, "NESTED") || strings.Contains(out.Text, "MOUNTED") || !strings.Contains(out.Text, "unshare failed") {
		t.Errorf("without the seccomp filter: %q; want the nested user namespace refused", out.Text)
	}
}

// TestSeccompFilterAssembles: every jump of the filter lands, and it
// ends in a return.
func TestSeccompFilterAssembles(t *testing.T) {
	prog, err := seccompFilter()
	if err != nil {
		t.Fatal(err)
	}
	for i, in := range prog {
		if in.Code&0x07 == unix.BPF_JMP && (i+1+int(in.Jt) >= len(prog) || i+1+int(in.Jf) >= len(prog)) {
			t.Errorf("instruction %d jumps past the end", i)
		}
	}
	if last := prog[len(prog)-1]; last.Code != unix.BPF_RET|unix.BPF_K {
		t.Errorf("the filter ends in %+v, not a return", last)
	}
}
