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

	"golang.org/x/sys/unix"
)

// The sandbox's helper is the binary that imports this package — taskloom
// itself, or a test binary — bound read-only into the sandbox and started
// by bwrap with one of these hidden first arguments. It sets the limits
// on itself, starts the egress forwarder when the sandbox has a network,
// and then becomes the command with exec, so that the command and all it
// starts inherit the limits. The limits are set inside the sandbox, after
// bwrap made its user namespace, because the kernel counts processes
// against RLIMIT_NPROC per user namespace: each sandbox gets its own
// count, even though every sandbox runs as the same user on the host.
const (
	initArg    = "__taskloom-sandbox-init"
	forwardArg = "__taskloom-sandbox-forward"
)

// Where the helper, the proxy's socket and the forwarder's address are
// inside the sandbox.
const (
	sandboxInitPath   = "/run/taskloom/init"
	sandboxEgressSock = "/run/taskloom/egress.sock"
	sandboxProxyAddr  = "127.0.0.1:3128"
)

func init() {
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case initArg:
		os.Exit(sandboxInit(os.Args[2:]))
	case forwardArg:
		os.Exit(sandboxForward(os.Args[2:]))
	}
}

// initArgs are the helper's arguments for limits l and, when proxy is
// set, a forwarder to the egress proxy's socket at that path, followed by
// the command.
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
	proxy := ""
	for _, o := range opts {
		name, value, _ := strings.Cut(o, "=")
		if name == "proxy" {
			proxy = value
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
	if proxy != "" {
		if err := startForwarder(proxy); err != nil {
			return fail(err)
		}
	}
	return fail(syscall.Exec(path, argv, os.Environ()))
}

// startForwarder listens on the sandbox's loopback at sandboxProxyAddr
// and starts a forwarder process that hands each connection to the
// egress proxy's Unix socket. The listener is made here, before the
// command starts, so that the command never finds the port closed. The
// forwarder runs as the sandbox's user, under the same limits, and can
// reach nothing the command could not reach through the socket itself.
func startForwarder(sock string) error {
	ln, err := net.Listen("tcp", sandboxProxyAddr)
	if err != nil {
		return fmt.Errorf("egress forwarder: %w", err)
	}
	f, err := ln.(*net.TCPListener).File()
	ln.Close()
	if err != nil {
		return fmt.Errorf("egress forwarder: %w", err)
	}
	defer f.Close()
	cmd := exec.Command("/proc/self/exe", forwardArg, sock)
	cmd.ExtraFiles = []*os.File{f}
	cmd.Env = []string{}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("egress forwarder: %w", err)
	}
	// Never waited for: it ends with the sandbox.
	return nil
}

// sandboxForward is the forwarder: it accepts on the listener it was
// given as fd 3 and copies each connection to and from the Unix socket
// args[0].
func sandboxForward(args []string) int {
	if len(args) != 1 {
		return 2
	}
	ln, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		return 1
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return 1
		}
		go func() {
			defer c.Close()
			u, err := net.Dial("unix", args[0])
			if err != nil {
				return
			}
			defer u.Close()
			pipe(c, u)
		}()
	}
}

// pipe copies a to b and b to a until both directions end, passing a
// half-close on.
func pipe(a, b net.Conn) {
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(b, a)
		closeWrite(b)
		close(done)
	}()
	_, _ = io.Copy(a, b)
	closeWrite(a)
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	} else {
		_ = c.Close()
	}
}
