package testkit_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskloom/taskloom/internal/testkit"
)

// TestProxyLosesCommitAnswers: through the proxy, a transaction that runs
// the statement named commits on the server while its client hears of no
// commit — with BEGIN and COMMIT, and as a pipeline committed at its
// Sync; transactions that do not match, that fail, or that come after the
// answers to lose are answered as usual.
func TestProxyLosesCommitAnswers(t *testing.T) {
	ctx := context.Background()
	proxy, pool, inTx, committed := proxiedTables(t)
	// inPipeline inserts id in one pipeline, with no BEGIN (one implicit
	// transaction, committed at its Sync).
	inPipeline := func(id int) error {
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO notes VALUES ($1)`, id)
		b.Queue(`SELECT 1`)
		return pool.SendBatch(ctx, b).Close()
	}

	proxy.LoseAnswers(2, "INSERT INTO notes")
	if err := inTx("other", 1); err != nil {
		t.Fatalf("a transaction that does not match: %v", err)
	}
	if err := inTx("notes", 1); err == nil {
		t.Fatal("a COMMIT whose answer was lost succeeded")
	}
	if err := inTx("notes", 1); err == nil {
		t.Fatal("a transaction that failed (the row is in) succeeded")
	}
	if err := inPipeline(2); err == nil {
		t.Fatal("a pipeline whose answer was lost succeeded")
	}
	if err := inTx("notes", 3); err != nil {
		t.Fatalf("after the answers to lose: %v", err)
	}
	if n := proxy.Lost(); n != 2 {
		t.Fatalf("lost %d answers, want 2", n)
	}
	if ids := committed("notes"); !slices.Equal(ids, []int{1, 2, 3}) {
		t.Fatalf("committed %v, want [1 2 3]: the server commits what the client did not hear of", ids)
	}
}

// proxiedTables makes the tables notes (id primary key) and other (id)
// and a pool that reaches them through a new proxy. inTx inserts id into
// table in a BEGIN … COMMIT transaction through the proxy; committed lists
// a table's ids, read past the proxy.
func proxiedTables(t *testing.T) (proxy *testkit.PostgresProxy, pool *pgxpool.Pool, inTx func(table string, id int) error, committed func(table string) []int) {
	t.Helper()
	ctx := context.Background()
	direct := testkit.PostgresURL(t)
	proxy, url := testkit.ProxyPostgres(t, direct)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, `CREATE TABLE notes (id int PRIMARY KEY); CREATE TABLE other (id int)`); err != nil {
		t.Fatal(err)
	}
	inTx = func(table string, id int) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO `+table+` VALUES ($1)`, id)
			return err
		})
	}
	committed = func(table string) []int {
		t.Helper()
		conn, err := pgx.Connect(ctx, direct)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		rows, _ := conn.Query(ctx, `SELECT id FROM `+table+` ORDER BY id`)
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	return proxy, pool, inTx, committed
}

// TestProxyLosesRequests: through the proxy, a statement lost on its way
// fails its client's call and commits nothing — with BEGIN and COMMIT,
// and in a pipeline after another statement of its implicit transaction;
// statements that do not match, or come after those to lose, run.
func TestProxyLosesRequests(t *testing.T) {
	ctx := context.Background()
	proxy, pool, inTx, committed := proxiedTables(t)
	inPipeline := func(id int) error {
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO other VALUES ($1)`, id)
		b.Queue(`INSERT INTO notes VALUES ($1)`, id)
		return pool.SendBatch(ctx, b).Close()
	}

	proxy.LoseRequests(2, "INSERT INTO notes")
	if err := inTx("other", 1); err != nil {
		t.Fatalf("a statement that does not match: %v", err)
	}
	if err := inTx("notes", 1); err == nil {
		t.Fatal("a statement lost on its way succeeded")
	}
	if err := inPipeline(2); err == nil {
		t.Fatal("a pipeline whose second statement was lost succeeded")
	}
	if err := inTx("notes", 3); err != nil {
		t.Fatalf("after the statements to lose: %v", err)
	}
	if n := proxy.Dropped(); n != 2 {
		t.Fatalf("lost %d statements, want 2", n)
	}
	for table, want := range map[string][]int{"notes": {3}, "other": {1}} {
		if ids := committed(table); !slices.Equal(ids, want) {
			t.Fatalf("%s holds %v, want %v: nothing of a lost statement's transaction commits", table, ids, want)
		}
	}
}
