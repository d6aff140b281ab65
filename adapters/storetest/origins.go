package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// testCreateOncePerOrigin: a second create for the same origin (a chat
// message handled twice: after a lost commit answer, or by two replicas
// that both took it) makes no task and answers with the first, whatever
// its goal or time; another origin, or none, makes its own. A person who
// typed `create task` once must get one task.
func testCreateOncePerOrigin(t *testing.T, s domain.Store) {
	in := newTask("Build auth")
	in.Origin = "discord:1500000000000000001"
	first := create(t, s, in)
	again := in
	again.Now = in.Now.Add(1500 * time.Microsecond) // another handling, a moment later
	_, err := s.CreateTask(t.Context(), again)
	var made *domain.ExistingTaskError
	if !errors.As(err, &made) || !errors.Is(err, domain.ErrExists) || made.Task.Number != first.Number || made.Task.Goal != "Build auth" {
		t.Fatalf("the second create for %s: %v; want ExistingTaskError with #%d", in.Origin, err, first.Number)
	}
	other := in
	other.Origin = "slack:1795918273.488205"
	second := create(t, s, other)
	none := in
	none.Origin = ""
	third := create(t, s, none)
	if n, _ := s.CountTasks(t.Context(), domain.TaskFilter{}); n != 3 || second.Number == first.Number || third.Number == second.Number {
		t.Fatalf("%d tasks (#%d, #%d, #%d); want three, one per origin and one without", n, first.Number, second.Number, third.Number)
	}
}

// testCreateOnceConcurrent: replicas racing to create for one origin make
// one task between them; each of the others is answered with it.
func testCreateOnceConcurrent(t *testing.T, s domain.Store) {
	const racers = 8
	var wg sync.WaitGroup
	nums := make([]int64, racers)
	errs := make([]error, racers)
	for i := range racers {
		wg.Go(func() {
			in := newTask(fmt.Sprintf("racer %d", i))
			in.Origin = "discord:1500000000000000002"
			task, err := s.CreateTask(t.Context(), in)
			var made *domain.ExistingTaskError
			if errors.As(err, &made) {
				task, err = made.Task, nil
			}
			nums[i], errs[i] = task.Number, err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("racer %d: %v", i, err)
		}
		if nums[i] != nums[0] {
			t.Fatalf("racers got tasks %v; want one task for all", nums)
		}
	}
	if n, _ := s.CountTasks(t.Context(), domain.TaskFilter{}); n != 1 {
		t.Fatalf("%d tasks stored for one origin; want 1", n)
	}
}
