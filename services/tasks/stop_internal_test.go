package tasks

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
)

// TestWorkerGivesBackItsHeldTaskOnStop: a worker that stops between the
// commit that claimed its next task and running it gives that task back
// at once, untouched, rather than leaving it leased until the lease ends.
// (An internal test: Stop is begun, as Stop begins it, the moment the
// commit's claim is announced, which no outside caller can time.)
func TestWorkerGivesBackItsHeldTaskOnStop(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		ctx := context.Background()
		store := open(t)
		model := testkit.NewScriptedModel().Default(func(context.Context, plugin.ModelRequest) (plugin.ModelResponse, error) {
			return plugin.ModelResponse{Text: testkit.DecisionJSON("none", nil, 10, "continue")}, nil
		})
		rt := plugin.New(plugin.Options{Store: store, Clock: clock.NewFake(time.Date(2026, 5, 6, 7, 0, 0, 0, time.UTC)),
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err := rt.Register(&plugin.Plugin{Name: "model", Models: map[plugin.ModelType]plugin.Model{plugin.ModelText: model}}); err != nil {
			t.Fatal(err)
		}
		if err := rt.Start(ctx); err != nil {
			t.Fatal(err)
		}
		s := New(Options{Runtime: rt, Lease: time.Minute, Workers: 1, Owner: "r"})
		var numbers []int64
		for _, goal := range []string{"A", "B"} {
			task, err := s.Create(ctx, domain.NewTask{Goal: goal, RequestorID: "u1", Platform: "console", RoomID: "console"})
			if err != nil {
				t.Fatal(err)
			}
			numbers = append(numbers, task.Number)
		}
		a, b := numbers[0], numbers[1]
		held := make(chan struct{})
		rt.Subscribe(plugin.TaskChanged, func(_ context.Context, e plugin.Event) {
			if e.Task.Number == b && e.Task.LeaseOwner != "" {
				// What Stop does first: claim nothing new.
				s.mu.Lock()
				close(s.stopping)
				s.mu.Unlock()
				close(held)
			}
		})
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		s.Wake()
		<-held
		if err := s.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if got, err := store.GetTask(ctx, a); err != nil || got.Iteration != 1 || got.LeaseOwner != "" {
			t.Fatalf("#%d: iteration %d, owner %q, %v; want its one iteration committed", a, got.Iteration, got.LeaseOwner, err)
		}
		got, err := store.GetTask(ctx, b)
		if err != nil || got.LeaseOwner != "" || got.Iteration != 0 || got.Fence != 1 {
			t.Errorf("#%d: owner %q, iteration %d, fence %d, %v; want claimed with #%d's commit and given back untouched",
				b, got.LeaseOwner, got.Iteration, got.Fence, err, a)
		}
		if n := len(model.Requests()); n != 1 {
			t.Errorf("%d model calls, want 1", n)
		}
	})
}

// hungStore is a store whose writes hang until their context ends, as a
// database that stopped answering does.
type hungStore struct {
	domain.Store
	writing chan struct{} // closed at the first write that hangs
	once    sync.Once
}

func (h *hungStore) UpdateTask(ctx context.Context, n int64, fn domain.MutateFunc) (domain.Task, error) {
	h.once.Do(func() { close(h.writing) })
	<-ctx.Done()
	return domain.Task{}, ctx.Err()
}

// TestStopKeepsItsDeadline: a commit hanging on a store that stopped
// answering when Stop's deadline passes is given stopGrace more on the
// service's clock, then Stop returns; the task is left to its lease.
func TestStopKeepsItsDeadline(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 5, 6, 7, 0, 0, 0, time.UTC))
	store := &hungStore{Store: teststore.SQLite(t), writing: make(chan struct{})}
	model := testkit.NewScriptedModel().Default(func(context.Context, plugin.ModelRequest) (plugin.ModelResponse, error) {
		return plugin.ModelResponse{Text: testkit.DecisionJSON("none", nil, 10, "continue")}, nil
	})
	rt := plugin.New(plugin.Options{Store: store, Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := rt.Register(&plugin.Plugin{Name: "model", Models: map[plugin.ModelType]plugin.Model{plugin.ModelText: model}}); err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Store.CreateTask(ctx, domain.NewTask{Goal: "A", RequestorID: "u1", Platform: "console", RoomID: "console", Now: clk.Now()}); err != nil {
		t.Fatal(err)
	}
	s := New(Options{Runtime: rt, Lease: time.Minute, Workers: 1, Owner: "r"})
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s.Wake()
	select {
	case <-store.writing:
	case <-time.After(10 * time.Second):
		t.Fatal("the iteration's commit never began")
	}
	late, cancel := context.WithCancel(ctx)
	cancel() // Stop's deadline has passed
	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop(late) }()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case err := <-stopped:
			if err == nil {
				t.Fatal("Stop past its deadline reported no error")
			}
			return
		case <-deadline:
			t.Fatal("Stop did not return within stopGrace of its deadline: a hanging commit held it")
		case <-time.After(10 * time.Millisecond):
			clk.Advance(stopGrace / 4)
		}
	}
}
