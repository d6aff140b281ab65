package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// testMigrateTwice migrates an empty store, then again twice: the
// second and third find nothing to do and lose nothing.
func testMigrateTwice(t *testing.T, s domain.Store) {
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	first := create(t, s, newTask("Before migrating again"))
	for i := range 2 {
		if err := s.Migrate(t.Context()); err != nil {
			t.Fatalf("Migrate again (%d): %v", i+1, err)
		}
	}
	sameTask(t, "task after migrating again", get(t, s, first.Number), first)
	if second := create(t, s, newTask("After migrating again")); second.Number != first.Number+1 {
		t.Errorf("after migrating again the next task is #%d, want #%d", second.Number, first.Number+1)
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping: %v", err)
	}
}

// testMigrateRefusesANewerSchema: a database a newer Taskloom migrated —
// the rollback an operator makes after an upgrade, or an old replica left
// beside upgraded ones — is refused, naming both schema versions, and
// Migrate changes nothing in it.
func testMigrateRefusesANewerSchema(t *testing.T, s domain.Store, exec func(*testing.T, domain.Store, string)) {
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	before := create(t, s, newTask("Kept by the newer version"))
	exec(t, s, "INSERT INTO schema_migrations (version) VALUES (9999)")
	err := s.Migrate(t.Context())
	var newer *domain.NewerSchemaError
	if !errors.As(err, &newer) || newer.Database != 9999 || newer.Known <= 0 || newer.Known >= 9999 ||
		!strings.Contains(err.Error(), "version 9999") || !strings.Contains(err.Error(), fmt.Sprintf("up to %d", newer.Known)) {
		t.Fatalf("Migrate on a newer schema = %v; want a *domain.NewerSchemaError naming 9999 and this binary's version", err)
	}
	sameTask(t, "task after the refusal", get(t, s, before.Number), before)
}

// testMigrateConcurrently migrates an empty store from four goroutines
// at once, as replicas that start together do: each migration is
// applied once and every call succeeds.
func testMigrateConcurrently(t *testing.T, s domain.Store) {
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() { errs <- s.Migrate(t.Context()) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent Migrate: %v", err)
		}
	}
	create(t, s, newTask("Works after concurrent migrations"))
}

func testCreateNumbers(t *testing.T, s domain.Store) {
	var got []int64
	for i := range 3 {
		got = append(got, create(t, s, newTask(fmt.Sprintf("Task %d", i+1))).Number)
	}
	if !slices.Equal(got, []int64{1, 2, 3}) {
		t.Fatalf("numbers = %v, want [1 2 3]", got)
	}
	update(t, s, 3, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Canceled(cur, "u1", "not needed", at(time.Minute))
	})
	// The highest number is canceled; the next task still gets a new one.
	if n := create(t, s, newTask("Task 4")).Number; n != 4 {
		t.Errorf("after canceling #3 the next task is #%d, want #4", n)
	}
	check(t, s, 1, 2, 3, 4)
}

func testCreateFields(t *testing.T, s domain.Store) {
	parent := create(t, s, newTask("Parent task"))
	in := domain.NewTask{
		Name:               "  Build auth  ",
		Goal:               "  Add login with passkeys. Then tests.  ",
		RequestorID:        "U123",
		Platform:           "slack",
		RoomID:             "C42",
		WorkspaceID:        "T9",
		ParentNumber:       parent.Number,
		MaxIterations:      7,
		MaxStaleIterations: 2,
		Actor:              "U123",
		Now:                at(90 * time.Second),
	}
	got := create(t, s, in)
	want := domain.Task{
		Number: 2, Name: "Build auth", Goal: "Add login with passkeys. Then tests.",
		Status: domain.StatusQueued, MaxIterations: 7, MaxStaleIterations: 2,
		RequestorID: "U123", Platform: "slack", RoomID: "C42", WorkspaceID: "T9",
		ParentNumber: parent.Number, CreatedAt: at(90 * time.Second), EventSeq: 1,
		Strategy: domain.StrategyLoop,
	}
	sameTask(t, "created task", got, want)
	sameTask(t, "stored task", get(t, s, got.Number), want)

	// Defaults: name from the goal, limits, workspace.
	d := create(t, s, domain.NewTask{Goal: "write a haiku about queues. please", Now: t0})
	if d.Name != "Write a haiku about queues" || d.MaxIterations != domain.DefaultMaxIterations ||
		d.MaxStaleIterations != domain.DefaultMaxStaleIterations || d.WorkspaceID != "local" || d.ParentNumber != 0 {
		t.Errorf("defaults: name %q, limits %d/%d, workspace %q, parent %d", d.Name, d.MaxIterations,
			d.MaxStaleIterations, d.WorkspaceID, d.ParentNumber)
	}
	sameTask(t, "stored task with defaults", get(t, s, d.Number), d)

	evs := events(t, s, got.Number)
	if len(evs) != 1 || evs[0].Type != domain.EventCreated || evs[0].Sequence != 1 ||
		evs[0].Actor != "U123" || !evs[0].Time.Equal(in.Now) || evs[0].TaskNumber != got.Number || evs[0].ID == 0 {
		t.Fatalf("events of a new task = %+v", evs)
	}
	p := payload(t, evs[0])
	for _, col := range []string{"number", "name", "goal", "status", "max_iterations", "parent_number", "created_at"} {
		if _, ok := p.Changes[col]; !ok {
			t.Errorf("created event does not set %s: %s", col, evs[0].Payload)
		}
	}
	check(t, s, parent.Number, got.Number, d.Number)
}

func testCreateValidation(t *testing.T, s domain.Store) {
	long := strings.Repeat("é", domain.MaxGoalLength+1)
	cases := []struct {
		name string
		in   domain.NewTask
		want error
	}{
		{"empty goal", domain.NewTask{Goal: ""}, domain.ErrInvalid},
		{"blank goal", domain.NewTask{Goal: " \n\t "}, domain.ErrInvalid},
		{"goal too long", domain.NewTask{Goal: long}, domain.ErrInvalid},
		{"goal not UTF-8", domain.NewTask{Goal: "fix \xff\xfe"}, domain.ErrInvalid},
		{"unknown parent", domain.NewTask{Goal: "Subtask", ParentNumber: 99}, domain.ErrInvalid},
	}
	next := int64(1)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Now = t0
			task, err := s.CreateTask(t.Context(), tc.in)
			if !errors.Is(err, tc.want) {
				t.Fatalf("CreateTask = #%d, %v; want %v", task.Number, err, tc.want)
			}
			// Nothing was written: the next task takes the next number.
			ok := create(t, s, newTask(fmt.Sprintf("Valid after %s", tc.name)))
			if ok.Number != next {
				t.Errorf("next task is #%d, want #%d", ok.Number, next)
			}
			next++
		})
	}
	// The longest goal allowed is stored whole.
	goal := strings.Repeat("é", domain.MaxGoalLength)
	task := create(t, s, newTask(goal))
	if got := get(t, s, task.Number).Goal; got != goal {
		t.Errorf("a goal of %d characters came back as %d", domain.MaxGoalLength, len([]rune(got)))
	}
	if n, err := s.CountTasks(t.Context(), domain.TaskFilter{}); err != nil || n != len(cases)+1 {
		t.Errorf("CountTasks = %d, %v; want %d", n, err, len(cases)+1)
	}
}

func testCreateConcurrent(t *testing.T, s domain.Store) {
	const creators, each = 8, 5
	got := make([][]int64, creators)
	var wg sync.WaitGroup
	for w := range creators {
		wg.Go(func() {
			for i := range each {
				task, err := s.CreateTask(t.Context(), newTask(fmt.Sprintf("Creator %d task %d", w, i)))
				if err != nil {
					t.Errorf("creator %d: %v", w, err)
					return
				}
				got[w] = append(got[w], task.Number)
			}
		})
	}
	wg.Wait()
	seen := map[int64]bool{}
	for w, ns := range got {
		if !slices.IsSorted(ns) || len(slices.Compact(slices.Clone(ns))) != len(ns) {
			t.Errorf("creator %d got numbers %v: not strictly increasing", w, ns)
		}
		for _, n := range ns {
			if seen[n] {
				t.Errorf("number %d handed out twice", n)
			}
			seen[n] = true
		}
	}
	// Nothing failed, so nothing was skipped either: exactly 1..40.
	for n := int64(1); n <= creators*each; n++ {
		if !seen[n] {
			t.Errorf("number %d was never handed out (got %d numbers)", n, len(seen))
		}
	}
}

func testGetUnknown(t *testing.T, s domain.Store) {
	create(t, s, newTask("The only task"))
	if _, err := s.GetTask(t.Context(), 42); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("GetTask(42) error = %v, want ErrNotFound", err)
	}
	called := false
	_, err := s.UpdateTask(t.Context(), 42, func(cur domain.Task) (domain.Mutation, error) {
		called = true
		return domain.Paused(cur, "u1", t0)
	})
	if !errors.Is(err, domain.ErrNotFound) || called {
		t.Errorf("UpdateTask(42) error = %v (fn called: %v), want ErrNotFound without calling fn", err, called)
	}
	if steps, err := s.Steps(t.Context(), 42); err != nil || len(steps) != 0 {
		t.Errorf("Steps(42) = %v, %v; want none", steps, err)
	}
}

func testUpdateErrorWritesNothing(t *testing.T, s domain.Store) {
	task := create(t, s, newTask("Keep me as I am"))
	boom := errors.New("boom")
	_, err := s.UpdateTask(t.Context(), task.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Mutation{}, boom
	})
	if err != boom {
		t.Errorf("UpdateTask returned %v, want fn's error unchanged", err)
	}
	// A transition's own refusal also comes back as it is.
	_, err = s.UpdateTask(t.Context(), task.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Resumed(cur, "u1", t0)
	})
	var te *domain.TaskError
	if !errors.As(err, &te) || !errors.Is(err, domain.ErrInvalidState) || te.Number != task.Number {
		t.Errorf("resuming a queued task: %v, want a *TaskError wrapping ErrInvalidState", err)
	}
	sameTask(t, "row after failed updates", get(t, s, task.Number), task)
	if n := len(events(t, s, task.Number)); n != 1 {
		t.Errorf("%d events after failed updates, want 1", n)
	}
}

func testUpdateRefusesBadMutation(t *testing.T, s domain.Store) {
	task := create(t, s, newTask("Guard my event log"))
	claimed := claim(t, s, "w1", t0, time.Minute)
	cases := []struct {
		name string
		fn   domain.MutateFunc
	}{
		{"skips a sequence", func(cur domain.Task) (domain.Mutation, error) {
			cur.EventSeq++ // as if an event were missing
			return domain.Paused(cur, "u1", t0)
		}},
		{"repeats a sequence", func(cur domain.Task) (domain.Mutation, error) {
			cur.EventSeq--
			return domain.Paused(cur, "u1", t0)
		}},
		{"other task", func(cur domain.Task) (domain.Mutation, error) {
			cur.Number++
			return domain.Paused(cur, "u1", t0)
		}},
		{"no event", func(cur domain.Task) (domain.Mutation, error) {
			after := cur
			after.Progress = 50
			return domain.Mutation{Task: after}, nil
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := s.UpdateTask(t.Context(), task.Number, tc.fn); err == nil {
				t.Fatalf("UpdateTask accepted a mutation that %s: %+v", tc.name, got)
			}
			sameTask(t, "row after a refused mutation", get(t, s, task.Number), claimed)
			if n := len(events(t, s, task.Number)); n != 2 {
				t.Errorf("%d events after a refused mutation, want 2", n)
			}
		})
	}
	check(t, s, task.Number)
}
