package actions

import "golang.org/x/sys/unix"

// auditArch is the architecture seccomp reports for arm64's table; a
// 32-bit ARM program (compat) carries another.
const (
	auditArch = unix.AUDIT_ARCH_AARCH64
	x32Bit    = 0
)

var archRefusedSyscalls = []uint32{}
