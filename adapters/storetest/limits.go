package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// limited is a request of requestor u1 with a limit of max active tasks.
func limited(goal string, max int) domain.NewTask {
	in := newTask(goal)
	in.MaxActive = max
	return in
}

func refusedByLimit(t *testing.T, s domain.Store, in domain.NewTask, what string) {
	t.Helper()
	before, err := s.CountTasks(t.Context(), domain.TaskFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if task, err := s.CreateTask(t.Context(), in); !errors.Is(err, domain.ErrLimit) {
		t.Fatalf("%s: CreateTask = #%d, %v; want ErrLimit", what, task.Number, err)
	}
	if after, _ := s.CountTasks(t.Context(), domain.TaskFilter{}); after != before {
		t.Fatalf("%s: a refused create changed the task count from %d to %d", what, before, after)
	}
}

// testLimitActive: a requestor's tasks that have not ended, subtasks
// included, are capped; an ended one frees its place.
func testLimitActive(t *testing.T, s domain.Store) {
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
	iterate(t, s, c, at(2*time.Minute), 10, domain.VerdictDone)
	create(t, s, limited("four, now that one ended", 3))
	create(t, s, newTask("no limit asked"))
}

// testLimitConcurrent: creators racing at the limit cannot pass it
// together.
func testLimitConcurrent(t *testing.T, s domain.Store) {
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
		case errors.Is(err, domain.ErrLimit):
			refused++
		default:
			t.Fatalf("CreateTask: %v", err)
		}
	}
	if n, _ := s.CountTasks(t.Context(), domain.TaskFilter{RequestorID: "u1"}); ok != max || refused != racers-max || n != max {
		t.Fatalf("%d created, %d refused, %d stored; want %d, %d, %d", ok, refused, n, max, racers-max, max)
	}
}

// testLimitSubtasks: a task has at most domain.MaxSubtasks children, and
// subtasks nest at most domain.MaxSubtaskDepth levels.
func testLimitSubtasks(t *testing.T, s domain.Store) {
	sub := func(goal string, parent int64) domain.NewTask {
		in := limited(goal, -1)
		in.ParentNumber = parent
		return in
	}
	root := create(t, s, limited("root", -1))
	for i := range domain.MaxSubtasks {
		create(t, s, sub(fmt.Sprintf("child %d", i), root.Number))
	}
	refusedByLimit(t, s, sub("one child too many", root.Number), "the 11th child")

	parent := create(t, s, limited("another root", -1)).Number
	for level := 1; level <= domain.MaxSubtaskDepth; level++ {
		parent = create(t, s, sub(fmt.Sprintf("level %d", level), parent)).Number
	}
	refusedByLimit(t, s, sub("one level too deep", parent), "level 4")
}

// spend commits one iteration of task n (15 tokens: see outcome) by
// worker w at now, with verdict v.
func spend(t *testing.T, s domain.Store, n int64, w string, now time.Time, v domain.Verdict) domain.Task {
	t.Helper()
	c, err := s.UpdateTask(t.Context(), n, func(cur domain.Task) (domain.Mutation, error) {
		m, err := domain.Claimed(cur, domain.Claim{Owner: w, Now: now, Lease: time.Minute})
		m.Event.Actor = w
		return m, err
	})
	if err != nil {
		t.Fatalf("claim #%d: %v", n, err)
	}
	o := outcome(c, now.Add(time.Second), 10+c.Iteration, v)
	o.Step.Params = []byte(fmt.Sprintf(`{"text":"step %d"}`, c.Iteration))
	return update(t, s, n, func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, o) })
}

// testSubtaskBudget: a subtask reserves its token budget from what its
// parent has left — the parent's budget less what it spent and what its
// running subtasks hold — so siblings together never hold more than the
// parent had left; one that names no budget gets a quarter of it, so
// the next one still has room; what a subtask did not spend is the
// parent's again once it ends.
func testSubtaskBudget(t *testing.T, s domain.Store) {
	budget := int64(100)
	in := limited("root", -1)
	in.MaxTokens = &budget
	root := create(t, s, in)
	for i := range 4 { // 15 tokens an iteration: 40 left
		spend(t, s, root.Number, "w", at(time.Duration(2*i+1)*time.Minute), domain.VerdictContinue)
	}
	child := func(asked *int64) domain.NewTask {
		c := limited("child", -1)
		c.ParentNumber, c.MaxTokens = root.Number, asked
		return c
	}
	first := create(t, s, child(ptr(int64(30))))
	if first.MaxTokens != 30 {
		t.Errorf("a subtask asking for 30 of the 40 tokens left got %d", first.MaxTokens)
	}
	second := create(t, s, child(ptr(int64(1000))))
	if second.MaxTokens != 10 {
		t.Errorf("a subtask asking for 1000 tokens while its sibling holds 30 of the 40 left got %d; want 10", second.MaxTokens)
	}
	for _, asked := range []*int64{nil, ptr(int64(0)), ptr(int64(1))} {
		refusedByLimit(t, s, child(asked), fmt.Sprintf("a subtask asking for %v tokens when its siblings hold all that is left", deref(asked)))
	}
	// The first child spends 15 of its 30 and ends: its tokens count
	// toward the root, and the 15 it did not spend are the root's again.
	spend(t, s, first.Number, "w", at(10*time.Minute), domain.VerdictDone)
	if got := get(t, s, root.Number); got.Tokens() != 75 {
		t.Fatalf("the root has spent %d tokens, want 75: its 60 and its ended child's 15", got.Tokens())
	}
	// One asked alone without a budget gets a quarter of what is left,
	// so that the parent can still ask for the next.
	third := create(t, s, child(nil))
	if third.MaxTokens != 3 {
		t.Errorf("a subtask asking for the default after a sibling ended got %d; want 3, a quarter of 15 (100 - 75 spent - 10 held)", third.MaxTokens)
	}
	fourth := create(t, s, child(nil))
	if fourth.MaxTokens != 3 {
		t.Errorf("the next subtask asking for the default got %d; want 3, a quarter of the 12 left", fourth.MaxTokens)
	}
	rest := create(t, s, child(ptr(int64(1000))))
	if rest.MaxTokens != 9 {
		t.Errorf("a subtask asking for more than the 9 left got %d", rest.MaxTokens)
	}
	refusedByLimit(t, s, child(nil), "a subtask when the running ones hold all that is left")
	check(t, s, root.Number, first.Number, second.Number, third.Number, fourth.Number, rest.Number)
}

// testSubtaskBudgetSiblings: ten subtasks of a task with 40 tokens left
// hold 40 between them, however much each asks for: the tree cannot
// spend ten times what its root has left.
func testSubtaskBudgetSiblings(t *testing.T, s domain.Store) {
	budget := int64(100)
	in := limited("root", -1)
	in.MaxTokens = &budget
	root := create(t, s, in)
	for i := range 4 {
		spend(t, s, root.Number, "w", at(time.Duration(2*i+1)*time.Minute), domain.VerdictContinue)
	}
	var held int64
	made := 0
	for i := range domain.MaxSubtasks {
		c := limited(fmt.Sprintf("sibling %d", i), -1)
		c.ParentNumber, c.MaxTokens = root.Number, ptr(int64(4+i%3))
		task, err := s.CreateTask(t.Context(), c)
		switch {
		case errors.Is(err, domain.ErrLimit):
			continue
		case err != nil:
			t.Fatalf("CreateTask: %v", err)
		}
		made++
		held += task.MaxTokens
	}
	if held > 40 {
		t.Errorf("%d subtasks hold %d tokens between them; their parent had 40 left", made, held)
	}
	if made < 8 {
		t.Errorf("only %d subtasks asking for 4 to 6 tokens each fit in 40 tokens", made)
	}
}

func ptr[T any](v T) *T { return &v }

func deref(p *int64) any {
	if p == nil {
		return "the default"
	}
	return *p
}
