package domain

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Verdict is the model's view of where a task stands after an iteration.
type Verdict string

// Verdicts a decision may carry.
const (
	VerdictContinue Verdict = "continue"
	VerdictDone     Verdict = "done"
	VerdictStuck    Verdict = "stuck"
)

// Outcome is what one iteration produced, ready to be committed.
type Outcome struct {
	Owner string
	Fence int64
	Now   time.Time
	Step  Step
	// Steps are the further steps of the claim, after Step, in the order
	// they ran: a tools reply's calls, one step each (docs/strategies.md).
	Steps []Step
	// Progress is the model's estimate, 0–100.
	Progress int
	Verdict  Verdict
	Summary  string
	// Reason explains a stuck verdict or a failed step.
	Reason string
	// Wait, when set, parks the task in waiting on it (an answer to a
	// question, subtasks to finish, an approval).
	Wait WaitOn
	// Repeated says the step's action and params equal the previous
	// step's: whatever progress the model claims, it counts as none (the
	// stall guard of docs/tasks.md).
	Repeated bool
	// Approved says the step ran the tool call a person approved: it
	// completes the iteration that asked (see ToolRan).
	Approved bool
	// Notifications the step's tool asked for, written with the result.
	Notifications []Notification
	// Files are the changes the step's tool made to the task's files
	// (FileView.Changes), written with the result: a result refused for
	// a lost lease writes none.
	Files []FileChange
	// Subtasks are the children the step's tools asked for
	// (Result.Subtasks), created with the result: a result refused for a
	// lost lease creates none.
	Subtasks         []NewTask
	PromptTokens     int64
	CompletionTokens int64

	// What a strategy other than loop says besides (docs/strategies.md); a loop
	// iteration leaves them zero. Phase, State and Ledger, when not
	// empty, are the task's after this claim.
	Phase, State, Ledger string
	// Unjudged says the claim estimates no progress (a react thought or
	// action, a supervisor's decision): progress and the stale counter
	// stay as they are.
	Unjudged bool
	// Cycle, when not zero, is the cycle of several claims this claim
	// belongs to, counted from 1 (react's THOUGHT → ACTION → OBSERVATION):
	// max_iterations then counts cycles, reached by a judged claim of
	// cycle max_iterations, instead of claims.
	Cycle int
	// Stalemate, when set, ends the task in stalemate with this reason: a
	// strategy's own limit (a supervisor's max_steps, magentic's second
	// stall).
	Stalemate string
	// Restart says the claim starts the task's progress anew: progress
	// becomes its estimate even when that is lower, and the stale counter
	// 0 (review's execution once a reviewer has sent the work back: what
	// it estimated before the review no longer holds).
	Restart bool
}

// Iterated applies one iteration's outcome to a task, per docs/tasks.md:
//
//   - the result is refused unless the caller still holds the lease (same
//     fence and owner) and the task has not ended;
//   - done → completed (progress 100), stuck → failed with the reason;
//   - progress not above the previous value, or a step that repeats the
//     one before → stale counter +1, else 0; stale counter ≥
//     max_stale_iterations, iteration ≥ max_iterations, or tokens used ≥
//     max_tokens → stalemate;
//   - otherwise running (or waiting, when the step asked to wait; a task
//     paused while the iteration ran stays paused).
//
// The lease is released and last_processed_at set, so the fair queue serves
// the task again only after every task served before it.
func Iterated(t Task, o Outcome) (Mutation, error) {
	if err := holdsLease("commit iteration of", t, o); err != nil {
		return Mutation{}, err
	}
	now := UTC(o.Now)
	after := t
	after.Iteration++
	est := min(max(o.Progress, 0), 100)
	switch {
	case o.Unjudged:
	case o.Restart:
		after.PreviousProgress = t.Progress
		after.Progress = est
		after.StaleCounter = 0
	case est > t.Progress && !o.Repeated:
		after.PreviousProgress = t.Progress
		after.Progress = est
		after.StaleCounter = 0
	default:
		after.PreviousProgress = t.Progress
		after.StaleCounter++
	}
	if o.Phase != "" {
		after.Phase = o.Phase
	}
	if o.State != "" {
		after.State = o.State
	}
	if o.Ledger != "" {
		after.Ledger = o.Ledger
	}
	used := after.Iteration
	if o.Cycle > 0 {
		used = o.Cycle
		if o.Unjudged {
			used = 0 // a cycle ends with its judged claim
		}
	}
	after.PromptTokens += o.PromptTokens
	after.CompletionTokens += o.CompletionTokens
	after.LastProcessedAt = now
	after.LeaseOwner = ""
	after.LeaseExpiresAt = time.Time{}
	after.NextAttemptAt = time.Time{}
	after.WaitingOn = WaitNone
	if o.Summary != "" {
		after.Summary = o.Summary
	}
	switch {
	case o.Verdict == VerdictDone:
		after.Status = StatusCompleted
		after.Progress = 100
		after.StaleCounter = 0
	case o.Verdict == VerdictStuck:
		after.Status = StatusFailed
		after.Error = firstNonEmpty(o.Reason, "the agent reported it is stuck")
	case o.Stalemate != "":
		after.Status = StatusStalemate
		after.Error = o.Stalemate
	case after.StaleCounter >= after.MaxStaleIterations && !o.Unjudged:
		after.Status = StatusStalemate
		after.Error = fmt.Sprintf("no progress in %d iterations", after.StaleCounter)
	case used >= after.MaxIterations:
		after.Status = StatusStalemate
		after.Error = fmt.Sprintf("reached the limit of %d iterations", after.MaxIterations)
	case after.MaxTokens > 0 && after.Tokens() >= after.MaxTokens:
		after.Status = StatusStalemate
		after.Error = fmt.Sprintf("token budget exhausted (%d of %d tokens)", after.Tokens(), after.MaxTokens)
	case t.Status == StatusPaused:
		// Paused while the iteration ran: keep the work and what it now
		// waits on, stay paused.
		after.WaitingOn = o.Wait
	case o.Wait != WaitNone:
		after.Status = StatusWaiting
		after.WaitingOn = o.Wait
	default:
		after.Status = StatusRunning
	}
	if after.Status.Terminal() {
		after.CompletedAt = now
	}
	step := o.Step
	step.TaskNumber = t.Number
	step.Iteration = after.Iteration
	step.Progress = after.Progress
	step.Time = now
	if len(step.Params) == 0 {
		step.Params = json.RawMessage(`{}`)
	}
	step.Call = 0
	more := callSteps(step, o.Steps)
	detail := map[string]any{"verdict": string(o.Verdict), "estimate": o.Progress}
	if o.Wait != WaitNone {
		detail["wait"] = string(o.Wait)
	}
	if o.Repeated {
		detail["repeated"] = true
	}
	if o.Cycle > 0 {
		detail["cycle"] = o.Cycle // what check bounds by max_iterations
	}
	if o.Wait == WaitApproval && !after.Status.Terminal() {
		// The call waits for a person: it is kept on the task, and its
		// step is written when it has run or been denied.
		after.ApprovalAction, after.ApprovalParams, after.ApprovalGranted = step.Action, string(step.Params), false
		after.ApprovalRole = step.Role
		detail["action"], detail["params"] = step.Action, json.RawMessage(step.Params)
		detail["call"] = ApprovalID(after)
		m, err := Change(t, after, EventIterated, o.Owner, now, withFiles(detail, o.Files))
		if err != nil {
			return Mutation{}, err
		}
		m.Files, m.Subtasks = o.Files, o.Subtasks
		return withNotifications(m, t, o.Notifications, now), nil
	}
	subtasks := o.Subtasks
	if after.Status.Terminal() && len(subtasks) > 0 {
		// A task that ends has no use for children: none is created,
		// and the step says so.
		lines := make([]string, len(subtasks))
		for i, in := range subtasks {
			lines[i] = SubtaskNotCreated(in, "this task ended with this step")
		}
		asked := SubtaskStep(&step, more)
		asked.Result, subtasks = WithSubtaskLines(asked.Result, lines), nil
	}
	m, err := changeWithStep(t, after, EventIterated, o.Owner, now, withFiles(detail, o.Files), step, more...)
	if err != nil {
		return Mutation{}, err
	}
	m.Files, m.Subtasks = o.Files, subtasks
	return withNotifications(m, t, o.Notifications, now), nil
}

// SubtaskCreated is the line a step's result gains for child, a subtask
// its tool asked for, once the store has created it.
func SubtaskCreated(child Task) string {
	s := fmt.Sprintf("created subtask #%d %q", child.Number, child.Name)
	if child.MaxTokens > 0 {
		s += fmt.Sprintf(" with a budget of %d tokens, held from this task's until it ends", child.MaxTokens)
	}
	return s
}

// SubtaskNotCreated is the line a step's result gains for a subtask its
// tool asked for that was not created, for reason.
func SubtaskNotCreated(in NewTask, reason string) string {
	name := strings.TrimSpace(in.Name)
	if name == "" {
		name = NameFromGoal(in.Goal)
	}
	return fmt.Sprintf("subtask %q not created: %s", name, reason)
}

// WithSubtaskLines is a step's result followed by lines about the
// subtasks its tools asked for.
func WithSubtaskLines(result string, lines []string) string {
	if len(lines) == 0 {
		return result
	}
	all := strings.Join(lines, "\n")
	if result == "" {
		return all
	}
	if keep := MaxResultBytes - len(all) - 1; len(result) > keep {
		// The lines are what the next prompt must see: the result
		// before them gives way, cut where a character begins.
		keep = max(keep, 0)
		for keep > 0 && !utf8.RuneStart(result[keep]) {
			keep--
		}
		result = result[:keep]
	}
	return result + "\n" + all
}

// withFiles records in an event's detail which files the step changed:
// path, size and SHA-256 of each written, path of each deleted. The data
// is in task_files.
func withFiles(detail map[string]any, changes []FileChange) map[string]any {
	if len(changes) == 0 {
		return detail
	}
	files := make([]map[string]any, len(changes))
	for i, c := range changes {
		if c.Delete {
			files[i] = map[string]any{"path": c.Path, "deleted": true}
		} else {
			files[i] = map[string]any{"path": c.Path, "size": len(c.Data), "sha256": FileSum(c.Data)}
		}
	}
	if detail == nil {
		detail = map[string]any{}
	}
	detail["files"] = files
	return detail
}

// holdsLease refuses an outcome for a task that has ended or whose lease
// its worker no longer holds (same fence, same owner).
func holdsLease(op string, t Task, o Outcome) error {
	if t.Status.Terminal() {
		return &TaskError{Op: op, Number: t.Number, Status: t.Status, Err: ErrTerminal}
	}
	if t.Fence != o.Fence || t.LeaseOwner != o.Owner {
		return &TaskError{Op: op, Number: t.Number,
			Err: fmt.Errorf("%w (held fence %d by %q, task is at fence %d by %q)", ErrStaleFence, o.Fence, o.Owner, t.Fence, t.LeaseOwner)}
	}
	return nil
}

// withNotifications adds the outbox rows a step's tool asked for to m.
func withNotifications(m Mutation, t Task, ns []Notification, now time.Time) Mutation {
	for _, n := range ns {
		n.TaskNumber = t.Number
		// A tool posts to its task's room as the row says when the
		// iteration commits: a task moved meanwhile (into its Discord
		// thread, see Moved) posts there, not where it was when the
		// iteration was claimed.
		if t.RoomID != "" {
			n.Room = t.RoomID
		}
		if n.Asks != WaitNone && m.Task.Status.Terminal() {
			// The iteration that asked ended the task (its last
			// iteration, its budget): there is nothing to answer.
			continue
		}
		if n.Room == "" {
			// A task without a room (made through the API, the CLI or
			// the dashboard) is followed through its events; there is
			// no one to post to.
			continue
		}
		if n.CreatedAt.IsZero() {
			n.CreatedAt = now
		}
		if n.NextAttemptAt.IsZero() {
			n.NextAttemptAt = now
		}
		m.Notifications = append(m.Notifications, n)
	}
	return m
}

// ToolRan completes the iteration that asked for an approval: the
// approved call ran, and its step is written under that iteration's
// number. It spends no iteration and counts as no stall; like Iterated it
// needs the lease and releases it.
func ToolRan(t Task, o Outcome) (Mutation, error) {
	if err := holdsLease("commit the approved call of", t, o); err != nil {
		return Mutation{}, err
	}
	if !t.ApprovalGranted {
		return Mutation{}, &TaskError{Op: "commit the approved call of", Number: t.Number, Err: ErrNotAwaitingApproval}
	}
	now := UTC(o.Now)
	after := t
	after.ApprovalAction, after.ApprovalParams, after.ApprovalGranted, after.ApprovalRole = "", "", false, ""
	after.LastProcessedAt = now
	after.LeaseOwner, after.LeaseExpiresAt = "", time.Time{}
	if o.Wait != WaitNone && t.Status != StatusPaused {
		after.Status, after.WaitingOn = StatusWaiting, o.Wait
	}
	step := o.Step
	step.TaskNumber, step.Iteration, step.Progress, step.Time = t.Number, t.Iteration, t.Progress, now
	if step.Role == "" {
		step.Role = t.ApprovalRole // the call is the asking step's, run now
	}
	if len(step.Params) == 0 {
		step.Params = json.RawMessage(nonEmptyJSON(t.ApprovalParams))
	}
	m, err := changeWithStep(t, after, EventToolRan, o.Owner, now, withFiles(nil, o.Files), step)
	if err != nil {
		return Mutation{}, err
	}
	m.Files, m.Subtasks = o.Files, o.Subtasks
	return withNotifications(m, t, o.Notifications, now), nil
}

func nonEmptyJSON(s string) string {
	if s == "" {
		return "{}"
	}
	return s
}

// Rejected records, without changing the task, that a worker's result came
// too late: its lease had been lost. Nothing a task produced is lost — the
// rejected step is kept in the event.
func Rejected(t Task, o Outcome, reason error) (Mutation, error) {
	detail := map[string]any{
		"reason":      reason.Error(),
		"stale_fence": o.Fence,
		"action":      o.Step.Action,
		"result":      o.Step.Result,
		"estimate":    o.Progress,
	}
	if len(o.Steps) > 0 {
		// The claim's further calls (plugin/toolsteps.go), kept as its
		// first is.
		calls := make([]map[string]any, len(o.Steps))
		for i, s := range o.Steps {
			calls[i] = map[string]any{"action": s.Action, "result": s.Result, "success": s.Success}
		}
		detail["calls"] = calls
	}
	return Change(t, t, EventResultRejected, o.Owner, o.Now, detail)
}

// MaxCommitFailures is how many times the result of one iteration may
// fail to be written before the task fails instead of running it again:
// a result the store refuses for what it is would otherwise be made,
// refused and made again, a model call each time, forever.
const MaxCommitFailures = 3

// CommitFailed records that the result of the iteration claimed on t
// could not be written, for reason, and that this is the failures-th time
// for that iteration. The task is released to run the iteration again; at
// MaxCommitFailures it fails with the reason instead. It needs the
// lease, as the commit did.
func CommitFailed(t Task, o Outcome, reason error, failures int) (Mutation, error) {
	if err := holdsLease("record the failed commit of", t, o); err != nil {
		return Mutation{}, err
	}
	now := UTC(o.Now)
	after := t
	after.LeaseOwner, after.LeaseExpiresAt = "", time.Time{}
	detail := map[string]any{"iteration": t.Iteration + 1, "failures": failures, "reason": reason.Error()}
	if failures >= MaxCommitFailures {
		after.Status = StatusFailed
		after.Error = fmt.Sprintf("the result of iteration %d could not be recorded (%d tries): %v", t.Iteration+1, failures, reason)
		after.WaitingOn = WaitNone
		after.ApprovalAction, after.ApprovalParams, after.ApprovalGranted, after.ApprovalRole = "", "", false, ""
		after.CompletedAt = now
	}
	return Change(t, after, EventCommitFailed, o.Owner, now, detail)
}

// CommitFailures counts the EventCommitFailed events among events that are
// about iteration.
func CommitFailures(events []TaskEvent, iteration int) int {
	n := 0
	for _, e := range events {
		if e.Type != EventCommitFailed {
			continue
		}
		var p EventPayload
		if json.Unmarshal(e.Payload, &p) != nil {
			continue
		}
		if it, ok := p.Detail["iteration"].(float64); ok && int(it) == iteration {
			n++
		}
	}
	return n
}
