package tasks_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskloom/taskloom/internal/testkit"
)

// BenchmarkThroughTheBinary measures the write path end to end
// (docs/PERFORMANCE.md, "Through the binary"): the real `taskloom serve`
// process, built here, on PostgreSQL, its model an instant one behind a
// real HTTP server (testkit.InstantModel; TASKLOOM_BENCH_MODEL=fake uses
// internal/testkit's OpenAI-compatible fake instead), answering at once
// that the task writes a file and goes on, as a real task does: each answer
// writes content the file did not hold and moves the progress (the model
// numbers its answers, without decoding the requests;
// TASKLOOM_BENCH_CONTENT=same answers the same write every time, which
// flatters the path). TASKLOOM_BENCH_BIN runs a taskloom binary built
// elsewhere (another commit's, for a comparison in one run) instead of
// building this tree's. 64 tasks are created through the API;
// the iterations a second are counted in the store over
// TASKLOOM_BENCH_ITERATIONS iterations (default 3000) after a warm-up,
// beside the raw baseline (queue_bench_test.go) run in the same benchmark
// on the same database, at 4 and 16 workers:
//
//	go test -run XXX -bench ThroughTheBinary -benchtime 1x ./services/tasks/
func BenchmarkThroughTheBinary(b *testing.B) {
	total := benchIterations(b)
	dir := b.TempDir()
	bin := testkit.TaskloomBinary(b, dir)
	same := os.Getenv("TASKLOOM_BENCH_CONTENT") == "same"
	answer := testkit.ChangingAnswer
	if same {
		answer = func(uint64) string {
			return testkit.DecisionJSON("write_file", map[string]string{"path": "notes.md", "content": "# Notes\nstill going\n"}, 50, "continue")
		}
	}
	modelURL := testkit.InstantModel(b, 0, answer)
	if os.Getenv("TASKLOOM_BENCH_MODEL") == "fake" {
		model := testkit.NewOpenAI(b)
		model.Unrecorded()
		model.SetDefault(answer(0)) // the fake answers one write every time
		modelURL = model.URL()
	}
	type row struct {
		workers       int
		raw, taskloom float64
	}
	var rows []row
	for _, workers := range []int{4, 16} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			url := benchDB(b)
			raw := &rawQueue{pool: rawPool(b, url)}
			if os.Getenv("TASKLOOM_BENCH_LOG") != "" {
				logStatements(b, raw.pool)
			}
			sv := startServe(b, bin, dir, url, modelURL, raw.pool, workers)
			defer sv.Stop()
			// In turns: a round of the raw baseline with serve stopped
			// (SIGSTOP), then as many of serve's iterations with it
			// running, so both see the same load from the rest of the
			// machine.
			var rawTime, tlTime time.Duration
			var rawCPU, tlCPU cpuUse
			for left := total; left > 0; left -= roundIterations {
				n := min(left, roundIterations)
				sv.Signal(syscall.SIGSTOP)
				rawRound(b, raw.pool, queueTasks)
				c := readCPU(b, raw.pool)
				rawTime += drive(b, n, workers, []stepper{raw.worker})
				rawCPU = rawCPU.add(readCPU(b, raw.pool).sub(c))
				d, cpu := sv.measure(n)
				tlTime += d
				tlCPU = tlCPU.add(cpu)
			}
			sv.Stop()
			sv.check(!same)
			tl := float64(total) / tlTime.Seconds()
			r := row{workers, float64(total) / rawTime.Seconds(), tl}
			rows = append(rows, r)
			b.ReportMetric(float64(rawCPU.server.Microseconds())/float64(total), "raw-pg-µs/it")
			b.ReportMetric(float64(tlCPU.server.Microseconds())/float64(total), "taskloom-pg-µs/it")
			b.ReportMetric(float64(tlCPU.self.Microseconds())/float64(total), "taskloom-proc-µs/it")
			b.ReportMetric(r.raw, "raw-it/s")
			b.ReportMetric(r.taskloom, "taskloom-it/s")
			b.ReportMetric(100*r.taskloom/r.raw, "%raw")
			b.ReportMetric(0, "ns/op")
		})
	}
	var t strings.Builder
	content := "changing content and progress"
	if same {
		content = "the same content every time"
	}
	fmt.Fprintf(&t, "iterations/s through the binary, %d per side and worker count (PostgreSQL, instant model over HTTP, a file written each iteration, %s):\n", total, content)
	fmt.Fprintf(&t, "%8s %10s %10s %7s\n", "workers", "raw", "taskloom", "ratio")
	for _, r := range rows {
		fmt.Fprintf(&t, "%8d %10.0f %10.0f %6.0f%%\n", r.workers, r.raw, r.taskloom, 100*r.taskloom/r.raw)
	}
	fmt.Print(t.String())
}

// rawRound ends the raw baseline's tasks and fills its queue with n fresh
// ones.
func rawRound(tb testing.TB, pool *pgxpool.Pool, n int) {
	tb.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `UPDATE bench_raw SET status = 'completed', lease_owner = '', completed_at = now() WHERE status <> 'completed'`); err != nil {
		tb.Fatal(err)
	}
	if _, err := pool.Exec(ctx, rawFill, n); err != nil {
		tb.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE bench_raw`); err != nil {
		tb.Fatal(err)
	}
}

// logStatements has PostgreSQL log every statement of the sessions that
// open on pool's database from now on (serve's, not the raw baseline's),
// with its duration, for a breakdown of where an iteration's time goes
// (TASKLOOM_BENCH_LOG=1; the server's log, filtered by the database's
// name, which this prints).
func logStatements(tb testing.TB, pool *pgxpool.Pool) {
	tb.Helper()
	var db string
	if err := pool.QueryRow(context.Background(), `SELECT current_database()`).Scan(&db); err != nil {
		tb.Fatal(err)
	}
	if _, err := pool.Exec(context.Background(), `ALTER DATABASE `+pgx.Identifier{db}.Sanitize()+` SET log_min_duration_statement = 0`); err != nil {
		tb.Fatal(err)
	}
	fmt.Printf("logging the statements of database %s\n", db)
}

// served is `taskloom serve` running for the benchmark.
type served struct {
	*testkit.Serve
	tb         testing.TB
	pool       *pgxpool.Pool
	iterations func() int
}

// startServe starts `taskloom serve` with workers workers on url, the
// model at modelURL, creates queueTasks tasks through its API and lets them
// warm up: every task a few iterations old, the process's caches and
// connections made.
func startServe(tb testing.TB, bin, dir, url, modelURL string, pool *pgxpool.Pool, workers int) *served {
	tb.Helper()
	ctx := context.Background()
	sv := &served{tb: tb, pool: pool}
	sv.Serve = testkit.StartServe(tb, bin, dir, "DATABASE_URL="+url,
		"TASKLOOM_DATA_DIR="+filepath.Join(dir, "data"), "TASKLOOM_CONSOLE=true",
		"OPENAI_BASE_URL="+modelURL, "OPENAI_API_KEY=sk-bench", "TASKLOOM_WORKERS="+strconv.Itoa(workers),
		"TASKLOOM_MAX_ACTIVE=1000", "TASKLOOM_MAX_TOKENS=0", "TASKLOOM_FACTS=false", "TASKLOOM_LOG_LEVEL=warn")
	sv.iterations = func() int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT COALESCE(sum(iteration), 0) FROM tasks`).Scan(&n); err != nil {
			tb.Fatal(err)
		}
		return n
	}
	for i := range queueTasks {
		body := fmt.Sprintf(`{"goal": "keep notes %d", "room": "console", "max_iterations": 10000, "max_stale_iterations": 1000}`, i)
		resp, err := http.Post(sv.URL()+"/api/tasks", "application/json", strings.NewReader(body))
		if err != nil {
			sv.Stop()
			tb.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
			sv.Stop()
			tb.Fatalf("POST /api/tasks: %d %s", resp.StatusCode, out)
		}
	}
	sv.wait(4 * queueTasks)
	return sv
}

// wait waits until the tasks have until iterations in all, and returns
// how many they have.
func (sv *served) wait(until int) int {
	for deadline := time.Now().Add(5 * time.Minute); ; {
		if n := sv.iterations(); n >= until {
			return n
		}
		if time.Now().After(deadline) {
			sv.Stop()
			sv.tb.Fatalf("%d iterations not reached in 5 minutes:\n%s", until, sv.Logs())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// measure lets the process (stopped or not) run n iterations, counted in
// the store, and stops it again: how long they took and the CPU the
// process (self) and the database's backends (server) spent meanwhile.
func (sv *served) measure(n int) (time.Duration, cpuUse) {
	from := sv.iterations()
	c := readCPU(sv.tb, sv.pool)
	proc := sv.CPU()
	start := time.Now()
	sv.Signal(syscall.SIGCONT)
	got := sv.wait(from + n)
	elapsed := time.Since(start)
	sv.Signal(syscall.SIGSTOP)
	cpu := readCPU(sv.tb, sv.pool).sub(c)
	cpu.self = sv.CPU() - proc
	return elapsed * time.Duration(n) / time.Duration(got-from), cpu
}

// check checks, once the process stopped, that every task is still going
// and that every iteration wrote a file; with changing answers, that the
// files and the progress moved: one content per task, progress reported
// anew.
func (sv *served) check(changing bool) {
	tb, pool, ctx := sv.tb, sv.pool, context.Background()
	var ended, steps, writes int
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status NOT IN ('queued', 'running')) FROM tasks`).Scan(&ended); err != nil {
		tb.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE action = 'write_file' AND success) FROM task_steps`).Scan(&steps, &writes); err != nil {
		tb.Fatal(err)
	}
	var contents, progresses int
	if err := pool.QueryRow(ctx, `SELECT count(DISTINCT sha256) FROM task_files`).Scan(&contents); err != nil {
		tb.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(DISTINCT progress) FROM tasks`).Scan(&progresses); err != nil {
		tb.Fatal(err)
	}
	if changing && (contents < queueTasks || progresses < 2) {
		tb.Fatalf("%d files' contents and %d progresses over %d tasks: the answers did not change them", contents, progresses, queueTasks)
	}
	if ended != 0 || writes != steps || steps == 0 {
		rows, _ := pool.Query(ctx, `SELECT number, status, error FROM tasks WHERE status NOT IN ('queued', 'running') LIMIT 3`)
		why, _ := pgx.CollectRows(rows, pgx.RowToMap)
		tb.Fatalf("%d tasks ended (%v), %d of %d steps wrote a file:\n%s", ended, why, writes, steps, sv.Logs())
	}
}
