package actions_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
)

type kit struct {
	t    *testing.T
	rt   *plugin.Runtime
	ws   actions.Workspaces
	task plugin.Task
}

func newKit(t *testing.T, extra ...plugin.Action) *kit {
	t.Helper()
	st := teststore.SQLite(t)
	clk := clock.NewFake(time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC))
	k := &kit{t: t, ws: actions.Workspaces{Root: t.TempDir()}}
	k.rt = plugin.New(plugin.Options{Store: st, Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	tools := append(actions.Tools(actions.ToolConfig{Workspaces: k.ws, RunCommand: true, Sandbox: &actions.Sandbox{Timeout: 5 * time.Second}}), extra...)
	if err := k.rt.Register(&plugin.Plugin{Name: "tools", Actions: tools}); err != nil {
		t.Fatal(err)
	}
	if err := k.rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	task, err := st.CreateTask(context.Background(), plugin.NewTask{Goal: "g", RoomID: "console", RequestorID: "u1", Now: clk.Now()})
	if err != nil {
		t.Fatal(err)
	}
	k.task = task
	return k
}

// call runs a tool as the kit's task would, returning the result text
// on success and the refusal sentence otherwise.
func (k *kit) call(name string, params any) (ok bool, text string) {
	k.t.Helper()
	raw, _ := json.Marshal(params)
	task := k.task
	res, err := k.rt.RunAction(context.Background(), name, &plugin.Call{Task: &task, Params: raw})
	if err != nil {
		k.t.Fatalf("%s: unexpected error %v", name, err)
	}
	if !res.Success {
		return false, res.Error
	}
	return true, res.Text
}

func TestFilesStayInTheWorkspace(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("top secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if ok, text := k.call("write_file", map[string]string{"path": "src/a.txt", "content": "hello"}); !ok {
		t.Fatal(text)
	}
	if ok, text := k.call("read_file", map[string]string{"path": "src/./a.txt"}); !ok || text != "hello" {
		t.Fatalf("read back: %v %q", ok, text)
	}
	// A symlink planted inside the workspace, pointing out of it.
	dir := k.ws.Dir(k.task.Number)
	if err := os.Symlink(outside, filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "secret-link")); err != nil {
		t.Fatal(err)
	}
	attempts := []struct {
		tool string
		path string
	}{
		{"read_file", "../../secret.txt"},
		{"read_file", secret},
		{"read_file", "escape/secret.txt"},
		{"read_file", "secret-link"},
		{"read_file", "src/../../x"},
		{"write_file", "../evil.txt"},
		{"write_file", "escape/evil.txt"},
		{"write_file", "/tmp/evil.txt"},
		{"write_file", "~/evil.txt"},
		{"list_files", "escape"},
		{"list_files", ".."},
	}
	for _, a := range attempts {
		params := map[string]string{"path": a.path}
		if a.tool == "write_file" {
			params["content"] = "pwned"
		}
		ok, text := k.call(a.tool, params)
		if ok || strings.Contains(text, "top secret") {
			t.Errorf("%s %q was allowed: %q", a.tool, a.path, text)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "evil.txt")); err == nil {
		t.Fatal("a file was written outside the workspace")
	}
	if data, _ := os.ReadFile(secret); string(data) != "top secret" {
		t.Fatal("the file outside the workspace changed")
	}
	ok, text := k.call("list_files", map[string]string{})
	if !ok || !strings.Contains(text, "src/a.txt (5 bytes)") || !strings.Contains(text, "escape (link)") {
		t.Fatalf("list: %q", text)
	}
}

func TestFileToolRefusals(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	cases := []struct {
		tool   string
		params any
		want   string
	}{
		{"write_file", map[string]string{"path": "a"}, "write_file needs content"},
		{"write_file", map[string]string{"path": "", "content": "x"}, "the path is empty"},
		{"write_file", map[string]string{"path": "big", "content": strings.Repeat("x", actions.MaxWriteBytes+1)}, "at most 1048576"},
		{"read_file", map[string]string{"path": "nope.txt"}, "Cannot read nope.txt"},
		{"read_file", []int{1}, "The parameters are not valid"},
		{"post_message", map[string]string{"text": "  "}, "post_message needs text"},
		{"ask_user", map[string]string{}, "ask_user needs a question"},
	}
	for _, c := range cases {
		if ok, text := k.call(c.tool, c.params); ok || !strings.Contains(text, c.want) {
			t.Errorf("%s %v: %v %q, want refusal %q", c.tool, c.params, ok, text, c.want)
		}
	}
	// Tools are for tasks: from chat they refuse.
	res, err := k.rt.RunAction(context.Background(), "write_file", &plugin.Call{Params: json.RawMessage(`{"path":"a","content":"b"}`)})
	if err != nil || res.Success || !strings.Contains(res.Error, "cannot be used from chat") {
		t.Fatalf("chat call: %+v %v", res, err)
	}
}

func TestReadFileCapsItsAnswer(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	big := strings.Repeat("y", actions.MaxReadBytes+100)
	if ok, text := k.call("write_file", map[string]string{"path": "big.txt", "content": big}); !ok {
		t.Fatal(text)
	}
	_, text := k.call("read_file", map[string]string{"path": "big.txt"})
	if len(text) > actions.MaxReadBytes+100 || !strings.Contains(text, "[truncated") {
		t.Fatalf("read %d bytes without a truncation note", len(text))
	}
}

func TestPostMessageIsWrittenWithTheIteration(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	raw, _ := json.Marshal(map[string]string{"text": "halfway there"})
	task := k.task
	res, err := k.rt.RunAction(context.Background(), "post_message", &plugin.Call{Task: &task, Params: raw})
	if err != nil || !res.Success {
		t.Fatalf("%+v %v", res, err)
	}
	if len(res.Notifications) != 1 || res.Notifications[0].Room != "console" || res.Notifications[0].Category != plugin.NotifyMessage ||
		!strings.Contains(string(res.Notifications[0].Payload), "halfway there") {
		t.Fatalf("notifications = %+v", res.Notifications)
	}
	// Nothing is in the outbox until the iteration commits.
	if n, err := k.rt.Store().Pending(context.Background()); err != nil || n != 0 {
		t.Fatalf("pending = %d, %v", n, err)
	}
}
