package tasks_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/tasks"
)

// noop is a tool that does nothing, so the benchmark measures the queue,
// not a tool.
type noop struct{}

func (noop) Info() plugin.ActionInfo { return plugin.ActionInfo{Name: "noop", Tool: true} }
func (noop) Handle(context.Context, *plugin.Call) (plugin.Result, error) {
	return plugin.Result{Success: true, Text: "ok"}, nil
}

// BenchmarkIterations measures iterations per second on PostgreSQL with an
// instant model, for 1, 4 and 16 workers sharing one store (BenchmarkQueue
// measures them beside the raw baseline, on the store's clock as serve
// runs, and prints the ratios):
//
//	go test -run XXX -bench Iterations -benchtime 2000x ./services/tasks/
func BenchmarkIterations(b *testing.B) {
	for _, workers := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			ctx := context.Background()
			url := testkit.PostgresURL(b)
			st := teststore.PostgresAt(b, url)
			model := testkit.NewScriptedModel().Default(func(_ context.Context, req plugin.ModelRequest) (plugin.ModelResponse, error) {
				return plugin.ModelResponse{Text: testkit.DecisionJSON("noop", nil, min(req.Task.Iteration, 99), "continue")}, nil
			})
			rt := plugin.New(plugin.Options{Store: st, Clock: clock.Real{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			_ = rt.Register(&plugin.Plugin{Name: "b", Actions: []plugin.Action{noop{}}, Models: map[plugin.ModelType]plugin.Model{plugin.ModelText: model}})
			if err := rt.Start(ctx); err != nil {
				b.Fatal(err)
			}
			svc := tasks.New(tasks.Options{Runtime: rt, Lease: time.Minute})
			for i := range 64 {
				if _, err := svc.Create(ctx, domain.NewTask{Goal: fmt.Sprintf("bench %d", i), MaxIterations: 10000, MaxStaleIterations: 10000}); err != nil {
					b.Fatal(err)
				}
			}
			// Statistics as autovacuum keeps them on a live database: on
			// a table never analyzed the claim's generic plan sorts every
			// active task instead of reading the queue's index in order.
			analyze(b, url)
			var done atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					worker := svc.Worker(fmt.Sprintf("w%d", w))
					for done.Add(1) <= int64(b.N) {
						if _, err := worker.Step(ctx); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "iterations/s")
		})
	}
}

// analyze runs VACUUM ANALYZE on the database at url.
func analyze(tb testing.TB, url string) {
	tb.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE`); err != nil {
		tb.Fatal(err)
	}
}
