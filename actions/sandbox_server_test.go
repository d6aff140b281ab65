package actions_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/actions"
)

// TestServerSeesItsOwnFiles: a server installed as a Node package under
// a folder closed to others runs in the sandbox (as root, the sandbox's
// user reaches it through a mount Taskloom stages for it): it sees its
// whole node_modules tree and the folder its argument names read-only,
// and nothing else of that folder; its interpreter found with
// /usr/bin/env, its own env and a writable HOME; Release removes what
// was made for it.
func TestServerSeesItsOwnFiles(t *testing.T) {
	needBwrap(t)
	t.Parallel()
	closed := filepath.Join(t.TempDir(), "closed")
	modules := filepath.Join(closed, "node_modules")
	for _, d := range []string{filepath.Join(modules, ".bin"), filepath.Join(modules, "server", "lib")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	script := "#!/usr/bin/env sh\necho \"$(cat \"$(dirname \"$(readlink -f \"$0\")\")/lib/data.txt\") home=$HOME key=$SERVER_KEY\"\n" +
		"echo written > \"$HOME/f\" && cat \"$HOME/f\"\n" +
		"touch \"$(dirname \"$(readlink -f \"$0\")\")/new\" 2>/dev/null || echo read-only\n" +
		"ls " + closed + " 2>&1 | tr '\\n' ' '\n" +
		"cat \"$1/doc.txt\"\n"
	if err := os.WriteFile(filepath.Join(modules, "server", "main.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(modules, "server", "lib", "data.txt"), []byte("its data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(closed, "secret.db"), []byte("hunter2"), 0o600); err != nil {
		t.Fatal(err)
	}
	docs := filepath.Join(closed, "docs") // named by an argument
	if err := os.Mkdir(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(docs, "doc.txt"), []byte(" a doc"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(modules, ".bin", "server")
	if err := os.Symlink("../server/main.sh", bin); err != nil {
		t.Fatal(err)
	}

	s := &actions.Sandbox{}
	srv, err := s.Server(context.Background(), actions.ServerSpec{Name: "files", Command: bin, Args: []string{docs}, Env: map[string]string{"SERVER_KEY": "k1"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(srv.ReadOnly, []string{docs, modules}) {
		t.Errorf("read-only paths %q, want the folder named and the node_modules tree %s", srv.ReadOnly, modules)
	}
	out, err := srv.Cmd.CombinedOutput()
	if rerr := srv.Release(); rerr != nil {
		t.Errorf("release: %v", rerr)
	}
	if err != nil {
		t.Fatalf("the server: %v\n%s", err, out)
	}
	want := "its data home=/work key=k1\nwritten\nread-only\ndocs node_modules  a doc"
	if string(out) != want {
		t.Errorf("the server wrote %q, want %q", out, want)
	}
	if _, err := os.Stat(srv.Dir); !os.IsNotExist(err) {
		t.Errorf("its directory %s after release: %v", srv.Dir, err)
	}
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mounts), fmt.Sprintf("/mnt-%d-", os.Getpid())) {
		t.Errorf("a staged mount is left after release:\n%s", mounts)
	}
}

// TestServerCommandNotFound: a command that is on neither the sandbox's
// PATH nor Taskloom's is one error naming it.
func TestServerCommandNotFound(t *testing.T) {
	t.Parallel()
	_, err := (&actions.Sandbox{}).Server(context.Background(), actions.ServerSpec{Name: "x", Command: "no-such-mcp-server", LookPath: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "sandbox for x: command no-such-mcp-server: not found") {
		t.Fatalf("err = %v", err)
	}
}
