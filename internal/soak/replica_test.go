package soak

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/taskloom/taskloom/internal/testkit"
)

// replica is one `taskloom serve` process, restarted on the same address
// and data directory after a kill.
type replica struct {
	n    int
	bin  string
	addr string
	dir  string
	env  []string
	log  *os.File

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	paused  bool
	running bool
}

func newReplica(tb testing.TB, n int, bin, dir string, env []string) *replica {
	tb.Helper()
	addr := testkit.FreeAddr(tb)
	rdir := filepath.Join(dir, fmt.Sprintf("replica%d", n))
	if err := os.MkdirAll(rdir, 0o755); err != nil {
		tb.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, fmt.Sprintf("replica%d.log", n)))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { log.Close() })
	return &replica{n: n, bin: bin, addr: addr, dir: rdir, log: log,
		env: append(env, "TASKLOOM_HTTP_ADDR="+addr, "TASKLOOM_DATA_DIR="+filepath.Join(rdir, "data"), "HOME="+rdir)}
}

// base is the replica's HTTP address.
func (r *replica) base() string { return "http://" + r.addr }

// start starts the process and waits (bounded) until it answers /readyz.
func (r *replica) start() error {
	r.mu.Lock()
	cmd := exec.Command(r.bin, "serve")
	cmd.Env = r.env
	cmd.Stdout, cmd.Stderr = r.log, r.log
	fmt.Fprintf(r.log, "=== soak: start at %s\n", time.Now().UTC().Format(time.RFC3339Nano))
	if err := cmd.Start(); err != nil {
		r.mu.Unlock()
		return err
	}
	exited := make(chan struct{})
	r.cmd, r.exited, r.paused, r.running = cmd, exited, false, true
	r.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		r.mu.Lock()
		if r.cmd == cmd {
			r.running = false
		}
		r.mu.Unlock()
		close(exited)
	}()
	client := &http.Client{Timeout: 2 * time.Second}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		select {
		case <-exited:
			return fmt.Errorf("replica %d exited at start (see %s)", r.n, r.log.Name())
		default:
		}
		resp, err := client.Get(r.base() + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return fmt.Errorf("replica %d not ready in 60 s (see %s)", r.n, r.log.Name())
}

// up says whether the replica runs and is not paused.
func (r *replica) up() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running && !r.paused
}

// pid is the process's ID (0 when it is not running).
func (r *replica) pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.running {
		return 0
	}
	return r.cmd.Process.Pid
}

func (r *replica) signal(sig syscall.Signal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.running {
		return
	}
	_ = r.cmd.Process.Signal(sig)
	switch sig {
	case syscall.SIGSTOP:
		r.paused = true
	case syscall.SIGCONT:
		r.paused = false
	}
}

// kill sends SIGKILL and waits for the process to end.
func (r *replica) kill() {
	r.mu.Lock()
	cmd, exited := r.cmd, r.exited
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	fmt.Fprintf(r.log, "=== soak: killed at %s\n", time.Now().UTC().Format(time.RFC3339Nano))
}

// stop ends the process with SIGTERM (SIGKILL after 20 s).
func (r *replica) stop() {
	r.mu.Lock()
	cmd, exited, running := r.cmd, r.exited, r.running
	r.mu.Unlock()
	if cmd == nil || !running {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGCONT)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	}
}
