package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// ApprovalID names the approval request task t has pending: a digest of
// the task's number, the iteration that asked and the exact call (tool and
// parameters as the task service decoded them, re-encoded canonically:
// the text that is shown, and that the approved call runs from). Buttons, chat commands, the API and
// the CLI carry it, so a decision lands on the call that was shown and on
// no other: a call asked again at a later iteration, even the same one,
// has another id. It is "" when t has no call pending a decision.
func ApprovalID(t Task) string {
	if t.ApprovalAction == "" || t.ApprovalGranted {
		return ""
	}
	return approvalID(t.Number, t.Iteration, t.ApprovalAction, t.ApprovalParams)
}

// AskedApprovalID is the ApprovalID that the call action(params), asked
// by the iteration claimed on t, has once that iteration commits: what
// the request shown to people must carry before the commit makes it
// pending.
func AskedApprovalID(t Task, action string, params json.RawMessage) string {
	return approvalID(t.Number, t.Iteration+1, action, string(params))
}

func approvalID(number int64, iteration int, action, params string) string {
	h := sha256.New()
	h.Write([]byte(strconv.FormatInt(number, 10)))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(iteration)))
	h.Write([]byte{0})
	h.Write([]byte(action))
	h.Write([]byte{0})
	h.Write([]byte(nonEmptyJSON(params)))
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// ErrNotAwaitingApproval refuses a decision on a task that asked for
// none. It is an ErrInvalidState.
var ErrNotAwaitingApproval = fmt.Errorf("%w: the task is not waiting for an approval", ErrInvalidState)

// ErrStaleApproval refuses a decision that names an approval request
// which is no longer pending: the call was decided already, or the task
// now asks for another. It is an ErrInvalidState; the error is a
// *StaleApprovalError, which says what the task waits on now.
var ErrStaleApproval = fmt.Errorf("%w: that approval request is no longer pending", ErrInvalidState)

// StaleApprovalError is ErrStaleApproval with the task as it is now, so an
// answer can say what, if anything, it asks for instead.
type StaleApprovalError struct {
	Call string // the id the decision named
	Now  Task   // the task when the decision was refused
}

func (e *StaleApprovalError) Error() string {
	s := fmt.Sprintf("task #%d: approval request %s is no longer pending", e.Now.Number, e.Call)
	if id := ApprovalID(e.Now); id != "" {
		s += "; it now asks approval for " + id
	}
	return s
}

func (e *StaleApprovalError) Unwrap() error { return ErrStaleApproval }

// awaitingApproval refuses op unless t waits on an approval (or was paused
// while it did) and, when call is set, unless call names the request that
// is pending.
func awaitingApproval(op string, t Task, call string) error {
	if t.Status.Terminal() && call == "" {
		return refuse(op, t)
	}
	pending := !t.Status.Terminal() && t.WaitingOn == WaitApproval && t.ApprovalAction != "" &&
		(t.Status == StatusWaiting || t.Status == StatusPaused)
	switch {
	case call != "" && (!pending || call != ApprovalID(t)):
		return &StaleApprovalError{Call: call, Now: t}
	case !pending:
		return &TaskError{Op: op, Number: t.Number, Status: t.Status, Err: ErrNotAwaitingApproval}
	}
	return nil
}

// Approved lets the tool call t asked for run, exactly as it was asked:
// the task goes back to the queue, and its next claim runs that call
// (ToolRan) without asking the model again. A task paused while it waited
// stays paused, its wait satisfied. call, when set, is the id of the
// request the person saw (ApprovalID); one that is not pending any more
// is refused with a *StaleApprovalError and changes nothing.
func Approved(t Task, actor, call string, now time.Time) (Mutation, error) {
	if err := awaitingApproval("approve", t, call); err != nil {
		return Mutation{}, err
	}
	after := t
	after.WaitingOn, after.ApprovalGranted = WaitNone, true
	if t.Status == StatusWaiting {
		after.Status = StatusQueued
	}
	return Change(t, after, EventApproved, actor, now, map[string]any{"call": ApprovalID(t),
		"action": t.ApprovalAction, "params": json.RawMessage(nonEmptyJSON(t.ApprovalParams))})
}

// Denied refuses the tool call t asked for: the step of the iteration that
// asked fails with the reason, and the task goes back to the queue to
// decide anew. call is as for Approved.
func Denied(t Task, actor, call, reason string, now time.Time) (Mutation, error) {
	if err := awaitingApproval("deny", t, call); err != nil {
		return Mutation{}, err
	}
	after := t
	after.WaitingOn, after.ApprovalAction, after.ApprovalParams, after.ApprovalGranted = WaitNone, "", "", false
	after.ApprovalRole = ""
	if t.Status == StatusWaiting {
		after.Status = StatusQueued
	}
	why := "denied by " + actor
	if reason != "" {
		why += ": " + reason
	}
	return changeWithStep(t, after, EventDenied, actor, now, map[string]any{"reason": reason, "call": ApprovalID(t)},
		Step{TaskNumber: t.Number, Iteration: t.Iteration, Action: t.ApprovalAction,
			Params: json.RawMessage(nonEmptyJSON(t.ApprovalParams)), Success: false, Error: why,
			Progress: t.Progress, Time: UTC(now), Role: t.ApprovalRole})
}
