// Package teststore opens real stores for tests: a fresh SQLite file and a
// fresh PostgreSQL database, so tests above the store run against both
// implementations. It lives apart from testkit because it imports the
// store adapters, whose own tests import testkit.
package teststore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/taskloom/taskloom/adapters/postgres"
	"github.com/taskloom/taskloom/adapters/sqlite"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
)

// Opener opens a fresh, migrated store closed at the end of the test.
type Opener func(t testing.TB) domain.Store

// SQLite opens a store in a new SQLite file: a copy of a file every
// migration was applied to once per test process (the stores' own
// conformance suites also migrate from an empty file).
func SQLite(t testing.TB) domain.Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "taskloom.db")
	sqliteTemplate.CopyTo(t, path)
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("open SQLite store: %v", err)
	}
	// Migrate finds every migration applied and prepares the store's
	// statements, as on a store that served before.
	return migrated(t, st)
}

var sqliteTemplate = testkit.MigratedFile{Open: func(ctx context.Context, path string) (testkit.Migrator, error) {
	return sqlite.Open(ctx, path)
}}

// Postgres opens a store in a new PostgreSQL database.
func Postgres(t testing.TB) domain.Store {
	t.Helper()
	return PostgresAt(t, testkit.PostgresURL(t))
}

// PostgresAt is a migrated store on the PostgreSQL database at url (from
// testkit.PostgresURL), closed when t ends: for a test that also reaches
// that database past the store.
func PostgresAt(t testing.TB, url string) domain.Store {
	t.Helper()
	st, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("open PostgreSQL store: %v", err)
	}
	return migrated(t, st)
}

func migrated(t testing.TB, st domain.Store) domain.Store {
	t.Helper()
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return st
}

// Each runs fn once per store kind, as subtests named "sqlite" and
// "postgres".
func Each(t *testing.T, fn func(t *testing.T, open Opener)) {
	t.Helper()
	for _, k := range []struct {
		name string
		open Opener
	}{{"sqlite", SQLite}, {"postgres", Postgres}} {
		t.Run(k.name, func(t *testing.T) { fn(t, k.open) })
	}
}
