package actions_test

import (
	"bytes"
	"context"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// TestImportWorkspaces: the workspace directories of an earlier version
// move into the store once, a file the task has already is kept, and what
// is not a file of the task (a link, a file over the limit) stays out.
func TestImportWorkspaces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := teststore.SQLite(t)
	now := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	var tasks []domain.Task
	for _, goal := range []string{"one", "two", "three"} {
		task, err := st.CreateTask(ctx, domain.NewTask{Goal: goal, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, task)
	}
	// Task 2 has written x.txt since the old version stopped.
	c, err := st.ClaimTask(ctx, domain.Claim{Owner: "w", Now: now, Lease: time.Minute})
	if err != nil || c.Number != 1 {
		t.Fatalf("claim: #%d, %v", c.Number, err)
	}
	if _, err := st.UpdateTask(ctx, 1, func(cur domain.Task) (domain.Mutation, error) { return domain.Canceled(cur, "u", "", now) }); err != nil {
		t.Fatal(err)
	}
	c, err = st.ClaimTask(ctx, domain.Claim{Owner: "w", Now: now, Lease: time.Minute})
	if err != nil || c.Number != 2 {
		t.Fatalf("claim: #%d, %v", c.Number, err)
	}
	o := domain.Outcome{Owner: "w", Fence: c.Fence, Now: now, Step: domain.Step{Action: "write_file", Success: true},
		Progress: 10, Verdict: domain.VerdictContinue, Files: []domain.FileChange{{Path: "x.txt", Data: []byte("newer")}}}
	if _, err := st.UpdateTask(ctx, 2, func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, o) }); err != nil {
		t.Fatal(err)
	}

	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret.txt")
	put := func(rel, text string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	put("task-1/notes/plan.md", "the old plan")
	put("task-1/src/a.go", "package a")
	put("task-1/empty", "")
	put("task-1/big.bin", strings.Repeat("x", domain.MaxFileBytes+1))
	if err := os.WriteFile(outside, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "task-1", "secret-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(root, "task-1", "dir-link")); err != nil {
		t.Fatal(err)
	}
	put("task-2/x.txt", "older")
	put("task-2/y.txt", "y")
	if err := os.MkdirAll(filepath.Join(root, "task-3"), 0o750); err != nil {
		t.Fatal(err)
	}
	put("task-9/orphan.txt", "no such task")
	put("task-01/odd.txt", "not a workspace name")
	put("task-3.imported/old.txt", "imported before")
	put("notes.txt", "not a workspace")

	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	ws := actions.Workspaces{Root: root}
	if err := ws.Import(ctx, st, now.Add(time.Hour), log); err != nil {
		t.Fatalf("Import: %v", err)
	}
	files := func(n int64) map[string]string {
		t.Helper()
		list, err := st.TaskFiles(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, f := range list {
			_, data, err := st.ReadTaskFile(ctx, n, f.Path)
			if err != nil {
				t.Fatal(err)
			}
			out[f.Path] = string(data)
		}
		return out
	}
	for n, want := range map[int64]map[string]string{
		1: {"notes/plan.md": "the old plan", "src/a.go": "package a", "empty": ""},
		2: {"x.txt": "newer", "y.txt": "y"},
		3: {},
	} {
		if got := files(n); !maps.Equal(got, want) {
			t.Errorf("task #%d files %q, want %q", n, got, want)
		}
	}
	for _, name := range []string{"task-1.imported", "task-2.imported", "task-3.imported.2", "task-9", "task-01", "task-3.imported"} {
		if _, err := os.Stat(filepath.Join(root, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, name := range []string{"task-1", "task-2", "task-3"} {
		if _, err := os.Stat(filepath.Join(root, name)); err == nil {
			t.Errorf("%s is still there to be imported again", name)
		}
	}
	text := logs.String()
	for _, want := range []string{
		`msg="imported the workspace of an earlier version" task=1 files=3 left_out=3`,
		`msg="imported the workspace of an earlier version" task=2 files=1 left_out=1`,
		`msg="imported the workspace of an earlier version" task=3 files=0 left_out=0`,
		`msg="a workspace of an earlier version belongs to no task: left in place" task=9`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the log lacks %q:\n%s", want, text)
		}
	}
	if n := strings.Count(text, "\n"); n != 4 {
		t.Errorf("%d log lines, want one per workspace:\n%s", n, text)
	}

	// A second start imports nothing and logs only the orphan again.
	logs.Reset()
	if err := ws.Import(ctx, st, now.Add(2*time.Hour), log); err != nil {
		t.Fatalf("Import again: %v", err)
	}
	if strings.Contains(logs.String(), "imported the workspace") {
		t.Errorf("the second start imported again:\n%s", logs.String())
	}
	if f, _, err := st.ReadTaskFile(ctx, 1, "notes/plan.md"); err != nil || !f.UpdatedAt.Equal(now.Add(time.Hour)) {
		t.Errorf("notes/plan.md: %+v, %v; want it as the first import wrote it", f, err)
	}
	// No root, no work.
	if err := (actions.Workspaces{Root: filepath.Join(root, "missing")}).Import(ctx, st, now, log); err != nil {
		t.Errorf("Import of a missing root: %v", err)
	}
}
