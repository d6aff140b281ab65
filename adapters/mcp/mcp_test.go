package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/adapters/mcp"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// roleVar, in a stdio server's configured env, makes this test binary
// that server (see TestMain) instead of running the tests.
const roleVar = "MCP_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleVar) {
	case "stdio-server":
		stdioServer()
		return
	}
	os.Exit(m.Run())
}

// sandbox is the sandbox the tests' stdio servers run in. A test that
// needs one is skipped only where bwrap cannot make one.
func sandbox(t *testing.T) *actions.Sandbox {
	t.Helper()
	sandboxCheck.once.Do(func() {
		sandboxCheck.err = (&actions.Sandbox{}).Check(context.Background())
	})
	if sandboxCheck.err != nil {
		t.Skipf("cannot test stdio servers, which run in the sandbox: %v", sandboxCheck.err)
	}
	return &actions.Sandbox{}
}

var sandboxCheck struct {
	once sync.Once
	err  error
}

// pathIn is what a tool that takes a path or an address is given.
type pathIn struct {
	Path string `json:"path"`
}

// countIn is what a tool that takes a number is given.
type countIn struct {
	N int `json:"n"`
}

// stdioServer is an MCP server on stdin and stdout with the tools "env"
// (its environment, one variable a line), "pid", "exit" (it exits at
// once, as a crashing server would), and tools that try what a hostile
// server might: "read" a file, list the processes it sees ("procs"),
// "alloc" memory, "spawn" processes, "spin" the CPU, "write" in its HOME, "dial" an
// address and "get" a URL through the proxy it is given, if any.
func stdioServer() {
	s := sdk.NewServer(&sdk.Implementation{Name: "test-stdio", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "env", Description: "the server's environment"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return text(strings.Join(os.Environ(), "\n")), nil, nil
	})
	if os.Getenv("MCP_TEST_PARENT_ENVIRON") != "" {
		sdk.AddTool(s, &sdk.Tool{Name: "parent_environ"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", os.Getppid()))
			return text(fmt.Sprintf("%s %v", env, err)), nil, nil
		})
	}
	if os.Getenv("MCP_TEST_ESCAPES") != "" {
		sdk.AddTool(s, &sdk.Tool{Name: "escape", Description: "takes memory or disk the way its input names"}, func(_ context.Context, _ *sdk.CallToolRequest, in pathIn) (*sdk.CallToolResult, any, error) {
			return text(escape(in.Path)), nil, nil
		})
	}
	sdk.AddTool(s, &sdk.Tool{Name: "pid"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return text(strconv.Itoa(os.Getpid())), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "exit"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		fmt.Fprintln(os.Stderr, "exiting as asked")
		os.Exit(3)
		return nil, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "read"}, func(_ context.Context, _ *sdk.CallToolRequest, in pathIn) (*sdk.CallToolResult, any, error) {
		b, err := os.ReadFile(in.Path)
		return text(fmt.Sprintf("%s %v", b, err)), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "procs"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		entries, err := os.ReadDir("/proc")
		var procs []string
		for _, e := range entries {
			if _, nerr := strconv.Atoi(e.Name()); nerr == nil {
				cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
				procs = append(procs, e.Name()+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
			}
		}
		return text(fmt.Sprintf("%s\n%v", strings.Join(procs, "\n"), err)), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "alloc"}, func(_ context.Context, _ *sdk.CallToolRequest, in countIn) (*sdk.CallToolResult, any, error) {
		var kept [][]byte
		for i := 0; i < in.N; i++ { // MiB by MiB, each touched
			b := make([]byte, 1<<20)
			for j := range b {
				b[j] = byte(j)
			}
			kept = append(kept, b)
		}
		return text(fmt.Sprintf("allocated %d MiB", len(kept))), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "spawn"}, func(_ context.Context, _ *sdk.CallToolRequest, in countIn) (*sdk.CallToolResult, any, error) {
		for i := 0; i < in.N; i++ {
			if err := exec.Command("sleep", "60").Start(); err != nil {
				return text(fmt.Sprintf("started %d, then: %v", i, err)), nil, nil
			}
		}
		return text(fmt.Sprintf("started %d", in.N)), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "spin"}, func(_ context.Context, _ *sdk.CallToolRequest, in countIn) (*sdk.CallToolResult, any, error) {
		// Until the process has used N ms of CPU time, however long that
		// takes on a busy machine.
		for cpuTime() < time.Duration(in.N)*time.Millisecond {
		}
		return text(fmt.Sprintf("spun %dms", in.N)), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "write"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		p := filepath.Join(os.Getenv("HOME"), "note.txt")
		err := os.WriteFile(p, []byte("kept in HOME"), 0o600)
		b, rerr := os.ReadFile(p)
		wd, _ := os.Getwd()
		return text(fmt.Sprintf("%s %v %v in %s", b, err, rerr, wd)), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "dial"}, func(_ context.Context, _ *sdk.CallToolRequest, in pathIn) (*sdk.CallToolResult, any, error) {
		c, err := net.DialTimeout("tcp", in.Path, 3*time.Second)
		if err == nil {
			c.Close()
			return text("connected"), nil, nil
		}
		return text(err.Error()), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "flood"}, func(_ context.Context, _ *sdk.CallToolRequest, in countIn) (*sdk.CallToolResult, any, error) {
		// Opens up to N connections to the proxy and holds them, until
		// 20 fail.
		u, err := url.Parse(os.Getenv("HTTP_PROXY"))
		if err != nil || u.Host == "" {
			return text("no proxy"), nil, nil
		}
		failed := 0
		for range in.N {
			c, err := net.DialTimeout("tcp", u.Host, 2*time.Second)
			if err != nil {
				if failed++; failed >= 20 {
					break
				}
				continue
			}
			floodHeld = append(floodHeld, c)
		}
		return text(fmt.Sprintf("holding %d, failed %d", len(floodHeld), failed)), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "get"}, func(_ context.Context, _ *sdk.CallToolRequest, in pathIn) (*sdk.CallToolResult, any, error) {
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}}
		resp, err := client.Get(in.Path)
		if err != nil {
			return text(err.Error()), nil, nil
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return text(fmt.Sprintf("%d %s", resp.StatusCode, body)), nil, nil
	})
	fmt.Fprintln(os.Stderr, "test stdio server ready")
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// floodHeld are the connections the flood tool holds.
var floodHeld []net.Conn

// escape tries to take 1 GiB of memory, or 50 MB of a tmpfs, past the
// sandbox's limits in the way named: "escaped" when it did, else what
// refused it.
func escape(how string) string {
	const size = 1 << 30
	touch := func(m []byte, err error) string {
		if err != nil {
			return err.Error()
		}
		for i := 0; i < len(m); i += 4096 {
			m[i] = 1
		}
		_ = unix.Munmap(m)
		return "escaped"
	}
	switch how {
	case "shared":
		return touch(unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS))
	case "memfd":
		fd, err := unix.MemfdCreate("x", 0)
		if err != nil {
			return err.Error()
		}
		defer unix.Close(fd)
		if err := unix.Ftruncate(fd, size); err != nil {
			return err.Error()
		}
		return touch(unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED))
	case "sysv":
		id, err := unix.SysvShmGet(unix.IPC_PRIVATE, size, unix.IPC_CREAT|0o600)
		if err != nil {
			return err.Error()
		}
		_, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil)
		return "escaped"
	case "namespace":
		if err := unix.Unshare(unix.CLONE_NEWUSER | unix.CLONE_NEWNS); err != nil {
			return "unshare: " + err.Error()
		}
		return "escaped"
	case "tmpfs":
		out, err := exec.Command("unshare", "-U", "-r", "-m", "sh", "-c",
			"mount -t tmpfs none /tmp && head -c 50000000 /dev/zero > /tmp/f && echo escaped").CombinedOutput()
		return fmt.Sprintf("%s%v", out, err)
	}
	return "unknown " + how
}

// cpuTime is the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// syncBuffer is a log destination the servers' goroutines share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Split(strings.TrimSpace(s.b.String()), "\n")
}

// kit is a runtime whose "mcp" plugin has started.
type kit struct {
	t   *testing.T
	rt  *plugin.Runtime
	log *syncBuffer
}

func start(t *testing.T, opts mcp.Options) *kit {
	t.Helper()
	return startLogging(t, opts, slog.LevelInfo)
}

// startLogging is start with a log of level and above, debug for the
// servers' stderr.
func startLogging(t *testing.T, opts mcp.Options, level slog.Level) *kit {
	t.Helper()
	k := &kit{t: t, log: &syncBuffer{}}
	opts.Logger = slog.New(slog.NewTextHandler(k.log, &slog.HandlerOptions{Level: level}))
	k.rt = plugin.New(plugin.Options{Logger: opts.Logger})
	if err := k.rt.Register(mcp.New(opts).Plugin()); err != nil {
		t.Fatal(err)
	}
	if err := k.rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := k.rt.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return k
}

// call runs an action as a task's tool call.
func (k *kit) call(ctx context.Context, name string, params string) (plugin.Result, error) {
	return k.rt.RunAction(ctx, name, &plugin.Call{Task: &domain.Task{Number: 1}, Params: json.RawMessage(params)})
}

func (k *kit) tools(prefix string) []string {
	var names []string
	for _, a := range k.rt.Actions() {
		if info := a.Info(); strings.HasPrefix(info.Name, prefix) {
			if !info.Tool {
				k.t.Errorf("%s is not offered to tasks", info.Name)
			}
			names = append(names, info.Name)
		}
	}
	slices.Sort(names)
	return names
}

// waitTools waits until the actions named with prefix are want.
func (k *kit) waitTools(prefix string, want ...string) {
	k.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Equal(k.tools(prefix), want) {
		if time.Now().After(deadline) {
			k.t.Fatalf("tools %s* = %q, want %q; log:\n%s", prefix, k.tools(prefix), want, strings.Join(k.log.lines(), "\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// httpServer serves an in-process go-sdk server over streamable HTTP.
func httpServer(t *testing.T, s *sdk.Server) string {
	t.Helper()
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

type echoIn struct {
	Message string `json:"message" jsonschema:"the text to echo"`
}

// webServer has "echo", "fail" (isError) and "mixed" (text around an
// image); calls counts the calls it answered.
func webServer(calls *atomic.Int32) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "test-web", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echoes a message."}, func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
		calls.Add(1)
		return text("echo: " + in.Message), nil, nil
	})
	s.AddTool(&sdk.Tool{Name: "fail", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		calls.Add(1)
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "disk full"}, &sdk.TextContent{Text: "on /srv"}}}, nil
	})
	s.AddTool(&sdk.Tool{Name: "mixed", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		calls.Add(1)
		return &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.TextContent{Text: "before"},
			&sdk.ImageContent{MIMEType: "image/png", Data: []byte("PNGDATA")},
			&sdk.TextContent{Text: "after"},
		}}, nil
	})
	return s
}
