package postgres

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskloom/taskloom/adapters/storetest"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/plugin"
)

// TestSlowFailingClaimIsNotPassedOver: a claim that meets a row changed
// since its snapshot gives it up without holding its lock, however long it
// takes to fail, so the other claims of that moment do not pass over the
// row. The turn check here sleeps 20 ms before it fails, as a descheduled
// claimer would: a claim that locked the row before failing (READ
// COMMITTED) would hold it that long, and the other workers would take the
// tasks after it, out of turn (storetest.Ledger).
func TestSlowFailingClaimIsNotPassedOver(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, testkit.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `
CREATE OR REPLACE FUNCTION taskloom_in_turn(ok BOOLEAN) RETURNS BOOLEAN
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF NOT ok THEN
        PERFORM pg_sleep(0.02);
        RAISE EXCEPTION 'out of turn, slowly' USING ERRCODE = 'TLTRN';
    END IF;
    RETURN TRUE;
END
$$`); err != nil {
		t.Fatal(err)
	}
	for _, ahead := range []bool{false, true} {
		if bad, claims := storetest.TakeTurns(t, s, 12, 6, 40, ahead); bad > 0 {
			t.Errorf("claims ahead %v: %d of %d claims were out of turn", ahead, bad, claims)
		}
	}
}

// TestLostTurnKeepsPreparedStatements: a claim that loses its turn fails
// its batch, and the connection keeps its statements prepared — pgx drops
// the statements of a failed batch from its cache and prepares them again,
// parsed and planned, which cost a ninth of the database's CPU at 16
// workers, where one claim in seven loses its turn.
func TestLostTurnKeepsPreparedStatements(t *testing.T) {
	ctx := t.Context()
	u, err := url.Parse(testkit.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("pool_max_conns", "1") // every statement on one connection
	u.RawQuery = q.Encode()
	s, err := Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, goal := range []string{"one", "two", "three"} {
		if _, err := s.CreateTask(ctx, plugin.NewTask{Goal: goal, Now: now, MaxIterations: 10, MaxStaleIterations: 10}); err != nil {
			t.Fatal(err)
		}
	}
	cl := plugin.Claim{Owner: "w", StoreClock: true, Lease: time.Minute}
	c, err := s.ClaimTask(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	iterate := func(i int) {
		t.Helper()
		_, next, err := s.UpdateTaskAndClaim(ctx, c.Number, func(cur plugin.Task) (plugin.Mutation, error) {
			return plugin.Iterated(cur, plugin.Outcome{Owner: "w", Fence: c.Fence, Now: c.LeaseExpiresAt.Add(-time.Second),
				Progress: 10 * i, Verdict: plugin.VerdictContinue, Step: plugin.Step{Action: "noop", Success: true}})
		}, cl)
		if err != nil || next.Number == 0 {
			t.Fatalf("iteration %d: next #%d, %v", i, next.Number, err)
		}
		c = next
	}
	prepared := func() map[string]time.Time {
		t.Helper()
		rows, err := s.pool.Query(ctx, `SELECT statement, prepare_time FROM pg_prepared_statements`)
		if err != nil {
			t.Fatal(err)
		}
		m, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (struct {
			q  string
			at time.Time
		}, error) {
			var v struct {
				q  string
				at time.Time
			}
			return v, r.Scan(&v.q, &v.at)
		})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]time.Time{}
		for _, v := range m {
			out[v.q] = v.at
		}
		return out
	}
	iterate(1)
	before := prepared()
	// The next turn check fails once.
	if _, err := s.pool.Exec(ctx, `
CREATE SEQUENCE turn_once;
CREATE OR REPLACE FUNCTION taskloom_in_turn(ok BOOLEAN) RETURNS BOOLEAN
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF nextval('turn_once') = 1 THEN
        RAISE EXCEPTION 'lost a turn' USING ERRCODE = 'TLTRN';
    END IF;
    RETURN TRUE;
END
$$`); err != nil {
		t.Fatal(err)
	}
	iterate(2)
	var lost int64
	if err := s.pool.QueryRow(ctx, `SELECT last_value FROM turn_once`).Scan(&lost); err != nil || lost < 2 {
		t.Fatalf("the turn check ran %d times (%v), want the lost turn and its retry", lost, err)
	}
	after := prepared()
	kept := 0
	for q, at := range before {
		if !strings.Contains(q, "'claimed'") && !strings.Contains(q, "INSERT INTO task_steps") {
			continue
		}
		kept++
		if !after[q].Equal(at) {
			t.Errorf("prepared at %v, then %v after the lost turn: %.120q", at, after[q], q)
		}
	}
	if kept != 2 {
		t.Errorf("%d of the iteration's claim and write statements prepared on the connection, want 2: %d statements", kept, len(before))
	}
}
