package domain

import (
	"fmt"
	"strings"
	"time"
)

// The transitions of docs/tasks.md that are not an iteration's
// (iterate.go), a claim's (claim.go) or a creation's (create.go): a
// worker giving a task back, and what people and subtasks do to a task.
// Each is a pure function of the row, which every store applies in its
// own transaction (mutation.go).

// Released gives a claimed task back to the queue untouched, as a worker
// does when it shuts down mid-iteration. A lease already lost is not an
// error: there is nothing to give back.
func Released(t Task, owner string, fence int64, now time.Time) (Mutation, error) {
	if t.Fence != fence || t.LeaseOwner != owner {
		return Mutation{}, &TaskError{Op: "release", Number: t.Number, Err: ErrStaleFence}
	}
	after := t
	after.LeaseOwner = ""
	after.LeaseExpiresAt = time.Time{}
	return Change(t, after, EventReleased, owner, now, nil)
}

// ModelUnavailable gives a claimed task back to the queue unchanged but
// for next_attempt_at, before which the queue does not hand it out: the
// model could not be reached (docs/tasks.md). No iteration, step, progress or
// stale count is spent on it.
func ModelUnavailable(t Task, owner string, fence int64, now, next time.Time, reason string) (Mutation, error) {
	if t.Fence != fence || t.LeaseOwner != owner {
		return Mutation{}, &TaskError{Op: "release", Number: t.Number, Err: ErrStaleFence}
	}
	after := t
	after.LeaseOwner = ""
	after.LeaseExpiresAt = time.Time{}
	after.NextAttemptAt = UTC(next)
	return Change(t, after, EventModelUnavailable, owner, now, map[string]any{"reason": reason})
}

// Paused stops a task from being served until it is resumed.
func Paused(t Task, actor string, now time.Time) (Mutation, error) {
	switch t.Status {
	case StatusQueued, StatusRunning, StatusWaiting:
	default:
		return Mutation{}, refuse("pause", t)
	}
	after := t
	after.Status = StatusPaused
	return Change(t, after, EventPaused, actor, now, map[string]any{"from": string(t.Status)})
}

// Resumed puts a paused task back in the queue, or back in the wait it was
// paused in when that wait has not been satisfied meanwhile.
func Resumed(t Task, actor string, now time.Time) (Mutation, error) {
	if t.Status != StatusPaused {
		return Mutation{}, refuse("resume", t)
	}
	after := t
	after.Status = StatusQueued
	if t.WaitingOn != WaitNone {
		after.Status = StatusWaiting
	}
	after.StaleCounter = 0
	return Change(t, after, EventResumed, actor, now, nil)
}

// Canceled ends a task for good and drops its lease.
func Canceled(t Task, actor, reason string, now time.Time) (Mutation, error) {
	if t.Status.Terminal() {
		return Mutation{}, refuse("cancel", t)
	}
	after := t
	after.Status = StatusCanceled
	after.WaitingOn = WaitNone
	after.ApprovalAction, after.ApprovalParams, after.ApprovalGranted, after.ApprovalRole = "", "", false, ""
	after.LeaseOwner = ""
	after.LeaseExpiresAt = time.Time{}
	after.CompletedAt = UTC(now)
	if reason != "" {
		after.Error = reason
	}
	return Change(t, after, EventCanceled, actor, now, nil)
}

// ErrNotAwaitingAnswer refuses an answer to a task that asked nothing.
// It is an ErrInvalidState.
var ErrNotAwaitingAnswer = fmt.Errorf("%w: the task is not waiting for an answer", ErrInvalidState)

// Answered resumes a task waiting on an answer with what a person said
// (or, at the answer timeout, that nobody did); the answer goes into the
// event, where the next prompt finds it. A task paused while it waited
// takes the answer and stays paused, its wait satisfied. Only a task
// waiting on an answer takes one.
func Answered(t Task, actor, answer string, now time.Time) (Mutation, error) {
	if t.Status.Terminal() {
		return Mutation{}, refuse("answer", t)
	}
	if t.WaitingOn != WaitAnswer || (t.Status != StatusWaiting && t.Status != StatusPaused) {
		return Mutation{}, &TaskError{Op: "answer", Number: t.Number, Status: t.Status, Err: ErrNotAwaitingAnswer}
	}
	after := t
	after.WaitingOn = WaitNone
	if t.Status == StatusWaiting {
		after.Status = StatusQueued
	}
	return Change(t, after, EventAnswered, actor, now, map[string]any{"answer": answer})
}

// SubtaskEnded records on a parent that its subtask child has ended: the
// child's tokens count toward the parent's, and when it was the last
// (remaining is how many children have not ended) a parent waiting on its
// subtasks is resumed with outcomes, every child's, in the event. The store
// applies it in the transaction that ends the child, so no crash can come
// between the two.
//
// With a nil child it only resumes: a parent that came to wait on subtasks
// which had all ended already.
func SubtaskEnded(parent Task, child *Task, remaining int, outcomes string, now time.Time) (Mutation, error) {
	if parent.Status.Terminal() {
		return Mutation{}, refuse("resume", parent)
	}
	after := parent
	detail := map[string]any{}
	if child != nil {
		after.PromptTokens += child.PromptTokens
		after.CompletionTokens += child.CompletionTokens
		detail["subtask"] = child.Number
		detail["status"] = string(child.Status)
	}
	if remaining == 0 && parent.WaitingOn == WaitSubtasks {
		after.WaitingOn = WaitNone
		if parent.Status == StatusWaiting {
			after.Status = StatusQueued
		}
		detail["outcomes"] = outcomes
	}
	return Change(parent, after, EventSubtaskEnded, "system", now, detail)
}

// SubtaskOutcomes says how each of a parent's subtasks ended, for the
// parent's next prompt.
func SubtaskOutcomes(children []Task) string {
	lines := make([]string, 0, len(children))
	for _, c := range children {
		line := fmt.Sprintf("subtask #%d %q %s", c.Number, c.Name, c.Status)
		if c.Summary != "" {
			line += ": " + c.Summary
		} else if c.Error != "" {
			line += ": " + c.Error
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "; ")
}

func refuse(op string, t Task) error {
	if t.Status.Terminal() {
		return &TaskError{Op: op, Number: t.Number, Status: t.Status, Err: ErrTerminal}
	}
	return &TaskError{Op: op, Number: t.Number, Status: t.Status, Err: ErrInvalidState}
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
