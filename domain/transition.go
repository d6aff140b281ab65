package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Mutation is one state change of one task, as a store writes it: the new
// row, the event that records it, the step it ran (if any), the
// notifications it causes and the changes to the task's files — all in one
// transaction.
type Mutation struct {
	Task  Task
	Event TaskEvent
	Step  *Step
	// Steps are the further steps of Step's iteration, written after it
	// in order (calls 1, 2…): a tools reply of several calls.
	Steps         []Step
	Notifications []Notification
	// Files are the writes and deletions of the task's files the step
	// made (docs/deploy.md), written before the event.
	Files []FileChange
	// Subtasks are the children the step's tool asked for, created by
	// the store in the same transaction, under the limits of subtasks
	// checked there (see NewTask.MaxActive, MaxSubtasks, MaxSubtaskDepth
	// and the parent's token budget). The store notes on the step, for
	// each, its number or why it was not created; a commit refused for a
	// lost lease creates none.
	Subtasks []NewTask
}

// MutateFunc computes a mutation from the current row, which the store has
// locked. Returning an error writes nothing.
type MutateFunc func(current Task) (Mutation, error)

// Change builds the mutation that moves before to after, recording an event
// of type typ whose payload lists exactly the columns that differ.
func Change(before, after Task, typ, actor string, now time.Time, detail map[string]any) (Mutation, error) {
	return change(before, after, typ, actor, now, detail, nil, nil)
}

// changeWithStep is Change for a mutation that writes step: its event
// records the step without its result, which is stored once, in the step
// (up to MaxResultBytes), and the task's digest counts it.
//
// more are the further steps of step's iteration (a tools reply's calls
// after its first), recorded and counted the same way.
func changeWithStep(before, after Task, typ, actor string, now time.Time, detail map[string]any, step Step, more ...Step) (Mutation, error) {
	m, err := change(before, after, typ, actor, now, detail, &step, more)
	if err != nil {
		return m, err
	}
	m.Step = &step
	m.Steps = more
	digested(&m.Task, func(d *Digest) {
		d.AddStep(step)
		for _, s := range more {
			d.AddStep(s)
		}
	})
	return m, nil
}

func change(before, after Task, typ, actor string, now time.Time, detail map[string]any, step *Step, more []Step) (Mutation, error) {
	changes, err := diff(before, after)
	if err != nil {
		return Mutation{}, fmt.Errorf("%s task #%d: %w", typ, before.Number, err)
	}
	after.EventSeq = before.EventSeq + 1
	p := EventPayload{Changes: changes, Detail: detail}
	if step != nil {
		st := *step
		st.Result = ""
		p.Step = &st
		for _, s := range more {
			s.Result = ""
			p.Steps = append(p.Steps, s)
		}
	}
	payload, err := json.Marshal(p)
	if err != nil {
		return Mutation{}, fmt.Errorf("%s task #%d: encode event: %w", typ, before.Number, err)
	}
	m := Mutation{
		Task: after,
		Event: TaskEvent{
			TaskNumber: after.Number,
			Sequence:   after.EventSeq,
			Type:       typ,
			Payload:    payload,
			Actor:      actor,
			Fence:      after.Fence,
			Time:       UTC(now),
		},
	}
	if _, ok := EventAnswer(m.Event); ok {
		digested(&m.Task, func(d *Digest) { d.addAnswer(m.Event.Sequence) })
	}
	return m, nil
}

// diff returns the columns of after that differ from before, by JSON name,
// with after's JSON: what columns gives, compared column by column. It
// encodes only the fields whose values differ (every event's payload is
// one, so this is on every write's path).
func diff(before, after Task) (map[string]json.RawMessage, error) {
	// Fields are compared as ==, unboxed (Value.Equal), and encoded only
	// when they differ so.
	b, a := reflect.ValueOf(&before).Elem(), reflect.ValueOf(&after).Elem()
	out := map[string]json.RawMessage{}
	for _, f := range taskFields {
		fa, fb := a.Field(f.index), b.Field(f.index)
		if f.isTime {
			// Equal instants at equal offsets encode alike; a time
			// encodes itself (no reflection, no boxing).
			ta, tb := fa.Addr().Interface().(*time.Time), fb.Addr().Interface().(*time.Time)
			if _, oa := ta.Zone(); ta.Equal(*tb) {
				if _, ob := tb.Zone(); oa == ob {
					continue
				}
			}
			ja, err := ta.MarshalJSON()
			if err != nil {
				return nil, err
			}
			out[f.name] = ja
			continue
		}
		if f.comparable && fa.Equal(fb) {
			continue
		}
		if ja, ok := plainJSON(fa); ok {
			// A string, number or bool that differs encodes differently.
			out[f.name] = ja
			continue
		}
		ja, err := json.Marshal(fa.Interface())
		if err != nil {
			return nil, err
		}
		jb, err := json.Marshal(fb.Interface())
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(ja, jb) {
			out[f.name] = ja
		}
	}
	return out, nil
}

// plainJSON is what encoding/json writes for v when v is an integer, a
// bool, or a string that needs no escaping; ok is false for anything else.
func plainJSON(v reflect.Value) (b json.RawMessage, ok bool) {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(nil, v.Int(), 10), true
	case reflect.Bool:
		return strconv.AppendBool(nil, v.Bool()), true
	case reflect.String:
		s := v.String()
		if !plainJSONString(s) {
			return nil, false
		}
		b = make([]byte, 0, len(s)+2)
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"'), true
	}
	return nil, false
}

// taskField is a field of Task with a JSON name.
type taskField struct {
	index      int
	name       string
	comparable bool
	isTime     bool
}

// taskFields are the fields columns encodes, in order.
var taskFields = func() []taskField {
	var out []taskField
	t := reflect.TypeFor[Task]()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, taskField{i, name, f.Type.Comparable(), f.Type == reflect.TypeFor[time.Time]()})
	}
	return out
}()

func columns(t Task) (map[string]json.RawMessage, error) {
	raw, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	return m, json.Unmarshal(raw, &m)
}

// NewTaskRow validates a request and returns the row to insert (without its
// number, which the store assigns) — goal 1–4000 characters and not blank,
// name derived from the goal when empty, limits defaulted.
func NewTaskRow(in NewTask) (Task, error) {
	goal := strings.TrimSpace(in.Goal)
	if goal == "" {
		return Task{}, fmt.Errorf("create task: %w: the goal is empty", ErrInvalid)
	}
	if n := utf8.RuneCountInString(in.Goal); n > MaxGoalLength {
		return Task{}, fmt.Errorf("create task: %w: the goal is %d characters; the limit is %d", ErrInvalid, n, MaxGoalLength)
	}
	if !utf8.ValidString(in.Goal) || !utf8.ValidString(in.Name) {
		return Task{}, fmt.Errorf("create task: %w: text is not valid UTF-8", ErrInvalid)
	}
	var maxTokens int64
	if in.MaxTokens != nil {
		maxTokens = *in.MaxTokens
	}
	if maxTokens < 0 {
		return Task{}, fmt.Errorf("create task: %w: max_tokens is %d; it must be 0 (no limit) or more", ErrInvalid, maxTokens)
	}
	name := strings.TrimSpace(in.Name)
	if name == "" {
		name = NameFromGoal(goal)
	}
	if utf8.RuneCountInString(name) > MaxNameLength {
		name = truncateRunes(name, MaxNameLength)
	}
	t := Task{
		Name:               name,
		Goal:               goal,
		Status:             StatusQueued,
		MaxIterations:      in.MaxIterations,
		MaxStaleIterations: in.MaxStaleIterations,
		RequestorID:        in.RequestorID,
		Platform:           in.Platform,
		RoomID:             in.RoomID,
		WorkspaceID:        in.WorkspaceID,
		ParentNumber:       in.ParentNumber,
		MaxTokens:          maxTokens,
		ContinuesNumber:    in.ContinuesNumber,
		ScheduleID:         in.ScheduleID,
		Strategy:           strings.TrimSpace(in.Strategy),
		CreatedAt:          UTC(in.Now),
	}
	if t.Strategy == "" {
		t.Strategy = StrategyLoop
	}
	t.Digest = Digest{}.String()
	if t.MaxIterations <= 0 {
		t.MaxIterations = DefaultMaxIterations
	}
	if t.MaxStaleIterations <= 0 {
		t.MaxStaleIterations = DefaultMaxStaleIterations
	}
	if t.WorkspaceID == "" {
		t.WorkspaceID = "local"
	}
	return t, nil
}

// Created builds the first event of a task whose row the store has just
// numbered; a retry's context goes into its detail.
func Created(t Task, actor, context string) (Mutation, error) {
	var detail map[string]any
	if context != "" {
		detail = map[string]any{"context": context}
	}
	return Change(Task{}, t, EventCreated, actor, t.CreatedAt, detail)
}

// NameFromGoal derives a short task name from its goal without asking a
// model: the first sentence, at most eight words and 60 characters, with a
// leading capital.
func NameFromGoal(goal string) string {
	s := strings.TrimSpace(goal)
	if i := sentenceEnd(s); i > 0 {
		s = s[:i]
	}
	words := strings.Fields(s)
	if len(words) > 8 {
		words = words[:8]
	}
	s = strings.Join(words, " ")
	if utf8.RuneCountInString(s) > 60 {
		s = strings.TrimSpace(truncateRunes(s, 59)) + "…"
	}
	if s == "" {
		return "Task"
	}
	r, size := utf8.DecodeRuneInString(s)
	return strings.ToUpper(string(r)) + s[size:]
}

// sentenceEnd is where the first sentence of s ends: a newline, or . ! ?
// followed by a space or the end ("v1.2" and "<!channel>" do not end one).
func sentenceEnd(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\n':
			return i
		case '.', '!', '?':
			if i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\n' {
				return i
			}
		}
	}
	return -1
}

func truncateRunes(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// Claim is a worker's request for the next task.
type Claim struct {
	Owner string
	Now   time.Time
	Lease time.Duration
	// StoreClock measures the lease on the store's clock, which every
	// replica shares, instead of Now (docs/security.md).
	StoreClock bool
}

// Claimed applies a claim to a task the queue handed out: a new lease, the
// fence token incremented, status running. Stores run the same change as one
// SQL statement and record it with ClaimedEvent.
func Claimed(t Task, c Claim) (Mutation, error) {
	if !t.Status.Claimable() {
		return Mutation{}, &TaskError{Op: "claim", Number: t.Number, Status: t.Status, Err: ErrInvalidState}
	}
	if t.HasLease(c.Now) {
		return Mutation{}, &TaskError{Op: "claim", Number: t.Number, Err: fmt.Errorf("%w: leased by %s", ErrInvalidState, t.LeaseOwner)}
	}
	after := t
	after.Status = StatusRunning
	after.LeaseOwner = c.Owner
	after.LeaseExpiresAt = UTC(c.Now.Add(c.Lease))
	after.Fence++
	if after.StartedAt.IsZero() {
		after.StartedAt = UTC(c.Now)
	}
	return Change(t, after, EventClaimed, c.Owner, c.Now, nil)
}

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
