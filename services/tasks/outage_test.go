package tasks_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/adapters/postgres"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/tasks"
)

// replica is one task service with a store (a connection pool) of its own
// on a shared PostgreSQL database.
type replica struct {
	store *postgres.Store
	svc   *tasks.Service
}

func startReplica(t *testing.T, url, name string, model plugin.Model) *replica {
	t.Helper()
	ctx := context.Background()
	st, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	rt := plugin.New(plugin.Options{Store: st, Clock: clock.Real{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := rt.Register(
		&plugin.Plugin{Name: "model", Models: map[plugin.ModelType]plugin.Model{plugin.ModelText: model}},
		&plugin.Plugin{Name: "tools", Actions: actions.Tools(actions.ToolConfig{Workspaces: actions.Workspaces{Root: t.TempDir()}})},
	); err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// Idle workers poll only once a minute: a task from another replica is
	// picked up sooner only if the LISTEN connection works.
	svc := tasks.New(tasks.Options{Runtime: rt, Workers: 2, Lease: 30 * time.Second, Poll: time.Minute, Owner: name,
		Listen: st.ListenTasks, StoreClock: true})
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = svc.Stop(ctx)
	})
	return &replica{store: st, svc: svc}
}

// killBackends terminates every connection to the database at url but
// the one it uses, as a PostgreSQL restart or a failover does.
func killBackends(t *testing.T, url string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()) k`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStoreOutageLosesNothing: two replicas work through tasks while every
// connection to PostgreSQL is killed, three times; every task completes
// with a clean event log (no gap, no repeat, no step twice), and a task
// created afterwards is picked up at once — the LISTEN connection came
// back.
func TestStoreOutageLosesNothing(t *testing.T) {
	url := testkit.PostgresURL(t)
	var mu sync.Mutex
	firstCall := map[int64]time.Time{}
	model := testkit.NewScriptedModel().Default(func(_ context.Context, req plugin.ModelRequest) (plugin.ModelResponse, error) {
		mu.Lock()
		if _, ok := firstCall[req.Task.Number]; !ok {
			firstCall[req.Task.Number] = time.Now()
		}
		mu.Unlock()
		status := "continue"
		if req.Task.Iteration >= 5 {
			status = "done"
		}
		note := map[string]string{"path": fmt.Sprintf("notes/%d.md", req.Task.Iteration), "content": "x"}
		return plugin.ModelResponse{Text: testkit.DecisionJSON("write_file", note, 15*req.Task.Iteration, status)}, nil
	})
	a := startReplica(t, url, "a", model)
	b := startReplica(t, url, "b", model)
	ctx := context.Background()
	var numbers []int64
	for i := range 12 {
		task, err := a.svc.Create(ctx, domain.NewTask{Goal: fmt.Sprintf("task %d", i), RequestorID: "u1", MaxTokens: new(int64)})
		if err != nil {
			t.Fatal(err)
		}
		numbers = append(numbers, task.Number)
	}
	killed := 0
	for range 3 {
		time.Sleep(30 * time.Millisecond) // let work be in flight
		killed += killBackends(t, url)
	}
	if killed < 6 {
		t.Fatalf("only %d connections were killed: the outage did not happen", killed)
	}
	// Well within the 30 s lease: a worker that gave up on a commit would
	// leave its task leased until then.
	deadline := time.Now().Add(20 * time.Second)
	for _, n := range numbers {
		for {
			task, err := b.store.GetTask(ctx, n)
			if err == nil && task.Status.Terminal() {
				if task.Status != domain.StatusCompleted {
					t.Fatalf("task #%d ended %s after %d iterations; want completed", n, task.Status, task.Iteration)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("task #%d did not complete after the outage: %+v, %v", n, task, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, n := range numbers {
		var (
			row   domain.Task
			evs   []domain.TaskEvent
			steps []domain.Step
		)
		// A pooled connection killed while idle fails its first query:
		// reads, like the API's, are simply asked again.
		readAgain(t, func() (err error) {
			if row, err = a.store.GetTask(ctx, n); err != nil {
				return err
			}
			if evs, err = a.store.TaskEvents(ctx, n, 0); err != nil {
				return err
			}
			steps, err = a.store.Steps(ctx, n)
			return err
		})
		if v := domain.Check(row, evs, len(steps)); len(v) > 0 {
			t.Fatalf("check of #%d after the outage: %v", n, v)
		}
		// One commit per claim: no two iterations under one fence; and
		// no result taken for a late one (a commit whose answer was lost
		// is found in on its next try).
		fences := map[int64]bool{}
		for _, e := range evs {
			if e.Type == domain.EventResultRejected {
				t.Fatalf("task #%d has a result_rejected event under fence %d: a result of the outage taken for a late one", n, e.Fence)
			}
			if e.Type != domain.EventIterated {
				continue
			}
			if fences[e.Fence] {
				t.Fatalf("task #%d was stepped twice under fence %d", n, e.Fence)
			}
			fences[e.Fence] = true
		}
		if len(steps) != row.Iteration || row.Iteration < 5 {
			t.Fatalf("task #%d has %d steps in %d iterations; want one per iteration, at least 5", n, len(steps), row.Iteration)
		}
	}

	// Pickup after the outage: the replicas' LISTEN connections are back,
	// so a task created behind their backs (straight into the store, no
	// in-process wake) is served long before the next poll. How fast is
	// for the benchmarks; this says that it happens.
	time.Sleep(500 * time.Millisecond) // the listeners' reconnect backoff
	created := time.Now()
	var task domain.Task
	readAgain(t, func() (err error) {
		task, err = a.store.CreateTask(ctx, domain.NewTask{Goal: "after the outage", Now: created})
		return err
	})
	for {
		mu.Lock()
		at, ok := firstCall[task.Number]
		mu.Unlock()
		if ok {
			t.Logf("a task created after the outage was picked up in %s", at.Sub(created))
			break
		}
		if time.Since(created) > 20*time.Second {
			t.Fatal("a task created after the outage was not picked up: the LISTEN connection did not come back")
		}
		time.Sleep(time.Millisecond)
	}
}

// readAgain runs read until it succeeds, a few times at most.
func readAgain(t *testing.T, read func() error) {
	t.Helper()
	var err error
	for range 5 {
		if err = read(); err == nil {
			return
		}
	}
	t.Fatal(err)
}
