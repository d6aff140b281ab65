package actions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
)

type kit struct {
	t    *testing.T
	rt   *plugin.Runtime
	clk  *clock.Fake
	task domain.Task
	// files is the view of the task's files of the iteration the kit's
	// calls are part of; commit ends that iteration.
	files *domain.FileView
}

func newKit(t *testing.T, extra ...plugin.Action) *kit {
	t.Helper()
	return newKitWith(t, &actions.Sandbox{Timeout: 5 * time.Second}, extra...)
}

// newKitWith is newKit with run_command in sandbox.
func newKitWith(t *testing.T, sandbox *actions.Sandbox, extra ...plugin.Action) *kit {
	t.Helper()
	st := teststore.SQLite(t)
	clk := clock.NewFake(time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC))
	k := &kit{t: t, clk: clk}
	k.rt = plugin.New(plugin.Options{Store: st, Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	tools := append(actions.Tools(actions.ToolConfig{RunCommand: true, Sandbox: sandbox}), extra...)
	if err := k.rt.Register(&plugin.Plugin{Name: "tools", Actions: tools}); err != nil {
		t.Fatal(err)
	}
	if err := k.rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	task, err := st.CreateTask(context.Background(), domain.NewTask{Goal: "g", RoomID: "console", RequestorID: "u1", Now: clk.Now()})
	if err != nil {
		t.Fatal(err)
	}
	k.task = task
	k.files = domain.NewFileView(st, task.Number)
	return k
}

// call runs a tool as the kit's task would, returning the result text
// on success and the refusal sentence otherwise.
func (k *kit) call(name string, params any) (ok bool, text string) {
	k.t.Helper()
	res, err := k.run(name, params)
	if err != nil {
		k.t.Fatalf("%s: unexpected error %v", name, err)
	}
	if !res.Success {
		return false, res.Error
	}
	return true, res.Text
}

// run runs a tool as the kit's task would and returns its whole result.
func (k *kit) run(name string, params any) (plugin.Result, error) {
	raw, _ := json.Marshal(params)
	task := k.task
	return k.rt.RunAction(context.Background(), name, &plugin.Call{Task: &task, Params: raw, Files: k.files})
}

// commit ends the kit's iteration as the task service does — claim,
// commit the outcome with the view's changes — and starts a new one.
func (k *kit) commit() {
	k.t.Helper()
	ctx := context.Background()
	st := k.rt.Store()
	k.clk.Advance(time.Second)
	c, err := st.ClaimTask(ctx, domain.Claim{Owner: "kit", Now: k.clk.Now(), Lease: time.Minute})
	if err != nil {
		k.t.Fatal(err)
	}
	o := domain.Outcome{Owner: "kit", Fence: c.Fence, Now: k.clk.Now(), Step: domain.Step{Action: "run_command", Success: true},
		Progress: c.Progress + 1, Verdict: domain.VerdictContinue, Files: k.files.Changes()}
	if _, err := st.UpdateTask(ctx, k.task.Number, func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, o) }); err != nil {
		k.t.Fatal(err)
	}
	k.files = domain.NewFileView(st, k.task.Number)
}

// stored reads the task's files as the store has them: path → content.
func (k *kit) stored() map[string]string {
	k.t.Helper()
	ctx := context.Background()
	list, err := k.rt.Store().TaskFiles(ctx, k.task.Number)
	if err != nil {
		k.t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range list {
		_, data, err := k.rt.Store().ReadTaskFile(ctx, k.task.Number, f.Path)
		if err != nil {
			k.t.Fatal(err)
		}
		out[f.Path] = string(data)
	}
	return out
}

func TestFilesStayInTheWorkspace(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	if ok, text := k.call("write_file", map[string]string{"path": "src/a.txt", "content": "hello"}); !ok {
		t.Fatal(text)
	}
	if ok, text := k.call("read_file", map[string]string{"path": "src/./a.txt"}); !ok || text != "hello" {
		t.Fatalf("read back: %v %q", ok, text)
	}
	attempts := []struct {
		tool string
		path string
	}{
		{"read_file", "../../secret.txt"},
		{"read_file", "/etc/passwd"},
		{"read_file", "src/../../x"},
		{"read_file", "."},
		{"write_file", "../evil.txt"},
		{"write_file", "/tmp/evil.txt"},
		{"write_file", "~/evil.txt"},
		{"write_file", "src/a.txt/inside"},
		{"write_file", "src"},
		{"list_files", ".."},
		{"list_files", "/etc"},
	}
	for _, a := range attempts {
		params := map[string]string{"path": a.path}
		if a.tool == "write_file" {
			params["content"] = "pwned"
		}
		if ok, text := k.call(a.tool, params); ok {
			t.Errorf("%s %q was allowed: %q", a.tool, a.path, text)
		}
	}
	if _, err := os.Stat("/tmp/evil.txt"); err == nil {
		t.Error("a file was written on the host")
	}
	ok, text := k.call("list_files", map[string]string{})
	if !ok || text != "src/\nsrc/a.txt (5 bytes)" {
		t.Fatalf("list: %q", text)
	}
}

func TestFileToolsList(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	if ok, text := k.call("list_files", map[string]string{}); !ok || text != "the workspace is empty" {
		t.Fatalf("empty: %v %q", ok, text)
	}
	for _, p := range []string{"b.txt", "a.txt", "src/main.go", "src/pkg/x.go", "docs/readme.md"} {
		if ok, text := k.call("write_file", map[string]string{"path": p, "content": p}); !ok {
			t.Fatal(text)
		}
	}
	want := "a.txt (5 bytes)\nb.txt (5 bytes)\ndocs/\ndocs/readme.md (14 bytes)\nsrc/\nsrc/main.go (11 bytes)\nsrc/pkg/\nsrc/pkg/x.go (12 bytes)"
	if ok, text := k.call("list_files", map[string]string{}); !ok || text != want {
		t.Errorf("list_files = %q\nwant %q", text, want)
	}
	if ok, text := k.call("list_files", map[string]string{"path": "src"}); !ok || text != "src/main.go (11 bytes)\nsrc/pkg/\nsrc/pkg/x.go (12 bytes)" {
		t.Errorf("list_files src = %q", text)
	}
	if ok, text := k.call("list_files", map[string]string{"path": "a.txt"}); !ok || text != "a.txt (5 bytes)" {
		t.Errorf("list_files a.txt = %q", text)
	}
	if ok, text := k.call("list_files", map[string]string{"path": "nope"}); ok || text != "Cannot list nope: there is no such file or folder." {
		t.Errorf("list_files nope = %v %q", ok, text)
	}
	if ok, text := k.call("read_file", map[string]string{"path": "src"}); ok || text != "src is a folder; use list_files." {
		t.Errorf("read_file of a folder = %v %q", ok, text)
	}
	for i := range actions.MaxListEntries {
		k.call("write_file", map[string]string{"path": fmt.Sprintf("many/%03d", i), "content": ""})
	}
	if ok, text := k.call("list_files", map[string]string{}); !ok || !strings.HasSuffix(text, "\n[only the first 200 of 209 entries are listed]") ||
		strings.Count(text, "\n") != actions.MaxListEntries {
		t.Errorf("a long list ends %q", text[max(0, len(text)-80):])
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
	// Tools are for tasks: from chat they refuse, and outside a task's
	// iteration the file tools have no files to work on.
	task := k.task
	for _, name := range []string{"write_file", "read_file", "list_files", "run_command"} {
		params := json.RawMessage(`{"path":"a","content":"b","command":"true"}`)
		if name == "list_files" {
			params = json.RawMessage(`{"path":"a"}`)
		}
		res, err := k.rt.RunAction(context.Background(), name, &plugin.Call{Params: params})
		if err != nil || res.Success || !strings.Contains(res.Error, "cannot be used from chat") {
			t.Errorf("%s from chat: %+v %v", name, res, err)
		}
		res, err = k.rt.RunAction(context.Background(), name, &plugin.Call{Task: &task, Params: params})
		if err != nil || res.Success || res.Error != "The task's files can be reached only while one of its iterations runs." {
			t.Errorf("%s outside an iteration: %+v %v", name, res, err)
		}
	}
	if got := k.stored(); len(got) != 0 {
		t.Errorf("refused calls stored %v", got)
	}
}

// TestFileLimitsAreOneSentence: a write past a limit of docs/deploy.md gets
// one sentence back and writes nothing.
func TestFileLimitsAreOneSentence(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	mib := strings.Repeat("x", actions.MaxWriteBytes)
	for i := range 20 {
		if ok, text := k.call("write_file", map[string]string{"path": fmt.Sprintf("big/%02d", i), "content": mib}); !ok {
			t.Fatalf("file %d: %s", i, text)
		}
	}
	ok, text := k.call("write_file", map[string]string{"path": "one-more.txt", "content": "x"})
	want := "Cannot write one-more.txt: the task's files would come to 20971521 bytes; a task may keep at most 20971520 (20 MiB) in all."
	if ok || text != want {
		t.Errorf("past 20 MiB: %v %q\nwant %q", ok, text, want)
	}
	if ok, _ := k.call("read_file", map[string]string{"path": "one-more.txt"}); ok {
		t.Error("the refused file was written")
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
	if len(res.Notifications) != 1 || res.Notifications[0].Room != "console" || res.Notifications[0].Category != domain.NotifyMessage ||
		!strings.Contains(string(res.Notifications[0].Payload), "halfway there") {
		t.Fatalf("notifications = %+v", res.Notifications)
	}
	// Nothing is in the outbox until the iteration commits.
	if n, err := k.rt.Store().Pending(context.Background()); err != nil || n != 0 {
		t.Fatalf("pending = %d, %v", n, err)
	}
}
