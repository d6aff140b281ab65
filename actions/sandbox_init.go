package actions

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The sandbox's helper is the binary that imports this package — taskloom
// itself, or a test binary — bound read-only into the sandbox and started
// by bwrap with this hidden first argument. It hands a listener over to
// the egress proxy when the sandbox has a network, sets the limits on
// itself, and then becomes the command with exec, so that the command
// and all it starts inherit the limits. The limits are set inside the sandbox, after
// bwrap made its user namespace, because the kernel counts processes
// against RLIMIT_NPROC per user namespace: each sandbox gets its own
// count, even though every sandbox runs as the same user on the host.
const initArg = "__taskloom-sandbox-init"

// Where the helper, the proxy's door and the proxy's address are inside
// the sandbox.
const (
	sandboxInitPath   = "/run/taskloom/init"
	sandboxEgressSock = "/run/taskloom/egress.sock"
	sandboxProxyAddr  = "127.0.0.1:3128"
)

func init() {
	if len(os.Args) < 2 {
		return
	}
	if os.Args[1] == initArg {
		os.Exit(sandboxInit(os.Args[2:]))
	}
}

// initArgs are the helper's arguments for limits l and, when proxy is
// set, the egress proxy's door at that path, followed by the command.
func initArgs(l Limits, cpu bool, proxy string, argv []string) []string {
	args := []string{sandboxInitPath, initArg,
		"data=" + strconv.FormatInt(l.Memory, 10),
		"as=" + strconv.FormatInt(l.addressSpace(), 10),
		"stack=" + strconv.FormatInt(StackLimit, 10),
		"nofile=" + strconv.Itoa(fileLimit),
		"nproc=" + strconv.Itoa(l.Processes),
		"fsize=" + strconv.FormatInt(l.FileSize, 10),
		"core=0",
	}
	if cpu {
		args = append(args, "cpu="+strconv.FormatInt(int64((l.CPU+999_999_999)/1_000_000_000), 10))
	}
	if proxy != "" {
		args = append(args, "proxy="+proxy)
	}
	return append(append(args, "--"), argv...)
}

// sandboxInit is the helper: it runs inside the sandbox, as the
// sandbox's user, and ends by exec'ing the command. Its own failures exit
// 126 with one line on stderr.
func sandboxInit(args []string) int {
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "taskloom sandbox: %v\n", err)
		return 126
	}
	end := slices.Index(args, "--")
	if end < 0 || end == len(args)-1 {
		return fail(errors.New("usage: limits -- command"))
	}
	opts, argv := args[:end], args[end+1:]
	// The listener is handed over before the limits are set: the
	// helper's own runtime then needs nothing under them.
	for _, o := range opts {
		if door, ok := strings.CutPrefix(o, "proxy="); ok {
			if err := handOverListener(door); err != nil {
				return fail(err)
			}
		}
	}
	// Everything that allocates is done before the limits are set: a Go
	// runtime that cannot grow its heap under a small memory limit dies.
	path := argv[0]
	if !strings.Contains(path, "/") {
		p, err := exec.LookPath(path)
		if err != nil {
			return fail(err)
		}
		path = p
	}
	// First in line for the kernel's OOM killer, before Taskloom and
	// the database, should the host run out of memory all the same. A
	// process may raise its score; without privilege it may lower it
	// back to 0, the default, never below.
	if err := os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0); err != nil {
		return fail(fmt.Errorf("set the OOM score: %w", err))
	}
	type limit struct {
		resource int
		lim      unix.Rlimit
	}
	var limits []limit
	for _, o := range opts {
		name, value, _ := strings.Cut(o, "=")
		if name == "proxy" {
			continue
		}
		n, err := strconv.ParseUint(value, 10, 64)
		if err != nil {
			return fail(fmt.Errorf("limit %s: %w", o, err))
		}
		lim := unix.Rlimit{Cur: n, Max: n}
		var resource int
		switch name {
		case "data":
			resource = unix.RLIMIT_DATA
		case "as":
			resource = unix.RLIMIT_AS
		case "stack":
			// The main stack is not data: 8 MiB, as usual, and a
			// command may raise it to n, no further.
			resource, lim.Cur = unix.RLIMIT_STACK, min(n, 8<<20)
		case "nofile":
			// Each open pipe or socket holds kernel memory no other
			// limit counts: a few thousand a process, as usual.
			var cur unix.Rlimit
			if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &cur); err == nil {
				lim.Cur = min(cur.Cur, n)
			}
			resource = unix.RLIMIT_NOFILE
		case "nproc":
			resource = unix.RLIMIT_NPROC
		case "fsize":
			resource = unix.RLIMIT_FSIZE
		case "core":
			resource = unix.RLIMIT_CORE
		case "cpu":
			// SIGXCPU at the limit, which says which limit it was; SIGKILL
			// a second later for a command that ignores it.
			resource, lim.Max = unix.RLIMIT_CPU, n+1
		default:
			return fail(fmt.Errorf("unknown limit %q", name))
		}
		limits = append(limits, limit{resource, lim})
	}
	for _, l := range limits {
		if err := unix.Setrlimit(l.resource, &l.lim); err != nil {
			return fail(fmt.Errorf("set limit %d: %w", l.resource, err))
		}
	}
	return fail(syscall.Exec(path, argv, os.Environ()))
}

// handOverListener listens on the sandbox's loopback at sandboxProxyAddr
// and hands the listening socket to Taskloom's egress proxy through the
// sandbox's door, the Unix socket at door, then waits for the proxy to
// say it has it. The proxy accepts the sandbox's connections itself from
// then on: no process of Taskloom's stays in the sandbox, under its
// limits or within the command's reach. The listener is made here, before
// the command starts, so that the command never finds the port closed:
// connections wait in its queue until the proxy accepts them.
func handOverListener(door string) error {
	ln, err := net.Listen("tcp", sandboxProxyAddr)
	if err != nil {
		return fmt.Errorf("egress proxy: listen: %w", err)
	}
	defer ln.Close()
	return handOver(door, ln.(*net.TCPListener))
}

// handOver sends ln to the egress proxy's door and waits for its answer.
func handOver(door string, ln *net.TCPListener) error {
	fail := func(err error) error { return fmt.Errorf("egress proxy: hand over the listener: %w", err) }
	raw, err := ln.SyscallConn()
	if err != nil {
		return fail(err)
	}
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: door, Net: "unix"})
	if err != nil {
		return fail(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(handoverTimeout))
	var sendErr error
	if err := raw.Control(func(fd uintptr) {
		_, _, sendErr = c.WriteMsgUnix([]byte{0}, unix.UnixRights(int(fd)), nil)
	}); err != nil {
		return fail(err)
	}
	if sendErr != nil {
		return fail(sendErr)
	}
	var ack [1]byte
	if _, err := io.ReadFull(c, ack[:]); err != nil || ack[0] != handedOver {
		return fail(errors.New("the proxy did not take it"))
	}
	return nil
}
