package tasks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/tasks"
)

// ageResult is what the benchmark's tool returns each time: 4 KB, a
// realistic tool result.
var ageResult = strings.Repeat("a line of what the tool printed, sixty-four bytes long ......\n", 64)

// work is a tool that returns ageResult.
type work struct{}

func (work) Info() plugin.ActionInfo { return plugin.ActionInfo{Name: "work", Tool: true} }
func (work) Handle(context.Context, *plugin.Call) (plugin.Result, error) {
	return plugin.Result{Success: true, Text: ageResult}, nil
}

// BenchmarkIterationAge measures one iteration (Service.Step: claim, read
// what the prompt needs, build it, an instant model, the tool, the commit)
// of a task that has 10 steps, 100 and 1,000, on PostgreSQL
// (docs/PERFORMANCE.md: the work of one iteration does not grow with the task's
// age). Tasks are seeded through the store, each step with a 4 KB result;
// each task serves at most a tenth of its age in measured iterations, so
// its age stays within 10% of the one named. The bytes it allocates per
// iteration (B/op) measure what it reads whatever the machine's load;
// they rise from age 10 to 100 only as the prompt's window of 20 steps
// fills:
//
//	go test -run XXX -bench IterationAge -benchtime 200x ./services/tasks/
func BenchmarkIterationAge(b *testing.B) {
	for _, age := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("age=%d", age), func(b *testing.B) {
			ctx := context.Background()
			st := teststore.Postgres(b)
			model := testkit.NewScriptedModel().Default(func(_ context.Context, req plugin.ModelRequest) (plugin.ModelResponse, error) {
				return plugin.ModelResponse{Text: testkit.DecisionJSON("work", map[string]int{"part": req.Task.Iteration}, min(req.Task.Iteration, 99), "continue")}, nil
			})
			rt := plugin.New(plugin.Options{Store: st, Clock: clock.Real{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err := rt.Register(&plugin.Plugin{Name: "b", Actions: []plugin.Action{work{}}, Models: map[plugin.ModelType]plugin.Model{plugin.ModelText: model}}); err != nil {
				b.Fatal(err)
			}
			if err := rt.Start(ctx); err != nil {
				b.Fatal(err)
			}
			svc := tasks.New(tasks.Options{Runtime: rt, Lease: time.Minute, Owner: "bench"})
			per := max(1, age/10)
			var numbers []int64
			for range (b.N + per - 1) / per {
				numbers = append(numbers, seedAged(b, st, age, age+per+1))
			}
			// Only the task being measured is claimable: the one before it
			// is paused again.
			toggle := func(n int64, tr func(domain.Task, string, time.Time) (domain.Mutation, error)) {
				if _, err := st.UpdateTask(ctx, n, func(cur domain.Task) (domain.Mutation, error) {
					return tr(cur, "bench", time.Now())
				}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if i%per == 0 {
					b.StopTimer()
					if i > 0 {
						toggle(numbers[i/per-1], domain.Paused)
					}
					toggle(numbers[i/per], domain.Resumed)
					b.StartTimer()
				}
				did, err := svc.Step(ctx, "bench")
				if err != nil || !did {
					b.Fatalf("step %d: did=%v, %v", i, did, err)
				}
			}
			b.StopTimer()
			last, err := st.GetTask(ctx, numbers[len(numbers)-1])
			if err != nil {
				b.Fatal(err)
			}
			if last.Iteration < age || last.Iteration > age+per {
				b.Fatalf("the last task measured is at iteration %d, not about %d", last.Iteration, age)
			}
		})
	}
}

// seedAged creates a task and gives it age iterations through the store
// (a claim and an iterated commit each, a 4 KB result per step), then
// pauses it, so it is not claimed until resumed.
func seedAged(b *testing.B, st domain.Store, age, maxIterations int) int64 {
	b.Helper()
	ctx := context.Background()
	now := time.Now()
	task, err := st.CreateTask(ctx, domain.NewTask{Goal: "Grow old one step at a time.", MaxIterations: maxIterations,
		MaxStaleIterations: 1_000_000, Actor: "bench", Now: now})
	if err != nil {
		b.Fatal(err)
	}
	for i := 1; i <= age; i++ {
		now = now.Add(time.Millisecond)
		c, err := st.ClaimTask(ctx, domain.Claim{Owner: "seed", Now: now, Lease: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		if c.Number != task.Number {
			b.Fatalf("claimed #%d while seeding #%d", c.Number, task.Number)
		}
		o := domain.Outcome{Owner: "seed", Fence: c.Fence, Now: now, Progress: min(i, 99), Verdict: domain.VerdictContinue,
			Step: domain.Step{Action: "work", Params: json.RawMessage(fmt.Sprintf(`{"part":%d}`, i)), Result: ageResult, Success: true, Role: domain.RoleAgent}}
		if _, err := st.UpdateTask(ctx, task.Number, func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, o) }); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := st.UpdateTask(ctx, task.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Paused(cur, "bench", now)
	}); err != nil {
		b.Fatal(err)
	}
	return task.Number
}
