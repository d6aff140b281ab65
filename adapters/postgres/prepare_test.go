package postgres

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/taskloom/taskloom/internal/testkit"
)

// TestPreparedStatementsBounded: a connection that is sent more distinct
// statements than maxPrepared keeps at most maxPrepared of them prepared
// on the server, and every batch still runs — also one whose statements
// were deallocated to make room.
func TestPreparedStatementsBounded(t *testing.T) {
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, testkit.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	held := func() int {
		t.Helper()
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'stmt\_%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	run := func(from, n int) {
		t.Helper()
		b := &pgx.Batch{}
		for i := from; i < from+n; i++ {
			b.Queue(fmt.Sprintf("SELECT %d AS statement_%d", i, i))
		}
		if err := prepare(ctx, conn, b); err != nil {
			t.Fatal(err)
		}
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			t.Fatalf("batch of statements %d…%d: %v", from, from+n-1, err)
		}
	}
	for from := 0; from < 3*maxPrepared; from += 10 {
		run(from, 10)
		if n := held(); n > maxPrepared {
			t.Fatalf("after statements 0…%d the connection holds %d prepared statements, more than %d", from+9, n, maxPrepared)
		}
	}
	run(0, 10) // deallocated long ago
	if n := held(); n == 0 || n > maxPrepared {
		t.Fatalf("the connection holds %d prepared statements; want between 1 and %d", n, maxPrepared)
	}
}
