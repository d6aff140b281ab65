package storetest_test

import (
	"os"
	"regexp"
	"strconv"
	"testing"
)

// firstShared is the first migration both dialects number alike. Before
// it, the same change carries different numbers in each (PostgreSQL had
// migrations SQLite did not need); those files are applied history and
// keep their names.
const firstShared = 18

var migrationName = regexp.MustCompile(`^(\d{4})_[a-z0-9_]+\.sql$`)

// From firstShared on, a change to the schema is one migration per
// dialect with the same number and name, so "migration 0019" means one
// change on either store and a reader can put the two side by side.
func TestMigrationsNumberedAlikeInBothDialects(t *testing.T) {
	pg := migrations(t, "../postgres/migrations")
	lite := migrations(t, "../sqlite/migrations")
	for name := range pg {
		if !lite[name] {
			t.Errorf("%s is a PostgreSQL migration without a SQLite one of the same number and name", name)
		}
	}
	for name := range lite {
		if !pg[name] {
			t.Errorf("%s is a SQLite migration without a PostgreSQL one of the same number and name", name)
		}
	}
}

// migrations lists the migration files in dir numbered firstShared or
// above; a file whose name is not a migration's fails the test.
func migrations(t *testing.T, dir string) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			t.Errorf("%s/%s: not a migration's name (NNNN_words.sql)", dir, e.Name())
			continue
		}
		if n, _ := strconv.Atoi(m[1]); n >= firstShared {
			out[e.Name()] = true
		}
	}
	if len(entries) == 0 {
		t.Fatalf("%s has no migrations", dir)
	}
	return out
}
