package mcp

import (
	"fmt"
	"syscall"
)

// undumpable makes this process undumpable (prctl PR_SET_DUMPABLE 0):
// its /proc/PID/environ, mem, maps and fd become root's alone, so a
// stdio server, running as the same user, cannot read Taskloom's
// environment — its tokens, keys and database URL — through them, nor
// attach to it. A process that starts stdio servers stays so: core dumps
// of it are off, and a debugger needs CAP_SYS_PTRACE.
func undumpable() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); errno != 0 {
		return fmt.Errorf("make the process undumpable: %w", errno)
	}
	return nil
}
