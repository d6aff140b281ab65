package tasks_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskloom/taskloom/adapters/postgres"
	"github.com/taskloom/taskloom/adapters/storetest"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/app"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/tasks"
)

// The queue benchmarks measure docs/PERFORMANCE.md on PostgreSQL, each beside the
// raw baseline in the same process and database. One command runs them
// all (with the claim latency of adapters/postgres):
//
//	go test -run XXX -bench Queue -benchtime 1x ./services/tasks/ ./adapters/postgres/
//
// Each runs a fixed amount of work whatever b.N is; -benchtime 1x runs it
// once. TASKLOOM_BENCH_ITERATIONS changes the number of iterations a
// throughput measurement takes (default 3000 per side and worker count).

// The raw baseline: the bare claim + commit SQL of docs/tasks.md in plain pgx,
// no Taskloom code, on a table with the columns, constraints and queue
// index of tasks. Claim: one statement takes the head of the queue (oldest
// last_processed_at, never-processed first, then number) with FOR UPDATE
// SKIP LOCKED, a lease and a new fence. Commit: one statement writes the
// result if the fence still matches, and gives the lease back.
const (
	rawCreate = `CREATE TABLE bench_raw (LIKE tasks INCLUDING ALL)`
	rawFill   = `INSERT INTO bench_raw (name, goal, status, max_iterations, max_stale_iterations, created_at, event_seq)
SELECT 'raw ' || g, 'raw ' || g, 'queued', 1000000, 3, now(), 0 FROM generate_series(1, $1) AS g`
	rawClaim = `
UPDATE bench_raw AS t
SET status = 'running', lease_owner = $2, lease_expires_at = $3, fence = t.fence + 1,
    started_at = COALESCE(t.started_at, $1)
FROM (SELECT number FROM bench_raw
      WHERE status IN ('queued', 'running') AND (lease_expires_at IS NULL OR lease_expires_at <= $1)
      ORDER BY last_processed_at NULLS FIRST, number
      LIMIT 1
      FOR UPDATE SKIP LOCKED) AS head
WHERE t.number = head.number
RETURNING t.number, t.fence, t.last_processed_at`
	rawCommit = `
UPDATE bench_raw
SET last_processed_at = $3, iteration = iteration + 1, progress = $4,
    lease_owner = '', lease_expires_at = NULL
WHERE number = $1 AND fence = $2`
)

// queueTasks is how many tasks a round of a throughput measurement
// serves, each from its first iteration; roundIterations how many
// iterations a round takes, so a task is some 16 iterations old at most
// and the measure does not drift with the tasks' age.
const (
	queueTasks      = 64
	roundIterations = 1000
)

// rawQueue is the raw baseline on one pool (one replica).
type rawQueue struct {
	pool *pgxpool.Pool
	led  *storetest.Ledger
}

// stepper makes the step function of one worker of owner, which reports
// whether it served a task.
type stepper func(owner string) func(context.Context) (bool, error)

// worker is the raw baseline's stepper.
func (q *rawQueue) worker(owner string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) { return q.step(ctx, owner) }
}

// step claims the head and commits it at once, as a worker does with an
// instant model. It reports whether a task was served.
func (q *rawQueue) step(ctx context.Context, owner string) (bool, error) {
	start := time.Now()
	var number, fence int64
	var key *time.Time
	err := q.pool.QueryRow(ctx, rawClaim, start, owner, start.Add(time.Minute)).Scan(&number, &fence, &key)
	if err == pgx.ErrNoRows {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("raw claim: %w", err)
	}
	if q.led != nil {
		var k time.Time
		if key != nil {
			k = *key
		}
		q.led.Claimed(number, fence, k, start, time.Now())
	}
	now := domain.UTC(time.Now())
	tag, err := q.pool.Exec(ctx, rawCommit, number, fence, now, int(fence%100))
	if err != nil {
		return false, fmt.Errorf("raw commit: %w", err)
	}
	if tag.RowsAffected() != 1 {
		return false, fmt.Errorf("raw commit of %d: fence %d lost", number, fence)
	}
	if q.led != nil {
		q.led.Released(number, fence, now, time.Now())
	}
	return true, nil
}

// instant is a model that answers at once: a noop step with progress that
// rises, or "done" when done is set. It keeps nothing of what it is asked.
type instant struct {
	done bool
	// called, when set, is told of every request.
	called func(plugin.ModelRequest)
}

func (m *instant) Generate(_ context.Context, req plugin.ModelRequest) (plugin.ModelResponse, error) {
	if m.called != nil {
		m.called(req)
	}
	status := "continue"
	if m.done {
		status = "done"
	}
	return plugin.ModelResponse{Text: testkit.DecisionJSON("noop", nil, min(req.Task.Iteration, 99), status),
		Usage: plugin.Usage{PromptTokens: 100, CompletionTokens: 20}}, nil
}

// benchReplica is one Taskloom process as serve wires it: a store with a pool of
// its own, a runtime, the task service on the store's clock.
type benchReplica struct {
	store *postgres.Store
	svc   *tasks.Service
}

// worker is Taskloom's stepper: a worker of the service, as serve runs
// them, claiming its next task with each commit.
func (r *benchReplica) worker(owner string) func(context.Context) (bool, error) {
	return r.svc.Worker(owner).Step
}

func newBenchReplica(tb testing.TB, url string, model plugin.Model, led *storetest.Ledger, workers int) *benchReplica {
	tb.Helper()
	ctx := context.Background()
	st, err := postgres.Open(ctx, url)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		tb.Fatal(err)
	}
	var store domain.Store = st
	if led != nil {
		store = &ledgerStore{Store: st, led: led}
	}
	rt := plugin.New(plugin.Options{Store: store, Clock: clock.Real{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := rt.Register(&plugin.Plugin{Name: "b", Actions: []plugin.Action{noop{}}, Models: map[plugin.ModelType]plugin.Model{plugin.ModelText: model}}); err != nil {
		tb.Fatal(err)
	}
	if err := rt.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	svc := tasks.New(tasks.Options{Runtime: rt, Lease: time.Minute, StoreClock: true, Workers: workers,
		Listen: st.ListenTasks, MaxActivePerUser: 1 << 30})
	return &benchReplica{store: st, svc: svc}
}

// benchDB makes a fresh database with Taskloom's schema and the raw
// baseline's table, and returns its URL.
func benchDB(tb testing.TB) string {
	tb.Helper()
	ctx := context.Background()
	url := testkit.PostgresURL(tb)
	st, err := postgres.Open(ctx, url)
	if err != nil {
		tb.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		tb.Fatal(err)
	}
	pool := rawPool(tb, url)
	if _, err := pool.Exec(ctx, rawCreate); err != nil {
		tb.Fatal(err)
	}
	return url
}

func rawPool(tb testing.TB, url string) *pgxpool.Pool {
	tb.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.MaxConns = postgres.DefaultMaxConns
	cfg.ConnConfig.RuntimeParams["application_name"] = "raw baseline" // to tell its backends from Taskloom's
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

// newRound empties both queues and fills them with n fresh tasks each.
func newRound(tb testing.TB, pool *pgxpool.Pool, reps []*benchReplica, n int) (raw, taskloom []int64) {
	tb.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `UPDATE bench_raw SET status = 'completed', lease_owner = '', completed_at = now() WHERE status <> 'completed'`); err != nil {
		tb.Fatal(err)
	}
	rows, err := pool.Query(ctx, rawFill+` RETURNING number`, n)
	if err != nil {
		tb.Fatal(err)
	}
	if raw, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
		tb.Fatal(err)
	}
	// Taskloom's tasks of the last round end the way tasks end.
	old, err := reps[0].store.ListTasks(ctx, domain.TaskFilter{Statuses: []domain.Status{domain.StatusQueued, domain.StatusRunning}})
	if err != nil {
		tb.Fatal(err)
	}
	for _, t := range old {
		if _, err := reps[0].svc.Cancel(ctx, t.Number, "bench"); err != nil {
			tb.Fatal(err)
		}
	}
	for i := range n {
		t, err := reps[i%len(reps)].svc.Create(ctx, domain.NewTask{Goal: fmt.Sprintf("bench %d", i), MaxIterations: 1000, MaxStaleIterations: 1000})
		if err != nil {
			tb.Fatal(err)
		}
		taskloom = append(taskloom, t.Number)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE bench_raw`); err != nil {
		tb.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE tasks`); err != nil {
		tb.Fatal(err)
	}
	return raw, taskloom
}

// drive runs n steps over workers goroutines, each a worker of one of
// the given steppers (one per replica), and returns how long they took.
// A Taskloom worker may hold a task claimed with its last commit when it
// stops; the next round cancels it.
func drive(tb testing.TB, n, workers int, steppers []stepper) time.Duration {
	tb.Helper()
	ctx := context.Background()
	var done atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := range workers {
		owner := fmt.Sprintf("w%d", w)
		step := steppers[w%len(steppers)](owner)
		wg.Go(func() {
			for done.Add(1) <= int64(n) {
				did, err := step(ctx)
				if err != nil {
					tb.Error(err)
					return
				}
				if !did {
					tb.Errorf("%s found the queue empty", owner)
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

// benchIterations is TASKLOOM_BENCH_ITERATIONS, or 3000.
func benchIterations(tb testing.TB) int {
	v := os.Getenv("TASKLOOM_BENCH_ITERATIONS")
	if v == "" {
		return 3000
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		tb.Fatalf("TASKLOOM_BENCH_ITERATIONS=%q is not a positive whole number", v)
	}
	return n
}

// BenchmarkQueue measures iterations per second at 1, 4 and 16 workers:
// the raw baseline and Taskloom (the service's Workers with an instant
// model, on the store's clock, as serve runs them: each commit claims the
// worker's next task, the garbage collector set as serve sets it), round by round in turn so both see the same load,
// and prints each ratio.
func BenchmarkQueue(b *testing.B) {
	total := benchIterations(b)
	// The garbage collector as serve sets it (app.GCFor), for both sides:
	// they share this process.
	b.Cleanup(app.GCFor(os.Getenv, app.CgroupMemoryLimit(os.DirFS("/"))).Apply())
	type row struct {
		workers       int
		raw, taskloom float64
	}
	var rows []row
	for _, workers := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			url := benchDB(b)
			raw := &rawQueue{pool: rawPool(b, url)}
			rep := newBenchReplica(b, url, &instant{}, nil, workers)
			var rawTime, tlTime time.Duration
			var rawCPU, tlCPU cpuUse
			for left := total; left > 0; left -= roundIterations {
				n := min(left, roundIterations)
				newRound(b, raw.pool, []*benchReplica{rep}, queueTasks)
				c := readCPU(b, raw.pool)
				rawTime += drive(b, n, workers, []stepper{raw.worker})
				c2 := readCPU(b, raw.pool)
				tlTime += drive(b, n, workers, []stepper{rep.worker})
				rawCPU, tlCPU = rawCPU.add(c2.sub(c)), tlCPU.add(readCPU(b, raw.pool).sub(c2))
			}
			r := row{workers, float64(total) / rawTime.Seconds(), float64(total) / tlTime.Seconds()}
			// CPU per iteration, in this process and in the database's
			// backends.
			b.ReportMetric(float64(rawCPU.self.Microseconds())/float64(total), "raw-go-µs/it")
			b.ReportMetric(float64(rawCPU.server.Microseconds())/float64(total), "raw-pg-µs/it")
			b.ReportMetric(float64(tlCPU.self.Microseconds())/float64(total), "taskloom-go-µs/it")
			b.ReportMetric(float64(tlCPU.server.Microseconds())/float64(total), "taskloom-pg-µs/it")
			rows = append(rows, r)
			b.ReportMetric(r.raw, "raw-it/s")
			b.ReportMetric(r.taskloom, "taskloom-it/s")
			b.ReportMetric(100*r.taskloom/r.raw, "%raw")
			b.ReportMetric(0, "ns/op")
		})
	}
	var t strings.Builder
	fmt.Fprintf(&t, "iterations/s, %d per side and worker count (PostgreSQL, instant model):\n", total)
	fmt.Fprintf(&t, "%8s %10s %10s %7s\n", "workers", "raw", "taskloom", "ratio")
	for _, r := range rows {
		fmt.Fprintf(&t, "%8d %10.0f %10.0f %6.0f%%\n", r.workers, r.raw, r.taskloom, 100*r.taskloom/r.raw)
	}
	// A benchmark with sub-benchmarks has no line of its own for b.Log.
	fmt.Print(t.String())
}

// cpuUse is CPU time used by this process and by the PostgreSQL backends
// serving the benchmark's database.
type cpuUse struct{ self, server time.Duration }

func (c cpuUse) add(d cpuUse) cpuUse { return cpuUse{c.self + d.self, c.server + d.server} }
func (c cpuUse) sub(d cpuUse) cpuUse { return cpuUse{c.self - d.self, c.server - d.server} }

// readCPU reads the CPU time of this process (getrusage) and of the
// backends connected to pool's database (/proc/PID/stat, in clock ticks of
// 10ms; the server must run on this machine). Other databases' clients are
// not counted, nor the server's shared processes (WAL writer,
// checkpointer).
func readCPU(tb testing.TB, pool *pgxpool.Pool) cpuUse {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	self := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	rows, err := pool.Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	if err != nil {
		tb.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		tb.Fatal(err)
	}
	var ticks int64
	for _, pid := range pids {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		line := string(raw)
		f := strings.Fields(line[strings.LastIndexByte(line, ')')+1:])
		// utime and stime are fields 14 and 15 of stat, 12 and 13 after
		// the command.
		if len(f) > 12 {
			u, _ := strconv.ParseInt(f[11], 10, 64)
			s, _ := strconv.ParseInt(f[12], 10, 64)
			ticks += u + s
		}
	}
	return cpuUse{self: self, server: time.Duration(ticks) * 10 * time.Millisecond}
}

// BenchmarkQueueFairness counts out-of-turn claims (see
// storetest.Ledger.OutOfTurn)
// of the raw baseline and of Taskloom with 16 workers on one replica and
// with 8 workers on each of 2 replicas (each replica a pool and, for
// Taskloom, a Service of its own).
func BenchmarkQueueFairness(b *testing.B) {
	total := benchIterations(b)
	type row struct {
		name                string
		raw, taskloom       int
		rawClaims, tlClaims int
	}
	var rows []row
	for _, c := range []struct {
		name              string
		replicas, workers int
	}{{"16workers", 1, 16}, {"2replicas_x_8workers", 2, 8}} {
		b.Run(c.name, func(b *testing.B) {
			url := benchDB(b)
			var raws []*rawQueue
			var reps []*benchReplica
			var rawSteps, tlSteps []stepper
			rawLed, tlLed := &storetest.Ledger{}, &storetest.Ledger{}
			for range c.replicas {
				q := &rawQueue{pool: rawPool(b, url)}
				rep := newBenchReplica(b, url, &instant{}, tlLed, c.workers)
				raws, reps = append(raws, q), append(reps, rep)
				rawSteps, tlSteps = append(rawSteps, q.worker), append(tlSteps, rep.worker)
			}
			r := row{name: c.name}
			for left := total; left > 0; left -= roundIterations {
				n := min(left, roundIterations)
				rawInit, tlInit := newRound(b, raws[0].pool, reps, queueTasks)
				rawLed.Reset()
				tlLed.Reset()
				for _, q := range raws {
					q.led = rawLed
				}
				start := time.Now()
				drive(b, n, c.replicas*c.workers, rawSteps)
				bad, claims := rawLed.OutOfTurn(rawInit, start)
				r.raw, r.rawClaims = r.raw+bad, r.rawClaims+claims
				start = time.Now()
				drive(b, n, c.replicas*c.workers, tlSteps)
				bad, claims = tlLed.OutOfTurn(tlInit, start)
				r.taskloom, r.tlClaims = r.taskloom+bad, r.tlClaims+claims
			}
			rows = append(rows, r)
			b.ReportMetric(float64(r.raw), "raw-out-of-turn")
			b.ReportMetric(float64(r.taskloom), "taskloom-out-of-turn")
			b.ReportMetric(0, "ns/op")
		})
	}
	var t strings.Builder
	fmt.Fprintf(&t, "out-of-turn claims (PostgreSQL, instant model):\n")
	fmt.Fprintf(&t, "%-22s %16s %16s\n", "", "raw", "taskloom")
	for _, r := range rows {
		fmt.Fprintf(&t, "%-22s %7d of %6d %7d of %6d\n", r.name, r.raw, r.rawClaims, r.taskloom, r.tlClaims)
	}
	// A benchmark with sub-benchmarks has no line of its own for b.Log.
	fmt.Print(t.String())
}

// ledgerStore records Taskloom's claims and releases in a ledger.
type ledgerStore struct {
	domain.Store
	led *storetest.Ledger
}

func (s *ledgerStore) ClaimTask(ctx context.Context, c domain.Claim) (domain.Task, error) {
	start := time.Now()
	t, err := s.Store.ClaimTask(ctx, c)
	if err == nil {
		s.led.Claimed(t.Number, t.Fence, t.LastProcessedAt, start, time.Now())
	}
	return t, err
}

func (s *ledgerStore) UpdateTask(ctx context.Context, number int64, fn domain.MutateFunc) (domain.Task, error) {
	t, err := s.Store.UpdateTask(ctx, number, fn)
	if err == nil {
		s.released(t, time.Now())
	}
	return t, err
}

// UpdateTaskAndClaim records the commit's release, and its claim as one
// that began with the call.
func (s *ledgerStore) UpdateTaskAndClaim(ctx context.Context, number int64, fn domain.MutateFunc, next domain.Claim) (domain.Task, domain.Task, error) {
	start := time.Now()
	t, c, err := s.Store.(domain.NextClaimer).UpdateTaskAndClaim(ctx, number, fn, next)
	end := time.Now()
	if t.Number != 0 {
		s.released(t, end)
	}
	if c.Number != 0 {
		s.led.Claimed(c.Number, c.Fence, c.LastProcessedAt, start, end)
	}
	return t, c, err
}

// released records t's commit, returned at end, if it left t claimable.
func (s *ledgerStore) released(t domain.Task, end time.Time) {
	if t.LeaseOwner == "" && (t.Status == domain.StatusQueued || t.Status == domain.StatusRunning) {
		s.led.Released(t.Number, t.Fence, t.LastProcessedAt, end)
	}
}

// BenchmarkQueuePickup measures how long a new task waits for its first
// model call on an idle replica (one worker, as serve starts by default,
// LISTEN/NOTIFY on): from the call that creates it to the model's call,
// when it is created on the same replica (the worker is woken in-process)
// and when it is created on another one (the worker is woken by the
// database's NOTIFY). Each sample waits for the replica to be idle again.
func BenchmarkQueuePickup(b *testing.B) {
	const samples = 200
	url := benchDB(b)
	calls := make(chan int64, 16)
	model := &instant{done: true, called: func(req plugin.ModelRequest) { calls <- req.Task.Number }}
	served := newBenchReplica(b, url, model, nil, 1)
	other := newBenchReplica(b, url, model, nil, 1) // creates only; never started
	ctx := context.Background()
	if err := served.svc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = served.svc.Stop(ctx) })
	type result struct {
		name     string
		p50, p99 time.Duration
	}
	var results []result
	for _, c := range []struct {
		name string
		via  *benchReplica
	}{{"local", served}, {"other_replica", other}} {
		var lat []time.Duration
		for i := range samples {
			time.Sleep(20 * time.Millisecond) // let the worker go idle
			start := time.Now()
			t, err := c.via.svc.Create(ctx, domain.NewTask{Goal: fmt.Sprintf("pickup %s %d", c.name, i)})
			if err != nil {
				b.Fatal(err)
			}
			for got := int64(0); got != t.Number; {
				select {
				case got = <-calls:
				case <-time.After(10 * time.Second):
					b.Fatalf("task #%d was not picked up within 10s", t.Number)
				}
			}
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		r := result{c.name, lat[len(lat)/2], lat[len(lat)*99/100]}
		results = append(results, r)
		b.ReportMetric(float64(r.p50.Microseconds())/1000, c.name+"-p50-ms")
		b.ReportMetric(float64(r.p99.Microseconds())/1000, c.name+"-p99-ms")
	}
	b.ReportMetric(0, "ns/op")
	var t strings.Builder
	fmt.Fprintf(&t, "pickup latency, creation to first model call, %d samples each:\n", samples)
	for _, r := range results {
		fmt.Fprintf(&t, "%-14s p50 %6.1f ms   p99 %6.1f ms\n", r.name, float64(r.p50.Microseconds())/1000, float64(r.p99.Microseconds())/1000)
	}
	b.Log(t.String())
}

// BenchmarkQueueIdleRSS builds the taskloom binary, fills a database with
// 10,000 ended tasks (with their events and a step each), starts `taskloom
// serve` on it, asks it once for the task list and the metrics, as a
// dashboard and a scrape would, lets it idle and reads its resident memory
// (VmRSS in /proc/PID/status; docs/PERFORMANCE.md: at most 60 MB).
func BenchmarkQueueIdleRSS(b *testing.B) {
	const tasks = 10_000
	ctx := context.Background()
	dir := b.TempDir()
	bin := testkit.TaskloomBinary(b, dir)
	url := benchDB(b)
	pool := rawPool(b, url)
	for _, q := range []string{
		`INSERT INTO tasks (name, goal, status, progress, iteration, max_iterations, max_stale_iterations, requestor_id, platform, room_id,
		                    workspace_id, created_at, started_at, completed_at, last_processed_at, summary, fence, event_seq)
		 SELECT 'Task ' || g, 'Find out what the logs of service ' || g || ' say about last night', 'completed', 100, 1, 50, 3,
		        'user-' || (g % 50), 'discord', 'discord:room-' || (g % 20), 'guild-1', now(), now(), now(), now(),
		        'Done: the logs of service ' || g || ' were read and summed up.', 1, 4
		 FROM generate_series(1, $1::int) AS g`,
		`INSERT INTO task_events (task_number, sequence, type, payload, actor, fence, time)
		 SELECT t.number, s, (ARRAY['` + domain.EventCreated + `', '` + domain.EventClaimed + `', '` + domain.EventIterated + `', '` + domain.EventIterated + `'])[s],
		        '{"changes": {"status": "completed", "progress": 100}}', 'worker', 1, now()
		 FROM tasks t, generate_series(1, 4) AS s WHERE $1::int > 0`,
		`INSERT INTO task_steps (task_number, iteration, thought, action, params, result, success, progress, time)
		 SELECT number, 1, 'read the logs', 'http_get', '{"url": "https://example.com/logs"}', 'ok', true, 100, now()
		 FROM tasks WHERE $1::int > 0`,
		`VACUUM ANALYZE`,
	} {
		args := []any{tasks}
		if strings.HasPrefix(q, "VACUUM") {
			args = nil
		}
		if _, err := pool.Exec(ctx, q, args...); err != nil {
			b.Fatalf("fill: %v", err)
		}
	}
	serve := testkit.StartServe(b, bin, dir, "DATABASE_URL="+url,
		"TASKLOOM_DATA_DIR="+filepath.Join(dir, "data"), "TASKLOOM_CONSOLE=false")
	get := func(path string) int {
		resp, err := http.Get(serve.URL() + path)
		if err != nil {
			return 0
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	for _, path := range []string{"/api/tasks", "/metrics"} {
		if code := get(path); code != http.StatusOK {
			b.Fatalf("GET %s: %d", path, code)
		}
	}
	time.Sleep(5 * time.Second)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", serve.Pid()))
	if err != nil {
		b.Fatal(err)
	}
	kb := func(field string) float64 {
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, field+":"); ok {
				n, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
				return n
			}
		}
		b.Fatalf("no %s in /proc/PID/status", field)
		return 0
	}
	rss, peak := kb("VmRSS")/1024, kb("VmHWM")/1024
	b.ReportMetric(rss, "rss-MB")
	b.ReportMetric(peak, "peak-rss-MB")
	b.ReportMetric(0, "ns/op")
	b.Logf("idle replica with %d tasks: VmRSS %.1f MB (peak %.1f MB)", tasks, rss, peak)
}

// BenchmarkQueuePrompts prints docs/PERFORMANCE.md's prompt figures for two tasks
// of 60 iterations (measurePrompts, on SQLite: the prompt does not depend
// on the store): one whose every step fetches 2–6 KB, and one whose steps
// return what a day's work does (fetchMixed). For each, the prompt's size
// at iterations 5 and 50 and their ratio (docs/PERFORMANCE.md: at most 1.5), the share
// of the prompts over iterations 2–60 that is a byte-stable prefix, the
// prompt before's (printed, not a target), and the bytes a prompt sent new
// (what a provider's cache cannot serve), beside the least any layout
// sends new — the latest step and what follows it; then the cost table
// of TestPromptCost: billed-equivalent tokens at iterations 5 and 50
// (docs/PERFORMANCE.md: at most 1.3 times on the mixed task), the
// uncached part and its floor (at most 1.15 times).
func BenchmarkQueuePrompts(b *testing.B) {
	var t strings.Builder
	fmt.Fprintf(&t, "prompts over 60 iterations:\n%-8s %10s %10s %8s %14s %12s %12s\n", "task", "it. 5", "it. 50", "50 / 5", "stable prefix", "new/prompt", "latest step")
	var stats []promptStats
	for _, w := range costShapes {
		s := measurePrompts(b, teststore.SQLite, costIterations, w.tool)
		stats = append(stats, s)
		ratio, stable := float64(s.size[49])/float64(s.size[4]), s.overall(2)
		b.ReportMetric(ratio, w.name+"-50/5")
		b.ReportMetric(100*stable, w.name+"-%stable")
		sent, needed := s.fresh(2)
		b.ReportMetric(sent, w.name+"-new-B/prompt")
		b.ReportMetric(s.cost(costLate).billed/s.cost(costEarly).billed, w.name+"-billed-50/5")
		m := s.meanCost(costFirstCounted, costIterations)
		b.ReportMetric(m.billed, w.name+"-billed-tok/prompt")
		b.ReportMetric(m.uncached/m.floor, w.name+"-uncached/floor")
		fmt.Fprintf(&t, "%-8s %8d B %8d B %8.2f %13.1f%% %10.0f B %10.0f B\n", w.name, s.size[4], s.size[49], ratio, 100*stable, sent, needed)
	}
	writeCostTable(&t, costShapes, stats)
	b.ReportMetric(0, "ns/op")
	fmt.Print(t.String())
}
