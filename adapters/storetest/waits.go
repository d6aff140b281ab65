package storetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// waitOn claims task n and commits an iteration that leaves it waiting on
// w at now.
func waitOn(t *testing.T, s domain.Store, n int64, now time.Time, w domain.WaitOn) domain.Task {
	t.Helper()
	c := claim(t, s, "w1", now, 5*time.Minute)
	if c.Number != n {
		t.Fatalf("claimed #%d, want #%d", c.Number, n)
	}
	o := outcome(c, now.Add(time.Second), 10, domain.VerdictContinue)
	o.Wait = w
	return update(t, s, n, func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, o) })
}

// end runs one iteration of task n that completes it (or, with
// VerdictStuck, fails it).
func end(t *testing.T, s domain.Store, n int64, now time.Time, v domain.Verdict) domain.Task {
	t.Helper()
	c := claim(t, s, "w2", now, 5*time.Minute)
	if c.Number != n {
		t.Fatalf("claimed #%d, want #%d", c.Number, n)
	}
	return iterate(t, s, c, now.Add(time.Second), 50, v)
}

// testSubtasksResumeParent: the transaction that ends a parent's last
// subtask resumes the parent, with every child's outcome; each child's
// tokens count toward the parent as it ends.
func testSubtasksResumeParent(t *testing.T, s domain.Store) {
	parent := create(t, s, newTask("Ship the release"))
	waiting := waitOn(t, s, parent.Number, at(time.Minute), domain.WaitSubtasks)
	if waiting.Status != domain.StatusWaiting || waiting.WaitingOn != domain.WaitSubtasks {
		t.Fatalf("parent = %s on %q, want waiting on subtasks", waiting.Status, waiting.WaitingOn)
	}
	a := newTask("Write the notes")
	a.ParentNumber = parent.Number
	b := newTask("Tag the build")
	b.ParentNumber = parent.Number
	ca, cb := create(t, s, a), create(t, s, b)

	end(t, s, ca.Number, at(2*time.Minute), domain.VerdictDone)
	p := get(t, s, parent.Number)
	if p.Status != domain.StatusWaiting || p.WaitingOn != domain.WaitSubtasks {
		t.Fatalf("after one of two subtasks the parent is %s on %q, want still waiting on subtasks", p.Status, p.WaitingOn)
	}
	if p.PromptTokens != waiting.PromptTokens+10 || p.CompletionTokens != waiting.CompletionTokens+5 {
		t.Errorf("parent tokens = %d+%d, want the child's 10+5 added to %d+%d", p.PromptTokens, p.CompletionTokens, waiting.PromptTokens, waiting.CompletionTokens)
	}

	// The last child's end and the parent's resumption are one UpdateTask:
	// when it returns, both are written.
	end(t, s, cb.Number, at(3*time.Minute), domain.VerdictStuck)
	p = get(t, s, parent.Number)
	if p.Status != domain.StatusQueued || p.WaitingOn != domain.WaitNone {
		t.Fatalf("after the last subtask the parent is %s on %q, want queued", p.Status, p.WaitingOn)
	}
	evs := events(t, s, parent.Number)
	last := evs[len(evs)-1]
	if last.Type != domain.EventSubtaskEnded {
		t.Fatalf("parent's last event = %s, want %s", last.Type, domain.EventSubtaskEnded)
	}
	out, _ := payload(t, last).Detail["outcomes"].(string)
	for _, want := range []string{"#2", "completed", "#3", "failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("outcomes %q lack %q", out, want)
		}
	}
	if c := claim(t, s, "w3", at(4*time.Minute), time.Minute); c.Number != parent.Number {
		t.Errorf("the queue hands out #%d, want the resumed parent #%d", c.Number, parent.Number)
	}
	check(t, s, parent.Number, ca.Number, cb.Number)
}

// testSubtasksEndedBeforeWait: a parent whose subtasks all ended before it
// came to wait on them is resumed in the transaction that makes it wait.
func testSubtasksEndedBeforeWait(t *testing.T, s domain.Store) {
	parent := create(t, s, newTask("Ship the release"))
	c := claim(t, s, "w1", at(time.Minute), 5*time.Minute)
	child := newTask("Tag the build")
	child.ParentNumber = parent.Number
	ch := create(t, s, child)
	// The child is served and ends while the parent's iteration runs.
	end(t, s, ch.Number, at(2*time.Minute), domain.VerdictDone)
	o := outcome(c, at(3*time.Minute), 10, domain.VerdictContinue)
	o.Wait = domain.WaitSubtasks
	p := update(t, s, parent.Number, func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, o) })
	if p.Status != domain.StatusWaiting {
		t.Fatalf("UpdateTask returned the parent as %s, want waiting (the resumption is a second change)", p.Status)
	}
	if got := get(t, s, parent.Number); got.Status != domain.StatusQueued || got.WaitingOn != domain.WaitNone {
		t.Fatalf("parent = %s on %q, want queued: its only subtask had ended", got.Status, got.WaitingOn)
	}
	check(t, s, parent.Number, ch.Number)
}

// testAnswerOnlyAnswerWaits: a task waiting on subtasks refuses an answer
// and changes nothing; pause and resume keep what a task waits on.
func testAnswerOnlyAnswerWaits(t *testing.T, s domain.Store) {
	parent := create(t, s, newTask("Ship the release"))
	waitOn(t, s, parent.Number, at(time.Minute), domain.WaitSubtasks)
	child := newTask("Tag the build")
	child.ParentNumber = parent.Number
	ch := create(t, s, child)
	before := get(t, s, parent.Number)
	_, err := s.UpdateTask(t.Context(), parent.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Answered(cur, "u1", "use JWT", at(2*time.Minute))
	})
	if !errors.Is(err, domain.ErrNotAwaitingAnswer) {
		t.Fatalf("answer to a task waiting on subtasks: %v, want ErrNotAwaitingAnswer", err)
	}
	sameTask(t, "parent after a refused answer", get(t, s, parent.Number), before)

	paused := update(t, s, parent.Number, func(cur domain.Task) (domain.Mutation, error) { return domain.Paused(cur, "u1", at(3*time.Minute)) })
	if paused.WaitingOn != domain.WaitSubtasks {
		t.Fatalf("paused parent waits on %q, want subtasks kept", paused.WaitingOn)
	}
	resumed := update(t, s, parent.Number, func(cur domain.Task) (domain.Mutation, error) { return domain.Resumed(cur, "u1", at(4*time.Minute)) })
	if resumed.Status != domain.StatusWaiting || resumed.WaitingOn != domain.WaitSubtasks {
		t.Fatalf("resumed parent = %s on %q, want back waiting on subtasks", resumed.Status, resumed.WaitingOn)
	}
	// Paused again, the child ends meanwhile: resume finds the wait
	// satisfied and queues the parent.
	update(t, s, parent.Number, func(cur domain.Task) (domain.Mutation, error) { return domain.Paused(cur, "u1", at(5*time.Minute)) })
	end(t, s, ch.Number, at(6*time.Minute), domain.VerdictDone)
	if p := get(t, s, parent.Number); p.Status != domain.StatusPaused || p.WaitingOn != domain.WaitNone {
		t.Fatalf("paused parent after its subtask ended = %s on %q, want paused, wait satisfied", p.Status, p.WaitingOn)
	}
	resumed = update(t, s, parent.Number, func(cur domain.Task) (domain.Mutation, error) { return domain.Resumed(cur, "u1", at(7*time.Minute)) })
	if resumed.Status != domain.StatusQueued {
		t.Fatalf("resumed parent = %s, want queued", resumed.Status)
	}

	asker := create(t, s, newTask("Pick a license"))
	waitOn(t, s, asker.Number, at(8*time.Minute), domain.WaitAnswer)
	answered := update(t, s, asker.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Answered(cur, "u1", "MIT", at(9*time.Minute))
	})
	if answered.Status != domain.StatusQueued || answered.WaitingOn != domain.WaitNone {
		t.Fatalf("answered task = %s on %q, want queued", answered.Status, answered.WaitingOn)
	}
	check(t, s, parent.Number, ch.Number, asker.Number)
}

// testModelUnavailable: a task released because the model was unreachable
// keeps everything but next_attempt_at, and the queue skips it until then.
func testModelUnavailable(t *testing.T, s domain.Store) {
	task := create(t, s, newTask("Summarise the logs"))
	c := claim(t, s, "w1", at(time.Minute), 5*time.Minute)
	next := at(time.Minute + 4*time.Second)
	r := update(t, s, task.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.ModelUnavailable(cur, c.LeaseOwner, c.Fence, at(time.Minute+time.Second), next, "503 Service Unavailable")
	})
	if r.Iteration != 0 || r.StaleCounter != 0 || r.Progress != 0 || r.LeaseOwner != "" || !r.NextAttemptAt.Equal(next) {
		t.Fatalf("released task = %+v, want unchanged with next_attempt_at %v", r, next)
	}
	noClaim(t, s, next.Add(-time.Microsecond))
	if got := claim(t, s, "w2", next, time.Minute); got.Number != task.Number {
		t.Fatalf("claimed #%d at next_attempt_at, want #%d", got.Number, task.Number)
	}
	steps, err := s.Steps(t.Context(), task.Number)
	if err != nil || len(steps) != 0 {
		t.Fatalf("steps = %v, %v; want none", steps, err)
	}
	check(t, s, task.Number)
}

// testResultStoredOnce: a step's result is kept whole in the step (up to
// 1 MiB) and not copied into its event.
func testResultStoredOnce(t *testing.T, s domain.Store) {
	task := create(t, s, newTask("Read the big file"))
	c := claim(t, s, "w1", at(time.Minute), 5*time.Minute)
	o := outcome(c, at(2*time.Minute), 10, domain.VerdictContinue)
	o.Step.Result = strings.Repeat("0123456789abcdef", domain.MaxResultBytes/16)
	update(t, s, task.Number, func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, o) })
	steps, err := s.Steps(t.Context(), task.Number)
	if err != nil || len(steps) != 1 {
		t.Fatalf("steps = %d, %v", len(steps), err)
	}
	if steps[0].Result != o.Step.Result {
		t.Errorf("stored result has %d bytes, want the whole %d", len(steps[0].Result), len(o.Step.Result))
	}
	evs := events(t, s, task.Number)
	last := evs[len(evs)-1]
	if len(last.Payload) > 4096 {
		t.Errorf("the iterated event's payload has %d bytes: the result is stored twice", len(last.Payload))
	}
	if p := payload(t, last); p.Step == nil || p.Step.Action != o.Step.Action {
		t.Errorf("the iterated event does not name its step: %s", last.Payload)
	}
	check(t, s, task.Number)
}
