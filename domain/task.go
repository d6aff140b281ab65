package domain

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Status is where a task stands in its life.
type Status string

// The statuses of docs/tasks.md. The last four are terminal.
const (
	StatusQueued    Status = "queued"
	StatusRunning   Status = "running"
	StatusPaused    Status = "paused"
	StatusWaiting   Status = "waiting"
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusStalemate Status = "stalemate"
	StatusCanceled  Status = "canceled"
)

// Statuses lists every status in lifecycle order.
var Statuses = []Status{StatusQueued, StatusRunning, StatusPaused, StatusWaiting,
	StatusCompleted, StatusFailed, StatusStalemate, StatusCanceled}

// Terminal reports whether nothing may move a task out of s.
func (s Status) Terminal() bool {
	switch s {
	case StatusCompleted, StatusFailed, StatusStalemate, StatusCanceled:
		return true
	}
	return false
}

// Valid reports whether s is one of the known statuses.
func (s Status) Valid() bool {
	for _, v := range Statuses {
		if s == v {
			return true
		}
	}
	return false
}

// Claimable reports whether the queue may hand a task in s to a worker.
func (s Status) Claimable() bool { return s == StatusQueued || s == StatusRunning }

// WaitOn says what a waiting task waits for (docs/tasks.md). A paused task
// keeps it, so resume returns it to that wait.
type WaitOn string

// What a task may wait on.
const (
	WaitNone     WaitOn = ""
	WaitAnswer   WaitOn = "answer"
	WaitSubtasks WaitOn = "subtasks"
	WaitApproval WaitOn = "approval"
)

// Defaults for a new task (docs/tasks.md).
const (
	DefaultMaxIterations      = 50
	DefaultMaxStaleIterations = 3
	MaxGoalLength             = 4000
	MaxNameLength             = 80
	// MaxResultBytes is how much of a tool's result a step keeps.
	MaxResultBytes = 1 << 20
	// DefaultMaxActive is how many tasks that have not ended a requestor
	// may have, subtasks included (TASKLOOM_MAX_ACTIVE).
	DefaultMaxActive = 20
	// MaxSubtasks is how many subtasks one task may have; MaxSubtaskDepth
	// how many levels subtasks may nest below a task a person created.
	MaxSubtasks     = 10
	MaxSubtaskDepth = 3
)

// Task is one row of the tasks table. Times are UTC and truncated to the
// microsecond, the precision both stores keep; a zero time means "not set".
//
// The JSON names are the column names. They are also the names used in the
// "changes" of task events, which is how `taskloom check` rebuilds a task.
type Task struct {
	Number             int64     `json:"number"`
	Name               string    `json:"name"`
	Goal               string    `json:"goal"`
	Status             Status    `json:"status"`
	Progress           int       `json:"progress"`
	PreviousProgress   int       `json:"previous_progress"`
	StaleCounter       int       `json:"stale_counter"`
	Iteration          int       `json:"iteration"`
	MaxIterations      int       `json:"max_iterations"`
	MaxStaleIterations int       `json:"max_stale_iterations"`
	RequestorID        string    `json:"requestor_id"`
	Platform           string    `json:"platform"`
	RoomID             string    `json:"room_id"`
	WorkspaceID        string    `json:"workspace_id"`
	ParentNumber       int64     `json:"parent_number"`
	LastProcessedAt    time.Time `json:"last_processed_at"`
	CreatedAt          time.Time `json:"created_at"`
	StartedAt          time.Time `json:"started_at"`
	CompletedAt        time.Time `json:"completed_at"`
	Summary            string    `json:"summary"`
	Error              string    `json:"error"`
	PromptTokens       int64     `json:"prompt_tokens"`
	CompletionTokens   int64     `json:"completion_tokens"`
	LeaseOwner         string    `json:"lease_owner"`
	LeaseExpiresAt     time.Time `json:"lease_expires_at"`
	Fence              int64     `json:"fence"`
	// WaitingOn is what a waiting (or paused while waiting) task waits on.
	WaitingOn WaitOn `json:"waiting_on"`
	// NextAttemptAt, when set, keeps the queue from handing the task out
	// before it: the model was unavailable (docs/tasks.md).
	NextAttemptAt time.Time `json:"next_attempt_at"`
	// MaxTokens bounds prompt + completion tokens, the task's own and its
	// subtasks'; 0 is no limit.
	MaxTokens int64 `json:"max_tokens"`
	// ContinuesNumber is the ended task this one retries, 0 for none.
	ContinuesNumber int64 `json:"continues_number"`
	// ApprovalAction and ApprovalParams are the tool call a task asked a
	// person to approve (docs/security.md): exactly what runs once
	// ApprovalGranted. ApprovalRole is the role of the step that asked
	// (docs/strategies.md), which the call's step keeps. Empty when none is
	// pending.
	ApprovalAction  string `json:"approval_action"`
	ApprovalParams  string `json:"approval_params"`
	ApprovalGranted bool   `json:"approval_granted"`
	ApprovalRole    string `json:"approval_role"`
	// ScheduleID is the schedule whose due time created the task
	// (docs/schedules.md), 0 for none.
	ScheduleID int64 `json:"schedule_id"`
	// Strategy is how the task's claims are made (docs/strategies.md): loop,
	// react, tools, review, supervisor, magentic, group_chat, or one a
	// plugin added.
	Strategy string `json:"strategy"`
	// Phase is where the strategy stands (review's analysis, execution,
	// review, decomposition; react's thought, action, observation; whose
	// turn it is in a multi-agent strategy). Empty for loop.
	Phase string `json:"phase"`
	// State is what a strategy keeps between claims (JSON, empty for
	// none): attempt counts, a pending instruction, the speaker.
	State string `json:"strategy_state"`
	// Ledger is magentic's ledger (JSON: facts, plan, chosen, stalls),
	// empty for other strategies.
	Ledger string `json:"ledger"`
	// EventSeq is the sequence number of the task's latest event. It is
	// bookkeeping, not state: replay derives it from the event count.
	EventSeq int64 `json:"-"`
	// Digest condenses the task's history for its prompt (a Digest's
	// String; "" for a task created before digests). Like EventSeq it is
	// derived from the events (DigestOf), so it is in none of them.
	Digest string `json:"-"`
}

// Tokens is what the task has used, prompt and completion together.
func (t Task) Tokens() int64 { return t.PromptTokens + t.CompletionTokens }

// TokensReserved is what the children of a task that have not ended hold
// of its token budget: their own budgets, reserved from the parent's
// when each was created, until each ends.
func TokensReserved(children []Task) int64 {
	var n int64
	for _, c := range children {
		if !c.Status.Terminal() && c.MaxTokens > 0 {
			n += c.MaxTokens
		}
	}
	return n
}

// TokensLeft is what a task with a token budget has left for a new
// subtask: its budget, less the tokens it has spent (its own and those of
// its children that ended) and those its children that have not ended
// hold (TokensReserved).
func TokensLeft(t Task, children []Task) int64 {
	return t.MaxTokens - t.Tokens() - TokensReserved(children)
}

// SubtaskBudgets is the token budget of each subtask asked for in one
// commit, given what their parent has left (TokensLeft) and what each
// asked for (asked[i] 0 when it named no budget). One that named a budget
// asks for it; the others get an even share of what is left, split among
// all the siblings asked together — or a quarter of it when one is asked
// alone, so that it leaves room for the next — and never more than what
// the named budgets leave them, shared alike. The store still caps each
// at what is left when it is created, so the children never hold more
// than their parent has left, and every sibling asked together is made
// while anything is left: a model that splits its work in three gets
// three subtasks, not one holding it all.
func SubtaskBudgets(left int64, asked []int64) []int64 {
	out := make([]int64, len(asked))
	if left <= 0 || len(asked) == 0 {
		return out
	}
	parts := int64(len(asked))
	if parts == 1 {
		parts = 4
	}
	share := left / parts
	var named int64
	unnamed := 0
	for _, a := range asked {
		if a > 0 {
			named += min(a, left)
		} else {
			unnamed++
		}
	}
	if unnamed > 0 {
		share = min(share, (left-named)/int64(unnamed))
	}
	share = max(share, 1)
	for i, a := range asked {
		out[i] = a
		if a <= 0 {
			out[i] = share
		}
	}
	return out
}

// Label is how chat messages name a task: #3 "Build auth".
func (t Task) Label() string { return fmt.Sprintf("#%d %q", t.Number, t.Name) }

// HasLease reports whether a worker holds the task at now.
func (t Task) HasLease(now time.Time) bool {
	return t.LeaseOwner != "" && t.LeaseExpiresAt.After(now)
}

// Step is one action a task ran, kept in order per task.
type Step struct {
	TaskNumber int64           `json:"task_number"`
	Iteration  int             `json:"iteration"`
	Thought    string          `json:"thought,omitempty"`
	Action     string          `json:"action"`
	Params     json.RawMessage `json:"params"`
	Result     string          `json:"result"`
	Success    bool            `json:"success"`
	Error      string          `json:"error,omitempty"`
	Progress   int             `json:"progress"`
	Time       time.Time       `json:"time"`
	// Call is the step's place among the steps of its iteration, from 0:
	// a tools reply of several calls writes a step per call, in order
	// (docs/strategies.md). (Iteration, Call) is a step's key.
	Call int `json:"call,omitempty"`
	// Role is whose turn the step was (docs/strategies.md): agent, thought,
	// action, observation, analysis, reviewer, supervisor or an agent's
	// name.
	Role string `json:"role,omitempty"`
	// ResultBytes is the size in bytes of the whole result, where a read
	// may have clipped Result (Store.PageSteps); then Result is whole when
	// len(Result) == ResultBytes. Other reads leave it 0.
	ResultBytes int `json:"-"`
}

// TaskEvent is one immutable entry of a task's event log. Sequence starts at
// 1 for each task and has no gaps; ID is global and orders all events of the
// store (it is what Server-Sent Events resume from).
type TaskEvent struct {
	ID         int64           `json:"id"`
	TaskNumber int64           `json:"task_number"`
	Sequence   int64           `json:"sequence"`
	Type       string          `json:"type"`
	Payload    json.RawMessage `json:"payload"`
	Actor      string          `json:"actor"`
	Fence      int64           `json:"fence"`
	Time       time.Time       `json:"time"`
}

// Task event types.
const (
	EventCreated        = "created"
	EventClaimed        = "claimed"
	EventIterated       = "iterated"
	EventPaused         = "paused"
	EventResumed        = "resumed"
	EventCanceled       = "canceled"
	EventWaiting        = "waiting"
	EventAnswered       = "answered"
	EventReleased       = "released"
	EventResultRejected = "result_rejected"
	// EventModelUnavailable: the model could not be reached; the task was
	// released unchanged but for when it may be tried again.
	EventModelUnavailable = "model_unavailable"
	// EventSubtaskEnded: a subtask ended; its tokens count toward the
	// parent, and the last one resumes a parent waiting on them.
	EventSubtaskEnded = "subtask_ended"
	// EventApproved and EventDenied: a person decided on a tool call the
	// task asked to make; EventToolRan: the approved call ran.
	EventApproved = "approved"
	EventDenied   = "denied"
	EventToolRan  = "tool_ran"
	// EventCommitFailed: an iteration's result could not be written (the
	// store refused it); the task was given back to run the iteration
	// again, or failed after MaxCommitFailures.
	EventCommitFailed = "commit_failed"
)

// EventPayload is the shape of TaskEvent.Payload: the columns the change set
// (by their JSON names) and what else is worth keeping about it.
type EventPayload struct {
	Changes map[string]json.RawMessage `json:"changes,omitempty"`
	Step    *Step                      `json:"step,omitempty"`
	// Steps are the further steps of the same iteration, after Step
	// (calls 1, 2…), without their results, as Step.
	Steps  []Step         `json:"steps,omitempty"`
	Detail map[string]any `json:"detail,omitempty"`
}

// NewTask is what it takes to create a task.
type NewTask struct {
	Name               string
	Goal               string
	RequestorID        string
	Platform           string
	RoomID             string
	WorkspaceID        string
	ParentNumber       int64
	MaxIterations      int
	MaxStaleIterations int
	// Strategy is how the task's claims are made; empty is loop. The
	// task service checks it names a strategy it has.
	Strategy string
	// MaxTokens is the token budget: nil for the default, 0 for no limit;
	// negative is invalid.
	MaxTokens *int64
	// ContinuesNumber names the ended task this one retries; the new
	// task starts with a copy of its files.
	ContinuesNumber int64
	// ScheduleID names the schedule the task is a run of.
	ScheduleID int64
	// Context is what the person who retried a task added: it goes into
	// the created event, where the first prompt finds it.
	Context string
	// MaxActive is the requestor's limit of tasks that have not ended,
	// subtasks included, checked atomically with the insert; 0 or less is
	// no limit (the task service and create_subtask pass one).
	MaxActive int
	// Origin names the request the task is made for — a chat message as
	// "<platform>:<message ID>" — once: a second create for the same
	// origin (a message handled twice, after a lost answer or by two
	// replicas) makes no task and fails with *ExistingTaskError, which
	// holds the first. Empty: no such check.
	Origin string
	Actor  string
	Now    time.Time
}

// ExistingTaskError is the answer of a create whose origin has its task
// already (NewTask.Origin): that task, made by an earlier create.
type ExistingTaskError struct{ Task Task }

func (e *ExistingTaskError) Error() string {
	return fmt.Sprintf("task #%d was made for this request already", e.Task.Number)
}

// Unwrap makes the error ErrExists.
func (e *ExistingTaskError) Unwrap() error { return ErrExists }

// Errors the stores and the transitions return. Compare with errors.Is.
var (
	ErrNotFound     = errors.New("no such task")
	ErrNoTask       = errors.New("no task is ready")
	ErrTerminal     = errors.New("task has ended")
	ErrStaleFence   = errors.New("lease lost: fence token is stale")
	ErrInvalidState = errors.New("transition not allowed in this state")
	ErrInvalid      = errors.New("invalid input")
	// ErrLimit refuses a task past a limit: the requestor's active tasks,
	// a task's subtasks, their depth, the parent's token budget.
	ErrLimit = errors.New("limit reached")
	// ErrExists is a create whose origin has its task already
	// (*ExistingTaskError holds it).
	ErrExists = errors.New("made already")
)

// TaskError says which operation failed on which task, wrapping the reason:
// "pause task #4: task has ended (completed)".
type TaskError struct {
	Op     string
	Number int64
	Status Status
	Err    error
}

func (e *TaskError) Error() string {
	s := fmt.Sprintf("%s task #%d: %v", e.Op, e.Number, e.Err)
	if e.Status != "" {
		s += fmt.Sprintf(" (%s)", e.Status)
	}
	return s
}

func (e *TaskError) Unwrap() error { return e.Err }

// UTC truncates t to the precision the stores keep.
func UTC(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Microsecond)
}
