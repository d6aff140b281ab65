package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// Subtasks a task's tool asks for are created in the transaction that
// commits the iteration (Mutation.Subtasks), under the limits of
// subtasks checked there; the step's result says each child's number,
// or why it was not created.

// subtask is a request for a child of task parent, as create_subtask
// makes one.
func subtask(parent domain.Task, goal string, budget *int64) domain.NewTask {
	in := newTask(goal)
	in.ParentNumber, in.MaxTokens, in.MaxActive = parent.Number, budget, -1
	in.Actor = fmt.Sprintf("task #%d", parent.Number)
	return in
}

// commitSubtasks claims task n for w at now and commits an iteration
// whose step asks for subs and waits on them (verdict v).
func commitSubtasks(t *testing.T, s domain.Store, c domain.Task, now time.Time, v domain.Verdict, subs ...domain.NewTask) (domain.Task, error) {
	t.Helper()
	o := outcome(c, now, 20, v)
	o.Step.Action, o.Step.Params, o.Step.Result = "create_subtask", []byte(`{"goal":"…"}`), "requested"
	for i := range subs {
		subs[i].Now = time.Time{} // created at the commit's time
	}
	o.Wait, o.Subtasks = domain.WaitSubtasks, subs
	return s.UpdateTask(t.Context(), c.Number, func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, o) })
}

// claimTask claims task n for owner at now through UpdateTask, whatever
// else the queue holds.
func claimTask(t *testing.T, s domain.Store, n int64, owner string, now time.Time) domain.Task {
	t.Helper()
	return update(t, s, n, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Claimed(cur, domain.Claim{Owner: owner, Now: now, Lease: time.Minute})
	})
}

func lastStep(t *testing.T, s domain.Store, n int64) domain.Step {
	t.Helper()
	steps, err := s.RecentSteps(t.Context(), n, 1)
	if err != nil || len(steps) != 1 {
		t.Fatalf("RecentSteps(#%d) = %d steps, %v", n, len(steps), err)
	}
	return steps[0]
}

func children(t *testing.T, s domain.Store, parent int64) []domain.Task {
	t.Helper()
	out, err := s.ListTasks(t.Context(), domain.TaskFilter{ParentNumber: parent})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// testSubtasksWithCommit: the children an iteration asks for are created
// with its commit, numbered then, and the step's result names them.
func testSubtasksWithCommit(t *testing.T, s domain.Store) {
	parent := create(t, s, newTask("Build auth"))
	c := claimTask(t, s, parent.Number, "w", at(time.Minute))
	after, err := commitSubtasks(t, s, c, at(2*time.Minute), domain.VerdictContinue,
		subtask(parent, "Write the login tests", nil), subtask(parent, "Write the logout tests", nil))
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	if after.Status != domain.StatusWaiting || after.WaitingOn != domain.WaitSubtasks {
		t.Errorf("parent = %s on %q; want waiting on subtasks", after.Status, after.WaitingOn)
	}
	kids := children(t, s, parent.Number)
	if len(kids) != 2 {
		t.Fatalf("%d children, want 2", len(kids))
	}
	res := lastStep(t, s, parent.Number).Result
	for _, k := range kids {
		if k.Status != domain.StatusQueued || !k.CreatedAt.Equal(at(2*time.Minute)) {
			t.Errorf("child #%d: %s, created %v; want queued, created with the commit", k.Number, k.Status, k.CreatedAt)
		}
		if want := fmt.Sprintf("created subtask #%d %q", k.Number, k.Name); !strings.Contains(res, want) {
			t.Errorf("the step's result %q does not say %q", res, want)
		}
		if evs := events(t, s, k.Number); len(evs) != 1 || evs[0].Type != domain.EventCreated || evs[0].Actor != fmt.Sprintf("task #%d", parent.Number) {
			t.Errorf("child #%d's events: %v", k.Number, eventTypes(evs))
		}
	}
	if !strings.HasPrefix(res, "requested\n") {
		t.Errorf("the step's result %q lost what the tool said", res)
	}
	check(t, s, parent.Number, kids[0].Number, kids[1].Number)
}

// testSubtasksNotCreatedWithoutTheLease: a commit refused for a lost
// lease creates no child; the worker that holds the lease now creates
// its own, once.
func testSubtasksNotCreatedWithoutTheLease(t *testing.T, s domain.Store) {
	parent := create(t, s, newTask("Build auth"))
	first := claimTask(t, s, parent.Number, "w1", at(time.Minute))
	second := claimTask(t, s, parent.Number, "w2", at(3*time.Minute))
	if _, err := commitSubtasks(t, s, first, at(4*time.Minute), domain.VerdictContinue, subtask(parent, "Write the tests", nil)); !errors.Is(err, domain.ErrStaleFence) {
		t.Fatalf("a commit after the lease was taken over: %v, want ErrStaleFence", err)
	}
	if n, _ := s.CountTasks(t.Context(), domain.TaskFilter{}); n != 1 {
		t.Fatalf("%d tasks after the refused commit; want the parent alone", n)
	}
	if _, err := commitSubtasks(t, s, second, at(5*time.Minute), domain.VerdictContinue, subtask(parent, "Write the tests", nil)); err != nil {
		t.Fatal(err)
	}
	if kids := children(t, s, parent.Number); len(kids) != 1 {
		t.Fatalf("%d children; want 1", len(kids))
	}
	check(t, s, parent.Number)
}

// testSubtaskLimitsInCommit: the limits of subtasks hold in the commit,
// counting the children asked for before in the same step: a child past
// one is not created and the step says why. A parent none of whose
// children could be created does not wait for them.
func testSubtaskLimitsInCommit(t *testing.T, s domain.Store) {
	t.Run("children", func(t *testing.T) {
		parent := create(t, s, newTask("Many parts"))
		for i := range domain.MaxSubtasks - 1 {
			create(t, s, subtask(parent, fmt.Sprintf("part %d", i), nil))
		}
		c := claimTask(t, s, parent.Number, "w", at(time.Minute))
		after, err := commitSubtasks(t, s, c, at(2*time.Minute), domain.VerdictContinue,
			subtask(parent, "The last part", nil), subtask(parent, "One part too many", nil))
		if err != nil {
			t.Fatal(err)
		}
		if kids := children(t, s, parent.Number); len(kids) != domain.MaxSubtasks {
			t.Errorf("%d children; want %d", len(kids), domain.MaxSubtasks)
		}
		res := lastStep(t, s, parent.Number).Result
		if !strings.Contains(res, `subtask "One part too many" not created: task #`) || !strings.Contains(res, "already has 10 subtasks") {
			t.Errorf("the step's result %q does not say why the 11th child was not created", res)
		}
		if after.Status != domain.StatusWaiting {
			t.Errorf("parent = %s; want waiting on the child created", after.Status)
		}
	})
	// A model that splits its work asks for several subtasks in one step,
	// usually without budgets: each must be made, with a fair part of
	// what the parent has left, and together they hold no more than that.
	t.Run("budget", func(t *testing.T) {
		budget := int64(100)
		in := newTask("On a budget")
		in.MaxTokens = &budget
		parent := create(t, s, in)
		c := claimTask(t, s, parent.Number, "w", at(time.Minute))
		// The iteration's own 15 tokens count: 85 left for children.
		if _, err := commitSubtasks(t, s, c, at(2*time.Minute), domain.VerdictContinue,
			subtask(parent, "Half", ptr(int64(50))), subtask(parent, "A part", nil), subtask(parent, "Another part", nil)); err != nil {
			t.Fatal(err)
		}
		kids := children(t, s, parent.Number)
		// 50 named; the other two share the 35 it leaves alike.
		if len(kids) != 3 || kids[0].MaxTokens != 50 || kids[1].MaxTokens != 17 || kids[2].MaxTokens != 17 {
			t.Fatalf("children %v; want three, with budgets 50, 17 and 17", budgets(kids))
		}
	})
	t.Run("budget shared", func(t *testing.T) {
		// The default budget: three children asked together without
		// budgets get a third each of what is left.
		budget := int64(1_000_000)
		in := newTask("Split in three")
		in.MaxTokens = &budget
		parent := create(t, s, in)
		c := claimTask(t, s, parent.Number, "w", at(time.Minute))
		if _, err := commitSubtasks(t, s, c, at(2*time.Minute), domain.VerdictContinue,
			subtask(parent, "One", nil), subtask(parent, "Two", nil), subtask(parent, "Three", nil)); err != nil {
			t.Fatal(err)
		}
		kids := children(t, s, parent.Number)
		left := budget - 15
		var held int64
		for _, k := range kids {
			held += k.MaxTokens
			if k.MaxTokens != left/3 {
				t.Errorf("child #%d holds %d; want a third of %d", k.Number, k.MaxTokens, left)
			}
		}
		if len(kids) != 3 || held > left {
			t.Fatalf("children %v hold %d of %d left; want three within it", budgets(kids), held, left)
		}
		if res := lastStep(t, s, parent.Number).Result; strings.Contains(res, "not created") {
			t.Errorf("the step's result %q refuses a child", res)
		}
	})
	t.Run("budget alone", func(t *testing.T) {
		// One child asked alone gets a quarter, so the parent can ask
		// for the next one in a later step; a child that asks for more
		// than is left gets what is left, and one with nothing left is
		// refused.
		budget := int64(1000)
		in := newTask("One at a time")
		in.MaxTokens = &budget
		parent := create(t, s, in)
		c := claimTask(t, s, parent.Number, "w", at(time.Minute))
		if _, err := commitSubtasks(t, s, c, at(2*time.Minute), domain.VerdictContinue, subtask(parent, "First", nil)); err != nil {
			t.Fatal(err)
		}
		if kids := children(t, s, parent.Number); len(kids) != 1 || kids[0].MaxTokens != (budget-15)/4 {
			t.Fatalf("children %v; want one holding a quarter of %d", budgets(kids), budget-15)
		}
		// A second, through CreateTask: a quarter of what is left now.
		sub := subtask(parent, "Second", nil)
		sub.Now = at(3 * time.Minute)
		second := create(t, s, sub)
		left := budget - 15 - (budget-15)/4
		if second.MaxTokens != left/4 {
			t.Errorf("second child holds %d; want a quarter of %d", second.MaxTokens, left)
		}
		greedy := subtask(parent, "Greedy", ptr(int64(1_000_000)))
		greedy.Now = at(4 * time.Minute)
		if g := create(t, s, greedy); g.MaxTokens != left-left/4 {
			t.Errorf("a child asking for more than is left holds %d; want the %d left", g.MaxTokens, left-left/4)
		}
		late := subtask(parent, "Nothing left", nil)
		late.Now = at(5 * time.Minute)
		if _, err := s.CreateTask(t.Context(), late); !errors.Is(err, domain.ErrLimit) || !strings.Contains(err.Error(), "no token budget left") {
			t.Errorf("a child with nothing left = %v; want ErrLimit", err)
		}
	})
	t.Run("active", func(t *testing.T) {
		parent := create(t, s, newTask("Busy requestor"))
		c := claimTask(t, s, parent.Number, "w", at(time.Minute))
		active, err := s.CountTasks(t.Context(), domain.TaskFilter{RequestorID: "u1",
			Statuses: []domain.Status{domain.StatusQueued, domain.StatusRunning, domain.StatusPaused, domain.StatusWaiting}})
		if err != nil {
			t.Fatal(err)
		}
		in := subtask(parent, "One too many", nil)
		in.MaxActive = active
		after, err := commitSubtasks(t, s, c, at(2*time.Minute), domain.VerdictContinue, in)
		if err != nil {
			t.Fatal(err)
		}
		if kids := children(t, s, parent.Number); len(kids) != 0 {
			t.Errorf("%d children past the requestor's limit", len(kids))
		}
		if res := lastStep(t, s, parent.Number).Result; !strings.Contains(res, `subtask "One too many" not created:`) {
			t.Errorf("the step's result %q does not say why the child was not created", res)
		}
		// Nothing to wait for: resumed at once, with the iteration.
		if after = get(t, s, parent.Number); after.Status != domain.StatusQueued || after.WaitingOn != domain.WaitNone {
			t.Errorf("parent = %s on %q; want queued, not waiting on children it does not have", after.Status, after.WaitingOn)
		}
		check(t, s, parent.Number)
	})
	t.Run("ended", func(t *testing.T) {
		parent := create(t, s, newTask("Done already"))
		c := claimTask(t, s, parent.Number, "w", at(time.Minute))
		after, err := commitSubtasks(t, s, c, at(2*time.Minute), domain.VerdictDone, subtask(parent, "Too late", nil))
		if err != nil {
			t.Fatal(err)
		}
		if kids := children(t, s, parent.Number); len(kids) != 0 || after.Status != domain.StatusCompleted {
			t.Errorf("parent %s with %d children; want completed with none", after.Status, len(kids))
		}
		if res := lastStep(t, s, parent.Number).Result; !strings.Contains(res, `subtask "Too late" not created: this task ended with this step`) {
			t.Errorf("the step's result %q does not say the child was not created", res)
		}
		check(t, s, parent.Number)
	})
}

func budgets(tasks []domain.Task) []int64 {
	out := make([]int64, len(tasks))
	for i, t := range tasks {
		out[i] = t.MaxTokens
	}
	return out
}
