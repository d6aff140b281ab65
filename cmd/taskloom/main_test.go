package main

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"
)

// TestSignalsDrainAndExitZero builds the real binary, starts it with an
// empty environment (SQLite, demo model), waits until /healthz answers,
// and sends SIGTERM, then SIGINT to a second run: each must exit 0.
func TestSignalsDrainAndExitZero(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "taskloom")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(bin)
			cmd.Dir = t.TempDir() // the default data directory ./.taskloom lands here
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TASKLOOM_HTTP_ADDR=127.0.0.1:0"}
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			addr := make(chan string, 1)
			go func() {
				re := regexp.MustCompile(`http=http://(\S+)`)
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					if m := re.FindStringSubmatch(sc.Text()); m != nil {
						addr <- m[1]
					}
				}
			}()
			select {
			case a := <-addr:
				resp, err := http.Get("http://" + a + "/healthz")
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("healthz: %v %v", resp, err)
				}
				resp.Body.Close()
			case <-time.After(60 * time.Second):
				t.Fatal("the binary did not start serving")
			}
			if _, err := os.Stat(filepath.Join(cmd.Dir, ".taskloom", "taskloom.db")); err != nil {
				t.Fatalf("no SQLite store in ./.taskloom: %v", err)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("exit after %s: %v", sig, err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("still running 30 s after %s", sig)
			}
		})
	}
}
