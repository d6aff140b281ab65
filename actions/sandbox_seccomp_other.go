//go:build !amd64 && !arm64

package actions

// No seccomp filter is written for this architecture: the sandbox is not
// made (seccompFilter says why), and run_command is not offered.
const (
	auditArch = 0
	x32Bit    = 0
)

var archRefusedSyscalls = []uint32{}
