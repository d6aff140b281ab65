package tasks_test

import (
	"context"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/adapters/postgres"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/plugin"
)

// twoReplicas are two task services, each with its own store connection,
// runtime, clock and model, on one PostgreSQL database: two machines.
func twoReplicas(t *testing.T) (a, b *fixture) {
	t.Helper()
	url := testkit.PostgresURL(t)
	open := func(t testing.TB) domain.Store {
		st, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatalf("open PostgreSQL store: %v", err)
		}
		t.Cleanup(func() { st.Close() })
		if err := st.Migrate(context.Background()); err != nil {
			t.Fatalf("migrate: %v", err)
		}
		return st
	}
	return newFixture(t, open), newFixture(t, open)
}

// TestFilesFollowTheTaskAcrossReplicas: iteration 1 on replica A writes
// notes/plan.md; A stops; iteration 2, on replica B, reads it.
func TestFilesFollowTheTaskAcrossReplicas(t *testing.T) {
	a, b := twoReplicas(t)
	a.model.Decide("write_file", map[string]string{"path": "notes/plan.md", "content": "the plan from replica A"}, 30, "continue")
	n := a.create("Plan, then build").Number
	if !a.step("replica-a") {
		t.Fatal("replica A served nothing")
	}
	if err := a.svc.Stop(a.ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.store.Close(); err != nil {
		t.Fatal(err)
	}

	b.model.Decide("read_file", map[string]string{"path": "notes/plan.md"}, 60, "continue")
	if !b.step("replica-b") {
		t.Fatal("replica B served nothing")
	}
	steps := b.steps(n)
	if len(steps) != 2 || !steps[1].Success || steps[1].Result != "the plan from replica A" {
		t.Fatalf("replica B's step: %+v; want it to read replica A's plan", steps[len(steps)-1])
	}
	evs, err := b.store.TaskEvents(b.ctx, n, 0)
	if err != nil {
		t.Fatal(err)
	}
	var by []string
	for _, e := range evs {
		if e.Type == domain.EventIterated {
			by = append(by, e.Actor)
		}
	}
	if strings.Join(by, ",") != "replica-a,replica-b" {
		t.Errorf("iterations by %v; want one on each replica", by)
	}
	b.check()
}

// TestLostLeaseWritesNoFile: replica A's model call outlasts its lease;
// replica B takes the task and writes the file; A's late result, file
// included, is refused and recorded, and the file is B's.
func TestLostLeaseWritesNoFile(t *testing.T) {
	a, b := twoReplicas(t)
	b.model.Decide("write_file", map[string]string{"path": "notes/plan.md", "content": "B's plan"}, 40, "continue")
	a.model.Then(func(context.Context, plugin.ModelRequest) (plugin.ModelResponse, error) {
		// While A thinks, its lease runs out and B serves the task.
		b.clk.Advance(2 * lease)
		if !b.step("replica-b") {
			t.Error("replica B did not take the task whose lease expired")
		}
		return plugin.ModelResponse{Text: testkit.DecisionJSON("write_file", map[string]string{"path": "notes/plan.md", "content": "A's late plan"}, 50, "continue")}, nil
	})
	n := a.create("Race for the lease").Number
	a.step("replica-a")

	if got, err := b.file(n, "notes/plan.md"); err != nil || got != "B's plan" {
		t.Fatalf("notes/plan.md = %q, %v; want the lease holder's", got, err)
	}
	if list, err := b.store.TaskFiles(b.ctx, n); err != nil || len(list) != 1 {
		t.Fatalf("files = %+v, %v; want B's one", list, err)
	}
	evs, err := b.store.TaskEvents(b.ctx, n, 0)
	if err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	if last.Type != domain.EventResultRejected || last.Actor != "replica-a" {
		t.Fatalf("last event = %s by %s; want A's rejected result", last.Type, last.Actor)
	}
	b.check()
}
