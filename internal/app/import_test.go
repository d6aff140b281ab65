package app_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/sqlite"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/app"
)

// TestServeImportsOldWorkspaces: `taskloom serve` moves the workspace
// directory an earlier version kept for a task into the store as it
// starts, and renames the directory so the next start leaves it.
func TestServeImportsOldWorkspaces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "taskloom.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// A paused task: the demo model does not touch it while serve runs.
	task, err := st.CreateTask(ctx, domain.NewTask{Goal: "an old task", Now: time.Now()})
	if err == nil {
		_, err = st.UpdateTask(ctx, task.Number, func(cur domain.Task) (domain.Mutation, error) {
			return domain.Paused(cur, "u1", time.Now())
		})
	}
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "workspaces", "task-1")
	if err := os.MkdirAll(old, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, "notes.md"), []byte("written by the earlier version"), 0o640); err != nil {
		t.Fatal(err)
	}

	srv := launch(t, map[string]string{"TASKLOOM_DATA_DIR": dir, "TASKLOOM_HTTP_ADDR": "127.0.0.1:0"})
	srv.stop()
	if code := srv.wait(t, app.ShutdownTimeout+5*time.Second); code != 0 {
		t.Fatalf("exit %d:\n%s", code, srv.stderr.String())
	}

	st, err = sqlite.Open(ctx, filepath.Join(dir, "taskloom.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, data, err := st.ReadTaskFile(ctx, 1, "notes.md")
	if err != nil || string(data) != "written by the earlier version" {
		t.Fatalf("task #1's notes.md in the store: %q, %v; want the old workspace's file", data, err)
	}
	if _, err := os.Stat(old + ".imported"); err != nil {
		t.Fatalf("the old directory was not renamed: %v", err)
	}
}
