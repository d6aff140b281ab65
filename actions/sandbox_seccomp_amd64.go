package actions

import "golang.org/x/sys/unix"

// auditArch is the architecture seccomp reports for x86_64's own table;
// x32's calls carry it too, told apart by x32Bit in the number, and
// i386's (int 0x80) carry another.
const (
	auditArch = unix.AUDIT_ARCH_X86_64
	x32Bit    = 0x40000000
)

// archRefusedSyscalls are x86_64's own: port I/O.
var archRefusedSyscalls = []uint32{unix.SYS_IOPL, unix.SYS_IOPERM}
