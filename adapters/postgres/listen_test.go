package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
)

// TestListenTasksAcrossReplicas: a task queued through one store (replica)
// wakes a listener on another store on the same database.
func TestListenTasksAcrossReplicas(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url := testkit.PostgresURL(t)
	a, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	signals, err := b.ListenTasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wait := func(what string) {
		t.Helper()
		select {
		case <-signals:
		case <-time.After(20 * time.Second):
			t.Fatalf("no signal for %s", what)
		}
	}
	wait("the listener starting") // the first signal says it is listening
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	task, err := a.CreateTask(ctx, domain.NewTask{Goal: "x", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	wait("a created task")
	if _, err := a.UpdateTask(ctx, task.Number, func(cur domain.Task) (domain.Mutation, error) { return domain.Paused(cur, "u", now) }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-signals:
		t.Fatal("pausing a task signalled the queue")
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := a.UpdateTask(ctx, task.Number, func(cur domain.Task) (domain.Mutation, error) { return domain.Resumed(cur, "u", now) }); err != nil {
		t.Fatal(err)
	}
	wait("a resumed task")
}
