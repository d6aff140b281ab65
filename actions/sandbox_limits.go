package actions

import (
	"fmt"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// Limits bound what one sandboxed command may use. A zero field takes its
// default (DefaultLimits).
type Limits struct {
	// Memory is the data (heap) a process may allocate, RLIMIT_DATA.
	// The address space is left alone: runtimes such as Node and Java
	// reserve far more of it than they use.
	Memory int64
	// Processes is how many processes and threads the sandbox's user may
	// have at once inside one sandbox, RLIMIT_NPROC.
	Processes int
	// FileSize is the largest file a process may write, RLIMIT_FSIZE.
	FileSize int64
	// Disk is the size of the writable working directory (when Taskloom
	// may mount a tmpfs for it) and of the sandbox's /tmp and /dev/shm.
	Disk int64
	// CPU is the processor time each process may use, RLIMIT_CPU.
	CPU time.Duration
}

// The default limits of a sandboxed command.
const (
	DefaultMemoryLimit    = 512 << 20
	DefaultProcessLimit   = 128
	DefaultFileSizeLimit  = 64 << 20
	DefaultDiskLimit      = 256 << 20
	DefaultCPULimit       = 60 * time.Second
	minimumProcessesLimit = 8 // the helper, its forwarder and a shell need a few
)

// AddressSpaceReserve is what each process of a sandbox may map beyond
// its memory limit (RLIMIT_AS is the two together): the ranges runtimes
// reserve and never use. Measured with the smallest RLIMIT_AS each
// starts under: Python 3.11 about 70 MiB; Node 20 770 MiB, 1.3 GiB with
// a worker thread; a Go 1.26 program about 800 MiB; Java 17 4 GiB (its
// 1 GiB class space and a heap of half the address space). The address
// space counts every mapping, shared or not, so it bounds per process
// what the memory limit (RLIMIT_DATA) does not: a shared mapping of
// /dev/zero, the stack, pages copied on write into a read-only mapping.
const AddressSpaceReserve = 4 << 30

// StackLimit is the most a process's main stack may grow to
// (RLIMIT_STACK's hard limit): the stack is not counted as data.
const StackLimit = 64 << 20

// fileLimit is how many descriptors a process may have open
// (RLIMIT_NOFILE's hard limit): pipe and socket buffers are kernel
// memory that, without a cgroup, nothing else bounds.
const fileLimit = 4096

// WorstCase is the most memory one sandbox with these limits can hold,
// by arithmetic: the memory limit where it is the sandbox's total (a
// cgroup, perSandbox), else each process's heap and stack times the
// processes, plus the writable space, which is memory when it is a
// tmpfs. Mappings past these (pages copied on write into a read-only
// mapping) are bounded by the address space limit of each process, not
// counted here; docs/security.md says so.
func (l Limits) WorstCase(perSandbox bool) int64 {
	l = l.withDefaults()
	if perSandbox {
		return l.Memory
	}
	return int64(l.Processes)*(l.Memory+StackLimit) + l.Disk
}

// addressSpace is RLIMIT_AS for these limits.
func (l Limits) addressSpace() int64 { return l.Memory + AddressSpaceReserve }

// DefaultLimits are the limits a zero Limits stands for.
func DefaultLimits() Limits {
	return Limits{Memory: DefaultMemoryLimit, Processes: DefaultProcessLimit, FileSize: DefaultFileSizeLimit,
		Disk: DefaultDiskLimit, CPU: DefaultCPULimit}
}

// withDefaults fills the zero fields.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.Memory <= 0 {
		l.Memory = d.Memory
	}
	if l.Processes <= 0 {
		l.Processes = d.Processes
	}
	l.Processes = max(l.Processes, minimumProcessesLimit)
	if l.FileSize <= 0 {
		l.FileSize = d.FileSize
	}
	if l.Disk <= 0 {
		l.Disk = d.Disk
	}
	if l.CPU <= 0 {
		l.CPU = d.CPU
	}
	return l
}

// FormatBytes says a size the way the limits are configured: 512 MiB,
// 64 KiB, 1000 bytes.
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Which limit stopped a command, as Output.Limit says it.
const (
	LimitMemory    = "memory"
	LimitProcesses = "processes"
	LimitFileSize  = "file size"
	LimitDisk      = "disk"
	LimitCPU       = "cpu"
	// LimitNamespaces is the seccomp filter's and bwrap's refusal of a
	// nested namespace or a mount.
	LimitNamespaces = "namespaces"
)

// What programs print when an allocation, a fork or a write is refused.
// A limit set with setrlimit makes the call fail rather than kill the
// process, so the program's own message is all there is to go on.
var (
	memoryRefused = regexp.MustCompile(`(?i)out of memory|cannot allocate memory|memoryerror|bad_alloc|heap out of memory|allocation failed|failed to reserve`)
	forkRefused   = regexp.MustCompile(`(?i)cannot fork|fork: (retry: )?resource temporarily unavailable|fork failed|can't fork|resource temporarily unavailable`)
	diskFull      = regexp.MustCompile(`(?i)no space left on device|disk quota exceeded`)
	// A namespace or mount the sandbox refused, as unshare, mount,
	// nsenter and the like say it: the call's name and EPERM on a line.
	nestingRefused = regexp.MustCompile(`(?im)^.*\b(unshare|setns|mount|nsenter|namespaces?|pivot_root|chroot)\b.*operation not permitted.*$`)
)

// limitHit says which limit, if any, stopped a command that exited with
// code after printing text. A signal says it for file size and CPU time;
// for the rest it is the program's own complaint.
func limitHit(code int, text string) string {
	switch code {
	case 128 + int(syscall.SIGXFSZ):
		return LimitFileSize
	case 128 + int(syscall.SIGXCPU):
		return LimitCPU
	case 0:
		return ""
	}
	switch {
	case nestingRefused.MatchString(text):
		return LimitNamespaces
	case diskFull.MatchString(text):
		return LimitDisk
	case forkRefused.MatchString(text):
		return LimitProcesses
	case memoryRefused.MatchString(text):
		return LimitMemory
	}
	return ""
}

// Describe is one sentence for a task saying which limit stopped its
// command.
func (l Limits) Describe(limit string) string {
	l = l.withDefaults()
	switch limit {
	case LimitMemory:
		if CgroupLimits() {
			return fmt.Sprintf("It was stopped: the sandbox's memory limit (%s) was reached.", FormatBytes(l.Memory))
		}
		return fmt.Sprintf("It ran out of memory: the memory limit is %s a process.", FormatBytes(l.Memory))
	case LimitProcesses:
		return fmt.Sprintf("It could not start another process: the process limit is %d.", l.Processes)
	case LimitFileSize:
		return fmt.Sprintf("It was killed at the file size limit: a file may grow to %s.", FormatBytes(l.FileSize))
	case LimitDisk:
		return fmt.Sprintf("It ran out of writable space: the limit is %s.", FormatBytes(l.Disk))
	case LimitCPU:
		return fmt.Sprintf("It was killed at the CPU time limit of %s.", l.CPU)
	case LimitNamespaces:
		return "It was refused: nested namespaces and mounts are not allowed in the sandbox."
	}
	return ""
}

// String lists the limits, for a log line or a tool's description.
func (l Limits) String() string {
	l = l.withDefaults()
	return strings.Join([]string{
		"memory " + FormatBytes(l.Memory),
		fmt.Sprintf("%d processes", l.Processes),
		FormatBytes(l.FileSize) + " a file",
		FormatBytes(l.Disk) + " of writable space",
		"CPU " + l.CPU.String(),
	}, ", ")
}
