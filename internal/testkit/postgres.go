package testkit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultPostgresURL is the server the tests use when TEST_DATABASE_URL is
// not set: a local PostgreSQL with trust authentication.
const DefaultPostgresURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// PostgresURL creates a fresh, empty database for t on the server named by
// TEST_DATABASE_URL (or DefaultPostgresURL), drops it when t ends, and
// returns its URL. A test that needs PostgreSQL fails, never skips, when
// the server is unreachable: a skipped store test hides broken SQL.
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv("TEST_DATABASE_URL")
	if base == "" {
		base = DefaultPostgresURL
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("TEST_DATABASE_URL %q is not a URL: %v", base, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("cannot reach PostgreSQL at %s (%v). Start the local server with "+
			"`pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`, "+
			"or set TEST_DATABASE_URL to a server where this user may create databases.",
			redact(u), err)
	}
	defer admin.Close(context.Background())

	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("test database name: %v", err)
	}
	name := "taskloom_test_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop test database %s: %v", name, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})

	db := *u
	db.Path = "/" + name
	return db.String()
}

func redact(u *url.URL) string {
	c := *u
	if _, ok := c.User.Password(); ok {
		c.User = url.UserPassword(c.User.Username(), "xxxxx")
	}
	return c.String()
}

// FillSteps writes steps from..to of task n straight into the PostgreSQL
// database at url, each a read_file with a result of 1 MiB, in one
// statement: a long task for benchmarks, made in seconds rather than by
// as many commits.
func FillSteps(tb testing.TB, url string, n int64, from, to int) {
	tb.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `INSERT INTO task_steps (task_number, iteration, action, params, result, success, progress, time)
SELECT $1, g, 'read_file', '{"path":"a.txt"}', repeat('x', 1048576), true, g % 100, now() FROM generate_series($2::int, $3::int) g`, n, from, to)
	if err != nil {
		tb.Fatal(err)
	}
}
