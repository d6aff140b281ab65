package postgres

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

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

// TestRoomClaimWalksTheHeads checks that a room claim reads the rooms'
// heads by their index, and each room's rows by notifications_room,
// never every pending row: its cost grows with the rooms it visits, not
// the outbox (BenchmarkRoomClaim measures it).
func TestRoomClaimWalksTheHeads(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := s.pool.Exec(ctx, `INSERT INTO notifications (room, task_number, category, payload, created_at, next_attempt_at)
SELECT 'discord:' || (g % 1000), g, CASE WHEN g % 5 = 0 THEN 'terminal' ELSE 'progress' END, '{}',
       $1::timestamptz - make_interval(secs => 50000 - g), $1::timestamptz - make_interval(secs => 50000 - g)
FROM generate_series(1, 50000) g`, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	first := pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	for name, c := range map[string]struct {
		q     string
		index string
		args  []any
	}{
		"walk":        {sqlWalkRooms, "notification_rooms_first", []any{now, first, int64(0), "", []string{}}},
		"urgent walk": {sqlWalkUrgentRooms, "notification_rooms_urgent", []any{now, first, int64(0), "", []string{}}},
		"claim": {sqlClaimRoom, "notifications_room", []any{now, "discord:1", "o", now.Add(time.Minute), 50, now, int64(1),
			false, []string{"terminal"}}},
		"head": {sqlWriteRoomHead, "notifications_room", []any{"discord:1"}},
	} {
		rows, err := s.pool.Query(ctx, "EXPLAIN "+c.q, c.args...)
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
		if !strings.Contains(text, c.index) {
			t.Errorf("the %s plan does not use %s:\n%s", name, c.index, text)
		}
		if strings.Contains(text, "Seq Scan on notifications") {
			t.Errorf("the %s plan scans every notification:\n%s", name, text)
		}
	}
	// And the claim takes the oldest room, all 50 of its rows.
	room, ns, err := s.ClaimRoom(ctx, domain.RoomClaim{Owner: "o", Now: now, Lease: time.Minute})
	if err != nil || room != "discord:1" || len(ns) != 50 {
		t.Errorf("ClaimRoom = %s with %d rows, %v; want discord:1 with 50", room, len(ns), err)
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
