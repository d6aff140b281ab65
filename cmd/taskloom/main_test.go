package main

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// build builds the binary; -buildvcs=auto records the VCS revision when
// the source is a git checkout, whatever GOFLAGS says.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "taskloom")
	if out, err := exec.Command("go", "build", "-buildvcs=auto", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// TestCLIConventions runs the built binary: --version and version print
// "taskloom <version> (<revision>)" with the revision the build recorded
// (as go version -m reads it), and help, completion and the commands'
// --help exit 0.
func TestCLIConventions(t *testing.T) {
	bin := build(t)
	info, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	want := "(no VCS revision recorded)"
	if m := regexp.MustCompile(`vcs\.revision=([0-9a-f]{12})`).FindSubmatch(info); m != nil {
		want = "(" + string(m[1])
	}
	version := ""
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--version"}, want},
		{[]string{"version"}, want},
		{[]string{"--help"}, "taskloom <command> [flags]"},
		{[]string{"help", "serve"}, "Usage: taskloom serve [flags]"},
		{[]string{"serve", "--help"}, "TASKLOOM_WORKERS"},
		{[]string{"tasks", "create", "--help"}, "--strategy"},
		{[]string{"tasks", "list", "-h"}, "--status"},
		{[]string{"completion", "bash"}, "__start_taskloom"},
		{[]string{"completion", "zsh"}, "#compdef taskloom"},
		{[]string{"completion", "fish"}, "complete -c taskloom"},
	} {
		cmd := exec.Command(bin, tt.args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		out, err := cmd.Output()
		if err != nil || !strings.Contains(string(out), tt.want) {
			t.Errorf("taskloom %s: %v, want exit 0 and %q in:\n%s", strings.Join(tt.args, " "), err, tt.want, out)
		}
		if tt.args[0] == "--version" {
			version = string(out)
		} else if tt.args[0] == "version" && string(out) != version {
			t.Errorf("version says %q, --version %q", out, version)
		}
	}
	if !regexp.MustCompile(`^taskloom \S+ \(.+\)\n$`).MatchString(version) {
		t.Errorf("--version = %q, want taskloom <version> (<revision>)", version)
	}
}

// TestSignalsDrainAndExitZero builds the real binary, starts it with an
// empty environment (SQLite, demo model), waits until /healthz answers,
// and sends SIGTERM, then SIGINT to a second run: each must exit 0.
func TestSignalsDrainAndExitZero(t *testing.T) {
	bin := build(t)
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
