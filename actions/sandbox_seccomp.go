package actions

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// The sandbox's seccomp filter, given to bwrap (--seccomp) and applied
// to everything in the sandbox, the helper included. It refuses the
// calls a command never needs and that would let it out of its limits
// or its namespaces:
//
//   - namespaces and mounts: unshare, setns, clone with a namespace
//     flag, mount and the new mount API, pivot_root, chroot — a mount
//     made in a nested user namespace (a tmpfs) escapes the disk limit;
//     bwrap's --disable-userns refuses new user namespaces as well;
//   - reaching other processes or the kernel: ptrace,
//     process_vm_readv/writev, the keyrings, bpf, perf_event_open,
//     userfaultfd, io_uring (whose requests seccomp cannot see), module
//     loading, kexec, open_by_handle_at, swap, reboot, syslog, acct,
//     quotactl, a personality other than the default;
//   - memory that RLIMIT_DATA does not count and that outlives a
//     mapping: memfd_create, memfd_secret, System V shared memory
//     (shmget), and anonymous mappings that are shared or grow down
//     (mmap with MAP_SHARED|MAP_ANONYMOUS or MAP_GROWSDOWN). Shared
//     memory stays possible through files in /dev/shm, whose tmpfs the
//     disk limit bounds.
//
// Namespace and kernel calls fail with EPERM, memory with ENOMEM (so a
// program says it is out of memory, and the step names the memory
// limit), and clone3 with ENOSYS: its flags are in memory seccomp cannot
// read, and libc then falls back to clone, whose flags it can. A call
// made through another architecture's table (i386's int 0x80 or x32 on
// x86_64) kills the process, so the filter cannot be stepped around by
// calling the same call under another number.

// seccompData offsets (struct seccomp_data): nr, arch, then the
// instruction pointer and args, 64 bits each. On the little-endian
// architectures we build for, an argument's low 32 bits come first.
const (
	seccompNR   = 0
	seccompArch = 4
)

func seccompArg(i int) uint32 { return 16 + 8*uint32(i) }

// The mmap flags the filter reads (the same on x86_64 and arm64).
const (
	mapType       = 0x0f
	mapPrivate    = unix.MAP_PRIVATE
	mapAnonymous  = unix.MAP_ANONYMOUS
	mapGrowsDown  = unix.MAP_GROWSDOWN
	personaLinux  = 0
	personaQuery  = 0xffffffff
	namespaceFlag = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
		unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET
)

// refusedSyscalls fail with EPERM whatever their arguments.
var refusedSyscalls = append([]uint32{
	unix.SYS_UNSHARE, unix.SYS_SETNS,
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT,
	unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK,
	unix.SYS_MOVE_MOUNT, unix.SYS_OPEN_TREE, unix.SYS_MOUNT_SETATTR,
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD,
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT,
	unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_REBOOT, unix.SYS_SYSLOG,
	unix.SYS_ACCT, unix.SYS_QUOTACTL, unix.SYS_LOOKUP_DCOOKIE, unix.SYS_VHANGUP,
}, archRefusedSyscalls...)

// memorySyscalls fail with ENOMEM whatever their arguments.
var memorySyscalls = []uint32{unix.SYS_MEMFD_CREATE, unix.SYS_MEMFD_SECRET, unix.SYS_SHMGET}

// filter is a classic BPF program under construction, with jumps to
// labels resolved when it is done.
type filter struct {
	ins    []unix.SockFilter
	labels map[string]int
	jumps  []jump
}

type jump struct {
	at     int
	jt, jf string // "" falls through
}

func (f *filter) stmt(code uint16, k uint32) {
	f.ins = append(f.ins, unix.SockFilter{Code: code, K: k})
}

// jmp adds a conditional jump on the accumulator against k.
func (f *filter) jmp(code uint16, k uint32, jt, jf string) {
	f.jumps = append(f.jumps, jump{at: len(f.ins), jt: jt, jf: jf})
	f.stmt(unix.BPF_JMP|code|unix.BPF_K, k)
}

func (f *filter) label(name string) { f.labels[name] = len(f.ins) }

func (f *filter) load(off uint32) { f.stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, off) }

func (f *filter) ret(v uint32) { f.stmt(unix.BPF_RET|unix.BPF_K, v) }

// assemble resolves the jumps; a classic BPF jump goes forward only, at
// most 255 instructions.
func (f *filter) assemble() ([]unix.SockFilter, error) {
	off := func(from int, label string) (uint8, error) {
		if label == "" {
			return 0, nil
		}
		to, ok := f.labels[label]
		d := to - from - 1
		if !ok || d < 0 || d > 255 {
			return 0, fmt.Errorf("seccomp filter: jump from %d to %q (%d) out of reach", from, label, to)
		}
		return uint8(d), nil
	}
	for _, j := range f.jumps {
		var err error
		if f.ins[j.at].Jt, err = off(j.at, j.jt); err != nil {
			return nil, err
		}
		if f.ins[j.at].Jf, err = off(j.at, j.jf); err != nil {
			return nil, err
		}
	}
	return f.ins, nil
}

// seccompFilter is the sandbox's filter for the architecture Taskloom
// was built for, which is the one the sandbox's programs run on.
func seccompFilter() ([]unix.SockFilter, error) {
	if auditArch == 0 {
		return nil, fmt.Errorf("the sandbox has no seccomp filter for %s; it runs on x86_64 (amd64) and arm64 only", runtime.GOARCH)
	}
	f := &filter{labels: map[string]int{}}
	f.load(seccompArch)
	f.jmp(unix.BPF_JEQ, auditArch, "", "kill")
	f.load(seccompNR)
	if x32Bit != 0 {
		f.jmp(unix.BPF_JSET, x32Bit, "kill", "")
	}
	for _, nr := range refusedSyscalls {
		f.jmp(unix.BPF_JEQ, nr, "eperm", "")
	}
	for _, nr := range memorySyscalls {
		f.jmp(unix.BPF_JEQ, nr, "enomem", "")
	}
	f.jmp(unix.BPF_JEQ, unix.SYS_CLONE3, "enosys", "")
	f.jmp(unix.BPF_JEQ, unix.SYS_CLONE, "clone", "")
	f.jmp(unix.BPF_JEQ, unix.SYS_MMAP, "mmap", "")
	f.jmp(unix.BPF_JEQ, unix.SYS_PERSONALITY, "personality", "allow")

	// clone's flags are its first argument on x86_64 and arm64.
	f.label("clone")
	f.load(seccompArg(0))
	f.jmp(unix.BPF_JSET, namespaceFlag, "eperm", "allow")

	f.label("mmap")
	f.load(seccompArg(3))
	f.jmp(unix.BPF_JSET, mapGrowsDown, "enomem", "")
	f.jmp(unix.BPF_JSET, mapAnonymous, "", "allow")
	f.stmt(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, mapType)
	f.jmp(unix.BPF_JEQ, mapPrivate, "allow", "enomem")

	// Asking for the personality, or for the default one, is allowed
	// (some programs do); changing it (turning address randomization
	// off, say) is not.
	f.label("personality")
	f.load(seccompArg(0))
	f.jmp(unix.BPF_JEQ, personaQuery, "allow", "")
	f.jmp(unix.BPF_JEQ, personaLinux, "allow", "eperm")

	f.label("allow")
	f.ret(unix.SECCOMP_RET_ALLOW)
	f.label("eperm")
	f.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	f.label("enomem")
	f.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOMEM))
	f.label("enosys")
	f.ret(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	f.label("kill")
	f.ret(unix.SECCOMP_RET_KILL_PROCESS)
	return f.assemble()
}

// seccompFile is the filter as bwrap reads it from a file descriptor:
// struct sock_filter entries in the machine's byte order, to the end of
// the file. It is a pipe already written and closed at the other end;
// the caller closes it once bwrap has started.
func seccompFile(filter func() ([]unix.SockFilter, error)) (*os.File, error) {
	if filter == nil {
		filter = seccompFilter
	}
	prog, err := filter()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 0, 8*len(prog))
	for _, in := range prog {
		buf = binary.NativeEndian.AppendUint16(buf, in.Code)
		buf = append(buf, in.Jt, in.Jf)
		buf = binary.NativeEndian.AppendUint32(buf, in.K)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	defer w.Close()
	// A pipe holds 64 KiB; the filter is a few hundred bytes.
	if _, err := w.Write(buf); err != nil {
		r.Close()
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	return r, nil
}
