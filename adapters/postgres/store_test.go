package postgres

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/storetest"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
)

func open(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.Context(), testkit.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStore(t *testing.T) {
	storetest.Run(t, storetest.Stores{
		Empty: func(t *testing.T) domain.Store { return open(t) },
		Exec: func(t *testing.T, s domain.Store, q string) {
			if _, err := s.(*Store).pool.Exec(t.Context(), q); err != nil {
				t.Fatal(err)
			}
		},
	})
}

// TestClaimUsesQueueIndex checks that the claim reads the partial index
// tasks_queue, so its cost does not grow with the number of ended tasks.
func TestClaimUsesQueueIndex(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := s.pool.Exec(ctx, `
INSERT INTO tasks (name, goal, status, progress, max_iterations, max_stale_iterations, workspace_id,
                   created_at, completed_at, last_processed_at, event_seq)
SELECT 'Old ' || i, 'An old task', 'completed', 100, 50, 3, 'local', $1::timestamptz, $1::timestamptz, $1::timestamptz - i * interval '1 second', 1
FROM generate_series(1, 5000) AS i`, now); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := s.CreateTask(ctx, domain.NewTask{Goal: "Active task", Now: now}); err != nil {
			t.Fatalf("create active task %d: %v", i, err)
		}
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE tasks`); err != nil {
		t.Fatal(err)
	}
	for name, q := range map[string]string{"pick": sqlClaimPick, "claim": sqlClaimTask} {
		args := []any{now}
		if name == "claim" {
			args = append(args, "w", now.Add(time.Minute))
		}
		rows, err := s.pool.Query(ctx, "EXPLAIN "+q, args...)
		if err != nil {
			t.Fatalf("explain %s: %v", name, err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		text := strings.Join(plan, "\n")
		if !strings.Contains(text, "tasks_queue") {
			t.Errorf("the %s plan does not use tasks_queue:\n%s", name, text)
		}
		if strings.Contains(text, "Seq Scan on tasks") {
			t.Errorf("the %s plan scans every task:\n%s", name, text)
		}
	}
	// And the claim still takes the right task.
	c, err := s.ClaimTask(ctx, domain.Claim{Owner: "w", Now: now, Lease: time.Minute})
	if err != nil || c.Number != 5001 {
		t.Errorf("ClaimTask = #%d, %v; want #5001", c.Number, err)
	}
}

// TestGenericPlans: the store's connections run prepared statements on
// generic plans (the claim and the iteration's write would be planned
// anew at every execution otherwise), unless the URL says otherwise.
func TestGenericPlans(t *testing.T) {
	ctx := t.Context()
	base := testkit.PostgresURL(t)
	for _, c := range []struct{ url, want string }{
		{base, "force_generic_plan"},
		{withParam(t, base, "plan_cache_mode", "auto"), "auto"},
	} {
		s, err := Open(ctx, c.url)
		if err != nil {
			t.Fatal(err)
		}
		var mode string
		err = s.pool.QueryRow(ctx, "SHOW plan_cache_mode").Scan(&mode)
		s.Close()
		if err != nil || mode != c.want {
			t.Errorf("plan_cache_mode on %s = %q, %v; want %q", c.url, mode, err, c.want)
		}
	}
}

// withParam is u with the query parameter k set to v.
func withParam(t *testing.T, u, k, v string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	q := p.Query()
	q.Set(k, v)
	p.RawQuery = q.Encode()
	return p.String()
}
