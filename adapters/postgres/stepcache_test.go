package postgres

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
)

// TestKeptSteps: the steps a store wrote serve the read of the iteration
// after its next claim, with no query; a change made through another
// store (another replica) makes that claim drop them, so the read goes to
// the database and sees the other replica's steps, and keeps them for
// the iteration after a's next claim; only one read per claim is served
// from memory.
func TestKeptSteps(t *testing.T) {
	ctx := t.Context()
	url := testkit.PostgresURL(t)
	replica := func() *Store {
		s, err := Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := replica(), replica()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	task, err := a.CreateTask(ctx, domain.NewTask{Goal: "one", Now: now, MaxIterations: 100, MaxStaleIterations: 100})
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	claim := func(s *Store) domain.Task {
		t.Helper()
		i++
		c, err := s.ClaimTask(ctx, domain.Claim{Owner: "w", Now: now.Add(time.Duration(i) * time.Minute), Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	iterate := func(s *Store) {
		t.Helper()
		c := claim(s)
		if _, err := s.UpdateTask(ctx, c.Number, func(cur domain.Task) (domain.Mutation, error) {
			return domain.Iterated(cur, domain.Outcome{Owner: "w", Fence: c.Fence, Now: now.Add(time.Duration(i)*time.Minute + time.Second),
				Progress: i, Verdict: domain.VerdictContinue, Step: domain.Step{Action: fmt.Sprint("step-", i), Success: true}})
		}); err != nil {
			t.Fatal(err)
		}
	}
	// behind adds a step the way no store does, without an event: a read
	// that sees it went to the database.
	behind := func(iteration int) {
		t.Helper()
		if _, err := a.pool.Exec(ctx, `INSERT INTO task_steps (task_number, iteration, action, success, progress, time) VALUES ($1, $2, 'behind', true, 0, now())`,
			task.Number, iteration); err != nil {
			t.Fatal(err)
		}
	}
	read := func(s *Store, k int) []string {
		t.Helper()
		steps, err := s.RecentSteps(ctx, task.Number, k)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, st := range steps {
			out = append(out, st.Action)
		}
		return out
	}
	expect := func(what string, got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: RecentSteps = %v, want %v", what, got, want)
		}
	}

	for range 3 {
		iterate(a)
	}
	claim(a)
	behind(100)
	expect("after a's claim, from what a wrote", read(a, 2), "step-2", "step-3")
	expect("a second read, from the database", read(a, 5), "step-1", "step-2", "step-3", "behind")
	if _, err := a.pool.Exec(ctx, `DELETE FROM task_steps WHERE action = 'behind'`); err != nil {
		t.Fatal(err)
	}
	if _, err := a.UpdateTask(ctx, task.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Released(cur, "w", cur.Fence, now.Add(time.Duration(i)*time.Minute+time.Second))
	}); err != nil {
		t.Fatal(err)
	}

	// Another replica serves the task: a's next claim finds the row
	// changed and reads the database.
	iterate(b)
	iterate(a)
	c := claim(a)
	expect("after b's step and a's", read(a, 10), "step-1", "step-2", "step-3", "step-5", "step-6")
	// That read is kept: a's write carries it forward, and the read after
	// a's next claim needs no query.
	if _, err := a.UpdateTask(ctx, task.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Iterated(cur, domain.Outcome{Owner: "w", Fence: c.Fence, Now: now.Add(time.Duration(i)*time.Minute + time.Second),
			Progress: i, Verdict: domain.VerdictContinue, Step: domain.Step{Action: fmt.Sprint("step-", i), Success: true}})
	}); err != nil {
		t.Fatal(err)
	}
	claim(a)
	behind(200)
	expect("after a read that followed a claim", read(a, 10), "step-1", "step-2", "step-3", "step-5", "step-6", "step-7")
	if _, err := a.UpdateTask(ctx, task.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Released(cur, "w", cur.Fence, now.Add(time.Duration(i)*time.Minute+time.Second))
	}); err != nil {
		t.Fatal(err)
	}
}
