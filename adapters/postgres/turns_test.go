package postgres

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
)

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
		if _, err := s.CreateTask(ctx, domain.NewTask{Goal: goal, Now: now, MaxIterations: 10, MaxStaleIterations: 10}); err != nil {
			t.Fatal(err)
		}
	}
	cl := domain.Claim{Owner: "w", StoreClock: true, Lease: time.Minute}
	c, err := s.ClaimTask(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	iterate := func(i int) {
		t.Helper()
		_, next, err := s.UpdateTaskAndClaim(ctx, c.Number, func(cur domain.Task) (domain.Mutation, error) {
			return domain.Iterated(cur, domain.Outcome{Owner: "w", Fence: c.Fence, Now: c.LeaseExpiresAt.Add(-time.Second),
				Progress: 10 * i, Verdict: domain.VerdictContinue, Step: domain.Step{Action: "noop", Success: true}})
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
	// The next claim loses its turn, as when a row it reached changed
	// since its snapshot.
	if _, err := s.pool.Exec(ctx, `
CREATE SEQUENCE turn_once;
CREATE FUNCTION lose_turn_once() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF nextval('turn_once') = 1 THEN
        RAISE EXCEPTION 'lost a turn' USING ERRCODE = '40001';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER lose_turn_once BEFORE UPDATE ON tasks FOR EACH ROW
    WHEN (OLD.lease_owner = '' AND NEW.lease_owner <> '') EXECUTE FUNCTION lose_turn_once()`); err != nil {
		t.Fatal(err)
	}
	iterate(2)
	var lost int64
	if err := s.pool.QueryRow(ctx, `SELECT last_value FROM turn_once`).Scan(&lost); err != nil || lost < 2 {
		t.Fatalf("%d claims (%v), want the lost turn and its retry", lost, err)
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
