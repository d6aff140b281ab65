package testkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TaskloomBinary is the taskloom binary the benchmarks that run it as a
// deployment does start: TASKLOOM_BENCH_BIN when set (a binary built
// elsewhere, another commit's, for a comparison in one run), else this
// tree's, built into dir.
func TaskloomBinary(tb testing.TB, dir string) string {
	tb.Helper()
	if bin := os.Getenv("TASKLOOM_BENCH_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(dir, "taskloom")
	build := exec.Command("go", "build", "-o", bin, "github.com/taskloom/taskloom/cmd/taskloom")
	if out, err := build.CombinedOutput(); err != nil {
		tb.Fatalf("build taskloom: %v\n%s", err, out)
	}
	return bin
}

// FreeAddr is a loopback address whose port was free a moment ago, for a
// child process of the test to listen on.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Serve is `taskloom serve` running as a child process of the test.
type Serve struct {
	tb      testing.TB
	cmd     *exec.Cmd
	addr    string
	logs    *syncBuffer
	mu      sync.Mutex
	stopped bool
}

// StartServe starts bin's `serve` with env (NAME=value; PATH and HOME=dir
// are added, TASKLOOM_HTTP_ADDR is set to a free loopback port) and
// waits, up to a minute, until it answers /readyz. Its standard input
// stays open and says nothing (a console, when TASKLOOM_CONSOLE=true,
// would end serve at its end). It is stopped when tb ends, if not before.
func StartServe(tb testing.TB, bin, dir string, env ...string) *Serve {
	tb.Helper()
	addr := FreeAddr(tb)
	cmd := exec.Command(bin, "serve")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}, env...)
	cmd.Env = append(cmd.Env, "TASKLOOM_HTTP_ADDR="+addr)
	s := &Serve{tb: tb, cmd: cmd, addr: addr, logs: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	in, keep, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { keep.Close() })
	cmd.Stdin = in
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	in.Close()
	tb.Cleanup(s.Stop)
	for deadline := time.Now().Add(60 * time.Second); ; {
		resp, err := http.Get(s.URL() + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			s.Stop()
			tb.Fatalf("taskloom serve not ready after 60s:\n%s", s.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// URL is the base URL of the process's HTTP server.
func (s *Serve) URL() string { return "http://" + s.addr }

// Pid is the process's id.
func (s *Serve) Pid() int { return s.cmd.Process.Pid }

// CPU is the CPU time the process has used so far (/proc/PID/stat).
func (s *Serve) CPU() time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.Pid()))
	if err != nil {
		s.tb.Fatal(err)
	}
	line := string(raw)
	f := strings.Fields(line[strings.LastIndexByte(line, ')')+1:])
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

// Logs is what the process wrote so far.
func (s *Serve) Logs() string { return s.logs.String() }

// Signal sends sig to the process.
func (s *Serve) Signal(sig syscall.Signal) {
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.tb.Fatalf("signal taskloom serve: %v", err)
	}
}

// Stop ends the process (once) with SIGTERM, as a deployment does, and
// waits for it.
func (s *Serve) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.stopped = true
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	_ = s.cmd.Wait()
}

// syncBuffer is a bytes.Buffer the process writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// InstantModel serves POST /v1/chat/completions, answering request n
// (counted from 1 as they come) after delay with answer(n) as the API
// shapes a completion, and returns its base URL. It reads each request
// whole but does not decode it: a benchmark's model runs on the cores
// `serve` and PostgreSQL use, as a real model would not, and NewOpenAI's
// fake, which decodes and checks every request as the API does, spent
// about 0.17 ms of CPU an iteration on it — a sixth of what Taskloom and
// its database spent (docs/PERFORMANCE.md, "Through the binary").
// Encoding the answer is a few microseconds; the delay (a model's
// thinking time) costs no CPU.
func InstantModel(tb testing.TB, delay time.Duration, answer func(n uint64) string) string {
	tb.Helper()
	var count atomic.Uint64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n := count.Add(1)
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		body, err := json.Marshal(map[string]any{
			"id": "chatcmpl-bench", "object": "chat.completion", "created": 1700000000, "model": "bench",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": answer(n)}}},
			"usage": map[string]any{"prompt_tokens": 2500, "completion_tokens": 40, "total_tokens": 2540},
		})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	tb.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// ChangingAnswer is an instant model's answer number n (from 1), as a
// real task's iteration goes: the task writes notes.md with content no
// earlier answer wrote, and reports progress that moves (1 to 99, never
// 100: the tasks go on).
func ChangingAnswer(n uint64) string {
	content := fmt.Sprintf("# Notes\nentry %d: still going\n", n)
	return DecisionJSON("write_file", map[string]string{"path": "notes.md", "content": content}, int(n%99)+1, "continue")
}
