package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/plugin"
)

// BenchmarkClaim measures one claim (the queue query and its UPDATE, with
// the "claimed" event) on a table of 1,000 and of 1,000,000 tasks, 1,000
// of them active. The partial index keeps the cost flat; the plan is
// logged and checked.
//
//	go test -run XXX -bench Claim -benchtime 2000x ./adapters/postgres/
func BenchmarkClaim(b *testing.B) {
	for _, rows := range []int{1_000, 1_000_000} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, testkit.PostgresURL(b))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if err := s.Migrate(ctx); err != nil {
				b.Fatal(err)
			}
			const active = 1_000
			fill := `INSERT INTO tasks (name, goal, status, max_iterations, max_stale_iterations, created_at, completed_at, last_processed_at, event_seq)
SELECT 'task ' || g, 'goal ' || g, $1, 50, 3, now(), CASE WHEN $1 = 'completed' THEN now() END,
       CASE WHEN $1 = 'completed' THEN now() - make_interval(secs => g) END, 0
FROM generate_series(1, $2) AS g`
			if _, err := s.pool.Exec(ctx, fill, "completed", rows-active); err != nil {
				b.Fatal(err)
			}
			if _, err := s.pool.Exec(ctx, fill, "queued", active); err != nil {
				b.Fatal(err)
			}
			if _, err := s.pool.Exec(ctx, "ANALYZE tasks"); err != nil {
				b.Fatal(err)
			}
			var plan []string
			r, err := s.pool.Query(ctx, "EXPLAIN "+sqlClaimPick, time.Now())
			if err != nil {
				b.Fatal(err)
			}
			for r.Next() {
				var line string
				_ = r.Scan(&line)
				plan = append(plan, line)
			}
			r.Close()
			b.Logf("claim plan with %d rows:\n%s", rows, strings.Join(plan, "\n"))
			if !strings.Contains(strings.Join(plan, "\n"), "tasks_queue") {
				b.Fatalf("the claim does not use the partial queue index")
			}
			b.ResetTimer()
			for i := range b.N {
				now := time.Now()
				t, err := s.ClaimTask(ctx, plugin.Claim{Owner: "bench", Now: now, Lease: time.Hour})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				// Serve it so the next claim takes the next task, as the
				// queue does in production.
				_, err = s.UpdateTask(ctx, t.Number, func(cur plugin.Task) (plugin.Mutation, error) {
					return plugin.Iterated(cur, plugin.Outcome{Owner: "bench", Fence: cur.Fence, Now: now, Progress: i % 100, Verdict: plugin.VerdictContinue,
						Step: plugin.Step{Action: "noop", Success: true}})
				})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
