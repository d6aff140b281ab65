package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/adapters/sqlite"
	"github.com/taskloom/taskloom/internal/app"
	"github.com/taskloom/taskloom/internal/testkit"
)

// TestMoveBetweenStores is the operator's move off the embedded store and
// back: SQLite → PostgreSQL → SQLite through `taskloom export` and
// `taskloom import` gives the same dump but for its header, each import
// checks clean, and an import into a store that holds tasks is refused
// and changes nothing.
func TestMoveBetweenStores(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := map[string]string{"TASKLOOM_DATA_DIR": filepath.Join(dir, "first")}
	st, err := sqlite.Open(context.Background(), filepath.Join(first["TASKLOOM_DATA_DIR"], "taskloom.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	lifeOfATask(t, st)
	st.Close()

	pg := map[string]string{"DATABASE_URL": testkit.PostgresURL(t)}
	last := map[string]string{"TASKLOOM_DATA_DIR": filepath.Join(dir, "last")}
	a, b, c := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl"), filepath.Join(dir, "c.jsonl")
	steps := []struct {
		env  map[string]string
		args []string
	}{
		{first, []string{"export", "--out", a}},
		{pg, []string{"import", "--in", a}},
		{pg, []string{"export", "--out", b}},
		{last, []string{"import", "--in", b}},
		{last, []string{"export", "--out", c}},
	}
	for _, s := range steps {
		code, out, errOut := run(t, s.env, s.args...)
		if code != 0 {
			t.Fatalf("taskloom %v: exit %d\n%s%s", s.args, code, out, errOut)
		}
		if s.args[0] == "import" && !strings.Contains(out, "checked 2 tasks: 0 with problems") {
			t.Fatalf("taskloom %v did not check clean:\n%s%s", s.args, out, errOut)
		}
	}
	body := func(path string) string {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		_, rest, _ := strings.Cut(string(raw), "\n")
		return rest
	}
	if body(a) != body(c) {
		t.Errorf("SQLite → PostgreSQL → SQLite changed the dump:\n%s\n---\n%s", body(a), body(c))
	}
	if body(a) != body(b) {
		t.Errorf("the PostgreSQL dump differs from the SQLite one it was loaded from")
	}

	code, _, errOut := run(t, pg, "import", "--in", a)
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if code != app.ExitFailed || !strings.Contains(lines[len(lines)-1], "taskloom import: the store is not empty: it holds 2 rows of tasks") {
		t.Errorf("import into a store with tasks: exit %d\n%s", code, errOut)
	}
}
