package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/taskloom/taskloom/plugin"
)

// limited is a request of requestor u1 with a limit of max active tasks.
func limited(goal string, max int) plugin.NewTask {
	in := newTask(goal)
	in.MaxActive = max
	return in
}

func refusedByLimit(t *testing.T, s plugin.Store, in plugin.NewTask, what string) {
	t.Helper()
	before, err := s.CountTasks(t.Context(), plugin.TaskFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if task, err := s.CreateTask(t.Context(), in); !errors.Is(err, plugin.ErrLimit) {
		t.Fatalf("%s: CreateTask = #%d, %v; want ErrLimit", what, task.Number, err)
	}
	if after, _ := s.CountTasks(t.Context(), plugin.TaskFilter{}); after != before {
		t.Fatalf("%s: a refused create changed the task count from %d to %d", what, before, after)
	}
}

// testLimitActive: a requestor's tasks that have not ended, subtasks
// included, are capped; an ended one frees its place.
func testLimitActive(t *testing.T, s plugin.Store) {
	a := create(t, s, limited("one", 3))
	child := limited("a subtask", 3)
	child.ParentNumber = a.Number
	create(t, s, child)
	create(t, s, limited("three", 3))
	refusedByLimit(t, s, limited("four", 3), "the fourth active task")
	other := limited("someone else's", 3)
	other.RequestorID = "u2"
	create(t, s, other)
	c := claim(t, s, "w", at(time.Minute), time.Minute)
	iterate(t, s, c, at(2*time.Minute), 10, plugin.VerdictDone)
	create(t, s, limited("four, now that one ended", 3))
	create(t, s, newTask("no limit asked"))
}

// testLimitConcurrent: creators racing at the limit cannot pass it
// together.
func testLimitConcurrent(t *testing.T, s plugin.Store) {
	const racers, max = 8, 5
	var wg sync.WaitGroup
	errs := make([]error, racers)
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.CreateTask(t.Context(), limited(fmt.Sprintf("racer %d", i), max))
		}()
	}
	wg.Wait()
	ok, refused := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, plugin.ErrLimit):
			refused++
		default:
			t.Fatalf("CreateTask: %v", err)
		}
	}
	if n, _ := s.CountTasks(t.Context(), plugin.TaskFilter{RequestorID: "u1"}); ok != max || refused != racers-max || n != max {
		t.Fatalf("%d created, %d refused, %d stored; want %d, %d, %d", ok, refused, n, max, racers-max, max)
	}
}

// testLimitSubtasks: a task has at most plugin.MaxSubtasks children, and
// subtasks nest at most plugin.MaxSubtaskDepth levels.
func testLimitSubtasks(t *testing.T, s plugin.Store) {
	sub := func(goal string, parent int64) plugin.NewTask {
		in := limited(goal, -1)
		in.ParentNumber = parent
		return in
	}
	root := create(t, s, limited("root", -1))
	for i := range plugin.MaxSubtasks {
		create(t, s, sub(fmt.Sprintf("child %d", i), root.Number))
	}
	refusedByLimit(t, s, sub("one child too many", root.Number), "the 11th child")

	parent := create(t, s, limited("another root", -1)).Number
	for level := 1; level <= plugin.MaxSubtaskDepth; level++ {
		parent = create(t, s, sub(fmt.Sprintf("level %d", level), parent)).Number
	}
	refusedByLimit(t, s, sub("one level too deep", parent), "level 4")
}

// testSubtaskBudget: a subtask's token budget is at most what its parent
// has left.
func testSubtaskBudget(t *testing.T, s plugin.Store) {
	budget := int64(100)
	in := limited("root", -1)
	in.MaxTokens = &budget
	root := create(t, s, in)
	for i := range 4 { // 15 tokens an iteration
		c := claim(t, s, "w", at(time.Duration(2*i+1)*time.Minute), time.Minute)
		o := outcome(c, at(time.Duration(2*i+2)*time.Minute), 10+i, plugin.VerdictContinue)
		o.Step.Params = []byte(fmt.Sprintf(`{"text":"step %d"}`, i))
		update(t, s, root.Number, func(cur plugin.Task) (plugin.Mutation, error) { return plugin.Iterated(cur, o) })
	}
	for _, asked := range []*int64{nil, ptr(int64(0)), ptr(int64(1000)), ptr(int64(30))} {
		child := limited("child", -1)
		child.ParentNumber, child.MaxTokens = root.Number, asked
		got := create(t, s, child)
		want := int64(40)
		if asked != nil && *asked == 30 {
			want = 30
		}
		if got.MaxTokens != want {
			t.Errorf("a subtask asking for %v tokens got %d; want %d (the parent has 40 left)", deref(asked), got.MaxTokens, want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func deref(p *int64) any {
	if p == nil {
		return "the default"
	}
	return *p
}
