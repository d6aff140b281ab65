package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskloom/taskloom/adapters/sqlstore"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
)

// sent records the statements and round trips a pool's connections send.
type sent struct {
	mu         sync.Mutex
	statements []string
	trips      int
}

func (r *sent) add(sql string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.statements = append(r.statements, strings.Join(strings.Fields(sql), " "))
}

func (r *sent) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.add(d.SQL)
	r.mu.Lock()
	r.trips++
	r.mu.Unlock()
	return ctx
}
func (r *sent) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *sent) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.mu.Lock()
	r.trips++
	r.mu.Unlock()
	return ctx
}
func (r *sent) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	r.add(d.SQL)
}
func (r *sent) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// take returns what was sent since the last take.
func (r *sent) take() (statements []string, trips int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	statements, trips = r.statements, r.trips
	r.statements, r.trips = nil, 0
	return statements, trips
}

// TestIterationStatements: an iteration of a task this store claimed is
// two statements in two round trips, as the raw claim and commit of
// docs/tasks.md are — the claim with its event (between the BEGIN and COMMIT
// of its REPEATABLE READ transaction, in the same round trip), then the
// row, the step and the event together — and the write sets only the
// columns that changed.
func TestIterationStatements(t *testing.T) {
	ctx := t.Context()
	s, rec := tracedStore(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := s.CreateTask(ctx, domain.NewTask{Goal: "one", Now: now, MaxIterations: 10, MaxStaleIterations: 10}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		rec.take()
		c, err := s.ClaimTask(ctx, domain.Claim{Owner: "w", StoreClock: true, Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		// The claim's statement, in its REPEATABLE READ transaction.
		if q, trips := rec.take(); len(q) != 4 || q[0] != sqlBeginClaim || q[1] != sqlClaimPlan || q[3] != "commit" || trips != 1 {
			t.Errorf("claim %d: %d statements in %d round trips, want BEGIN, the plan's setting, the claim and COMMIT in 1: %.300q", i+1, len(q), trips, q)
		}
		steps, err := s.RecentSteps(ctx, c.Number, 20)
		if err != nil || len(steps) != i {
			t.Fatalf("RecentSteps = %d steps, %v; want %d", len(steps), err, i)
		}
		if _, err := s.UpdateTask(ctx, c.Number, func(cur domain.Task) (domain.Mutation, error) {
			return domain.Iterated(cur, domain.Outcome{Owner: "w", Fence: c.Fence, Now: c.LeaseExpiresAt.Add(-time.Second),
				Progress: 10 * (i + 1), Verdict: domain.VerdictContinue, Step: domain.Step{Action: "noop", Success: true}})
		}); err != nil {
			t.Fatal(err)
		}
		q, trips := rec.take()
		if len(q) != 1 || trips != 1 {
			t.Fatalf("iteration %d: %d statements in %d round trips, want 1 in 1: %q", i+1, len(q), trips, q)
		}
		if !strings.Contains(q[0], "INSERT INTO task_steps") || strings.Contains(q[0], "goal =") {
			t.Errorf("iteration %d wrote %q: want the step and event with the row, and no column that did not change", i+1, q[0])
		}
	}
	if n, err := s.CountTasks(ctx, domain.TaskFilter{}); err != nil || n != 1 {
		t.Fatalf("CountTasks = %d, %v", n, err)
	}
	task, err := s.GetTask(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if task.Iteration != 3 || task.Progress != 30 || task.EventSeq != 7 {
		t.Errorf("after three iterations: iteration %d, progress %d, event_seq %d", task.Iteration, task.Progress, task.EventSeq)
	}
}

// tracedStore is a store on a fresh database whose statements and round
// trips rec records.
func tracedStore(t *testing.T) (*Store, *sent) {
	t.Helper()
	ctx := t.Context()
	cfg, err := pgxpool.ParseConfig(testkit.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	rec := &sent{}
	cfg.ConnConfig.Tracer = rec
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := &Store{pool: pool}
	s.Core = sqlstore.Core{D: s}
	s.Reads = sqlstore.Reads{DB: poolDB{pool}, SQL: readSQL}
	s.Records = sqlstore.Records{DB: poolDB{pool}, SQL: recordSQL}
	s.MemoryStore = sqlstore.NewMemoryStore(poolDB{pool}, recallSQL)
	s.Records.Wrote = s.MemoryStore.Wrote
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return s, rec
}

// TestIterationAheadStatements: a worker that claims its next task with
// each commit (UpdateTaskAndClaim) does an iteration in one round trip and
// one transaction: the claim with its event, and the write of the row,
// step and event, between BEGIN and COMMIT.
func TestIterationAheadStatements(t *testing.T) {
	ctx := t.Context()
	s, rec := tracedStore(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, goal := range []string{"one", "two"} {
		if _, err := s.CreateTask(ctx, domain.NewTask{Goal: goal, Now: now, MaxIterations: 10, MaxStaleIterations: 10}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := s.ClaimTask(ctx, domain.Claim{Owner: "w", StoreClock: true, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		steps, err := s.RecentSteps(ctx, c.Number, 20)
		if err != nil || len(steps) != i/2 {
			t.Fatalf("RecentSteps(#%d) = %d steps, %v; want %d", c.Number, len(steps), err, i/2)
		}
		rec.take()
		_, next, err := s.UpdateTaskAndClaim(ctx, c.Number, func(cur domain.Task) (domain.Mutation, error) {
			return domain.Iterated(cur, domain.Outcome{Owner: "w", Fence: c.Fence, Now: c.LeaseExpiresAt.Add(-time.Second),
				Progress: 10 * (i + 1), Verdict: domain.VerdictContinue, Step: domain.Step{Action: "noop", Success: true}})
		}, domain.Claim{Owner: "w", StoreClock: true, Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		q, trips := rec.take()
		if len(q) != 5 || q[0] != sqlBeginClaim || q[1] != sqlClaimPlan || !strings.Contains(q[2], "'claimed'") ||
			!strings.Contains(q[3], "INSERT INTO task_steps") || q[4] != "commit" || trips != 1 {
			t.Errorf("iteration %d: %d statements in %d round trips, want BEGIN, the plan's setting, the claim, the write and COMMIT in 1: %.400q", i+1, len(q), trips, q)
		}
		if next.Number == c.Number || next.Number == 0 {
			t.Fatalf("iteration %d of #%d claimed #%d, want the other task", i+1, c.Number, next.Number)
		}
		c = next
	}
	for n := int64(1); n <= 2; n++ {
		task, err := s.GetTask(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if task.Iteration != 2 || task.Progress != 30+10*int(n-1) {
			t.Errorf("#%d after two iterations each: iteration %d, progress %d", n, task.Iteration, task.Progress)
		}
	}
}

// TestFileIterationAheadStatements: an iteration that writes a file is
// still one round trip with the claim of the worker's next task: the
// commit reads none of the task's files, which migration 0021's check
// covers after the writes, in the same pipeline and in the same statement
// as the last write; a write past a limit is refused all the same, with
// nothing written.
func TestFileIterationAheadStatements(t *testing.T) {
	ctx := t.Context()
	s, rec := tracedStore(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, goal := range []string{"one", "two"} {
		if _, err := s.CreateTask(ctx, domain.NewTask{Goal: goal, Now: now, MaxIterations: 10, MaxStaleIterations: 10}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := s.ClaimTask(ctx, domain.Claim{Owner: "w", StoreClock: true, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	iterate := func(i int, files ...domain.FileChange) (domain.Task, error) {
		rec.take()
		_, next, err := s.UpdateTaskAndClaim(ctx, c.Number, func(cur domain.Task) (domain.Mutation, error) {
			return domain.Iterated(cur, domain.Outcome{Owner: "w", Fence: c.Fence, Now: c.LeaseExpiresAt.Add(-time.Second),
				Progress: 10 * (i + 1), Verdict: domain.VerdictContinue, Step: domain.Step{Action: "write_file", Success: true}, Files: files})
		}, domain.Claim{Owner: "w", StoreClock: true, Lease: time.Minute})
		return next, err
	}
	for i := range 2 {
		next, err := iterate(i, domain.FileChange{Path: "notes.md", Data: []byte("# Notes\n")})
		if err != nil {
			t.Fatal(err)
		}
		q, trips := rec.take()
		if len(q) < 5 || q[0] != sqlBeginClaim || q[1] != sqlClaimPlan || !strings.Contains(q[2], "'claimed'") || q[len(q)-1] != "commit" || trips != 1 {
			t.Errorf("iteration %d: %d statements in %d round trips, want BEGIN, the plan's setting, the claim, the writes and COMMIT in 1: %.600q", i+1, len(q), trips, q)
		}
		for _, stmt := range q {
			if strings.Contains(stmt, "FROM task_files") {
				t.Errorf("iteration %d read the task's files: %q", i+1, stmt)
			}
			// The check is folded into the file's write: one statement.
			if strings.HasPrefix(stmt, "SELECT taskloom_check_files") {
				t.Errorf("iteration %d checked the files in a statement of its own: %q", i+1, stmt)
			}
			if strings.Contains(stmt, "INSERT INTO task_files") && !strings.Contains(stmt, "taskloom_check_files") {
				t.Errorf("iteration %d wrote its file without the check: %q", i+1, stmt)
			}
		}
		if got, err := s.TaskFiles(ctx, c.Number); err != nil || len(got) != 1 || got[0].Path != "notes.md" {
			t.Fatalf("files of #%d = %v, %v; want notes.md", c.Number, got, err)
		}
		c = next
	}
	// notes.md is a file of this task: nothing may go inside it.
	if _, err := iterate(2, domain.FileChange{Path: "notes.md/inside.md", Data: []byte("x")}); !errors.Is(err, domain.ErrInvalid) ||
		!strings.Contains(err.Error(), "notes.md is a file") {
		t.Errorf("a file inside a file = %v; want ErrInvalid saying notes.md is a file", err)
	}
	if got, err := s.TaskFiles(ctx, c.Number); err != nil || len(got) != 1 {
		t.Errorf("after the refused write, files of #%d = %v, %v; want notes.md alone", c.Number, got, err)
	}
}

// TestClaimWalksTheQueueIndex: in a claim's transaction the claim reads
// the queue index in its order and stops at the head (an index scan),
// even where the planner, with no statistics of a table whose few active
// tasks were just created and committed many times over, would read every
// entry of the index — live and dead — into a bitmap and sort the rows.
func TestClaimWalksTheQueueIndex(t *testing.T) {
	ctx := t.Context()
	s, _ := tracedStore(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for range 64 {
		if _, err := s.CreateTask(ctx, domain.NewTask{Goal: "one", Now: now, MaxIterations: 10, MaxStaleIterations: 10}); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 { // the commits of 640 iterations, each moving its task to the back of the queue
		if _, err := s.pool.Exec(ctx, `UPDATE tasks SET last_processed_at = clock_timestamp()`); err != nil {
			t.Fatal(err)
		}
	}
	plan := func(settings ...string) string {
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		for _, q := range settings {
			if _, err := tx.Exec(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		rows, err := tx.Query(ctx, "EXPLAIN "+sqlClaimWithEventOnStoreClock, "w", time.Minute, int64(eventFloorSpace))
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(lines, "\n")
	}
	if p := plan(sqlClaimPlan); !strings.Contains(p, "Index Scan using tasks_queue") || strings.Contains(p, "Bitmap") {
		t.Errorf("the claim's plan in its transaction does not walk tasks_queue in order:\n%s", p)
	}
	t.Logf("without %q:\n%s", sqlClaimPlan, plan())
}

// TestNotifyingIterationStatements: an iteration of a task in a room that
// posts there (a progress update, a tool's message) still writes the row,
// its step and its event as one statement, with only the columns that
// changed: the notifications' inserts go ahead of it, in the same round
// trip, rather than sending the row on its own with every column.
func TestNotifyingIterationStatements(t *testing.T) {
	ctx := t.Context()
	s, rec := tracedStore(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := s.CreateTask(ctx, domain.NewTask{Goal: "one", Now: now, MaxIterations: 10, MaxStaleIterations: 10,
		Platform: "console", RoomID: "console"}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		c, err := s.ClaimTask(ctx, domain.Claim{Owner: "w", StoreClock: true, Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		rec.take()
		if _, err := s.UpdateTask(ctx, c.Number, func(cur domain.Task) (domain.Mutation, error) {
			return domain.Iterated(cur, domain.Outcome{Owner: "w", Fence: c.Fence, Now: c.LeaseExpiresAt.Add(-time.Second),
				Progress: 10 * (i + 1), Verdict: domain.VerdictContinue, Step: domain.Step{Action: "post", Success: true},
				Notifications: []domain.Notification{
					{Category: domain.NotifyMessage, Payload: []byte(fmt.Sprintf(`{"text":"first %d"}`, i))},
					{Category: domain.NotifyMessage, Payload: []byte(fmt.Sprintf(`{"text":"second %d"}`, i))}}})
		}); err != nil {
			t.Fatal(err)
		}
		q, trips := rec.take()
		var enqueued, rows int
		for _, stmt := range q {
			if strings.Contains(stmt, "INSERT INTO notifications") {
				enqueued++
			}
			if strings.Contains(stmt, "UPDATE tasks") {
				rows++
				if !strings.Contains(stmt, "INSERT INTO task_steps") || !strings.Contains(stmt, "INSERT INTO task_events") || strings.Contains(stmt, "goal =") {
					t.Errorf("iteration %d wrote the row as %q: want it with its step and event, and no column that did not change", i+1, stmt)
				}
			}
		}
		// The iteration's notifications go as one insert of their rows.
		if enqueued != 1 || rows != 1 || trips != 1 {
			t.Errorf("iteration %d: %d inserts of notifications and %d writes of the row in %d round trips, want 1, 1 and 1: %.600q", i+1, enqueued, rows, trips, q)
		}
	}
	got, err := s.ListNotifications(ctx, "", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Every post, in the order they were asked for (IDs ascending).
	var posts []string
	for _, n := range got {
		if n.Category == domain.NotifyMessage && n.Room == "console" && n.TaskNumber == 1 {
			var p struct{ Text string }
			_ = json.Unmarshal(n.Payload, &p)
			posts = append(posts, p.Text)
		}
	}
	if want := []string{"first 0", "second 0", "first 1", "second 1"}; !slices.Equal(posts, want) {
		t.Errorf("posts to console in the outbox = %q, want %q", posts, want)
	}
}
