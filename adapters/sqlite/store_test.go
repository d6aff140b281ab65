package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/storetest"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
)

func open(t *testing.T) *Store {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "data", "taskloom.db"))
}

func openAt(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStore(t *testing.T) {
	storetest.Run(t, storetest.Stores{
		Empty: func(t *testing.T) domain.Store { return open(t) },
		Migrated: func(t *testing.T) domain.Store {
			path := filepath.Join(t.TempDir(), "taskloom.db")
			migrated.CopyTo(t, path)
			return openAt(t, path)
		},
		Exec: func(t *testing.T, s domain.Store, q string) {
			if _, err := s.(*Store).write.ExecContext(t.Context(), q); err != nil {
				t.Fatal(err)
			}
		},
	})
}

// migrated is a file migrated once, copied for each test past the
// migration tests.
var migrated = testkit.MigratedFile{Open: func(ctx context.Context, path string) (testkit.Migrator, error) {
	return Open(ctx, path)
}}

// TestClaimUsesQueueIndex checks that the queue query reads the partial
// index tasks_queue, so its cost does not grow with the number of ended
// tasks.
func TestClaimUsesQueueIndex(t *testing.T) {
	s := open(t)
	ctx := t.Context()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := s.write.ExecContext(ctx, `
WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 5000)
INSERT INTO tasks (name, goal, status, progress, max_iterations, max_stale_iterations, workspace_id,
                   created_at, completed_at, last_processed_at, event_seq)
SELECT 'Old ' || n, 'An old task', 'completed', 100, 50, 3, 'local', ?1, ?1, ?1 - n, 1 FROM i`, now.UnixMicro()); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := s.CreateTask(ctx, domain.NewTask{Goal: "Active task", Now: now}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.write.ExecContext(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	rows, err := s.read.QueryContext(ctx, "EXPLAIN QUERY PLAN "+sqlClaimPick, now.UnixMicro(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	text := strings.Join(plan, "\n")
	if !strings.Contains(text, "tasks_queue") || strings.Contains(text, "TEMP B-TREE") {
		t.Errorf("the queue query does not read tasks_queue in order:\n%s", text)
	}
	c, err := s.ClaimTask(ctx, domain.Claim{Owner: "w", Now: now, Lease: time.Minute})
	if err != nil || c.Number != 5001 {
		t.Errorf("ClaimTask = #%d, %v; want #5001", c.Number, err)
	}
}
