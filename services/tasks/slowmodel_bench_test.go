package tasks_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/openai"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
)

// The slow-model target of docs/PERFORMANCE.md: with a model that takes
// 1 s a call and 256 workers, at least 90% of workers ÷ latency
// iterations a second, the tasks' iteration counts within 2 of each
// other, and at most 2 × workers TCP connections to the model server
// over the whole run.
const (
	slowWorkers      = 256
	slowLatency      = time.Second
	slowTasks        = 4 * slowWorkers // more tasks than workers: each waits its turn
	slowRun          = 25 * time.Second
	slowMinShare     = 0.90
	slowMaxSpread    = 2
	slowMaxConnsEach = 2
	// chatConns is what internal/app keeps beside the workers for chat
	// replies: serve sizes the model's connections to workers + 8.
	chatConns = 8
)

// BenchmarkSlowModel runs, in real time, slowWorkers workers of the task
// service (started as serve starts them, on PostgreSQL) against the
// OpenAI-compatible fake behind a real HTTP server that answers each
// call after slowLatency, through the openai adapter configured as serve
// configures it, on slowTasks tasks for slowRun. It prints iterations a
// second against the ideal workers ÷ latency, the spread of the tasks'
// iteration counts, and the TCP connections the server accepted, and
// fails when a target is missed:
//
//	go test -run '^$' -bench SlowModel -benchtime 1x ./services/tasks/
func BenchmarkSlowModel(b *testing.B) {
	ctx := context.Background()
	fake := testkit.NewOpenAI(b)
	fake.SetLatency(slowLatency)
	fake.SetDefault(testkit.DecisionJSON("noop", nil, 1, "continue"))
	model, err := openai.New(openai.Config{BaseURL: fake.URL(), Model: "slow", MaxConns: slowWorkers + chatConns})
	if err != nil {
		b.Fatal(err)
	}
	rep := newBenchReplica(b, benchDB(b), model, nil, slowWorkers)
	var numbers []int64
	for i := range slowTasks {
		t, err := rep.svc.Create(ctx, domain.NewTask{Goal: fmt.Sprintf("slow %d", i), MaxIterations: 100_000, MaxStaleIterations: 100_000})
		if err != nil {
			b.Fatal(err)
		}
		numbers = append(numbers, t.Number)
	}
	iterations := func() (sum, low, high int) {
		list, err := rep.store.ListTasks(ctx, domain.TaskFilter{})
		if err != nil {
			b.Fatal(err)
		}
		low = 1 << 30
		for _, t := range list {
			sum += t.Iteration
			low, high = min(low, t.Iteration), max(high, t.Iteration)
		}
		if len(list) != len(numbers) {
			b.Fatalf("%d tasks listed, %d created", len(list), len(numbers))
		}
		return sum, low, high
	}

	start := time.Now()
	if err := rep.svc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	// The steady rate is read between two counts, once every worker has
	// had its first call answered; the whole run's rate includes the
	// start and the stop, when workers wait on their last call.
	time.Sleep(2 * slowLatency)
	n0, t0 := first(iterations()), time.Now()
	time.Sleep(slowRun - 2*slowLatency)
	n1, t1 := first(iterations()), time.Now()
	stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := rep.svc.Stop(stopCtx); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	total, low, high := iterations()

	ideal := float64(slowWorkers) / slowLatency.Seconds()
	steady := float64(n1-n0) / t1.Sub(t0).Seconds()
	whole := float64(total) / elapsed.Seconds()
	conns := fake.Conns()
	b.ReportMetric(steady, "it/s")
	b.ReportMetric(100*steady/ideal, "%ideal")
	b.ReportMetric(whole, "whole-run-it/s")
	b.ReportMetric(float64(high-low), "spread")
	b.ReportMetric(float64(conns), "tcp-conns")
	b.ReportMetric(0, "ns/op")
	fmt.Printf("slow model (%v a call), %d workers, %d tasks, %v:\n"+
		"  iterations/s: %.1f steady (%.1f%% of the ideal %.0f), %.1f over the whole run (%d in %v)\n"+
		"  iterations per task: %d to %d (spread %d)\n"+
		"  TCP connections to the model server: %d (at most %d)\n",
		slowLatency, slowWorkers, slowTasks, slowRun, steady, 100*steady/ideal, ideal, whole, total, elapsed.Round(time.Millisecond),
		low, high, high-low, conns, slowMaxConnsEach*slowWorkers)
	if steady < slowMinShare*ideal {
		b.Errorf("%.1f iterations a second, less than %.0f%% of workers ÷ latency (%.0f)", steady, 100*slowMinShare, ideal)
	}
	if high-low > slowMaxSpread {
		b.Errorf("the tasks ran %d to %d iterations: a spread of %d, more than %d", low, high, high-low, slowMaxSpread)
	}
	if conns > slowMaxConnsEach*slowWorkers {
		b.Errorf("the model server accepted %d connections, more than %d", conns, slowMaxConnsEach*slowWorkers)
	}
}

// first is the first of three numbers.
func first(a, _, _ int) int { return a }
