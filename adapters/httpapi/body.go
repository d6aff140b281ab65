package httpapi

import (
	"encoding/json"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// The wire shapes of docs/api.md. A task is its columns (docs/tasks.md) in snake_case;
// a time not set is null.

type taskBody struct {
	Number             int64      `json:"number"`
	Name               string     `json:"name"`
	Goal               string     `json:"goal"`
	Status             string     `json:"status"`
	Progress           int        `json:"progress"`
	PreviousProgress   int        `json:"previous_progress"`
	StaleCounter       int        `json:"stale_counter"`
	Iteration          int        `json:"iteration"`
	MaxIterations      int        `json:"max_iterations"`
	MaxStaleIterations int        `json:"max_stale_iterations"`
	RequestorID        string     `json:"requestor_id"`
	Platform           string     `json:"platform"`
	RoomID             string     `json:"room_id"`
	WorkspaceID        string     `json:"workspace_id"`
	ParentNumber       *int64     `json:"parent_number"`
	LastProcessedAt    *time.Time `json:"last_processed_at"`
	CreatedAt          *time.Time `json:"created_at"`
	StartedAt          *time.Time `json:"started_at"`
	CompletedAt        *time.Time `json:"completed_at"`
	Summary            string     `json:"summary"`
	Error              string     `json:"error"`
	PromptTokens       int64      `json:"prompt_tokens"`
	CompletionTokens   int64      `json:"completion_tokens"`
	LeaseOwner         string     `json:"lease_owner"`
	LeaseExpiresAt     *time.Time `json:"lease_expires_at"`
	Fence              int64      `json:"fence"`
	// WaitingOn is "" or what a waiting (or paused while waiting) task
	// waits on: answer, subtasks or approval.
	WaitingOn     string     `json:"waiting_on"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	// MaxTokens is the token budget; 0 is no limit.
	MaxTokens       int64  `json:"max_tokens"`
	ContinuesNumber *int64 `json:"continues_number"`
	// ScheduleID is the schedule whose run this is (docs/schedules.md).
	ScheduleID *int64        `json:"schedule_id"`
	Approval   *approvalBody `json:"approval"`
	// Strategy is how the task is worked (docs/strategies.md); Phase where the
	// strategy stands ("" for loop); Ledger magentic's ledger, null for
	// the other strategies.
	Strategy string          `json:"strategy"`
	Phase    string          `json:"phase"`
	Ledger   json.RawMessage `json:"ledger"`
}

// approvalBody is the tool call a task asked a person to approve: null
// when none awaits a decision or waits to run once granted.
type approvalBody struct {
	// ID names the request (domain.ApprovalID): a decision that carries
	// it lands on this call or on none. "" once granted.
	ID      string          `json:"id"`
	Action  string          `json:"action"`
	Params  json.RawMessage `json:"params"`
	Granted bool            `json:"granted"`
	Role    string          `json:"role"`
}

// taskWithSteps is a task with a page of its steps: the latest ones, or
// those before an iteration.
type taskWithSteps struct {
	taskBody
	// Steps are the page's steps, oldest first, each result clipped to
	// StepResultRunes characters.
	Steps []stepBody `json:"steps"`
	// StepsTotal counts every step of the task.
	StepsTotal int `json:"steps_total"`
	// StepsNext is the before= of the page of older steps; null when the
	// page holds the task's first step (or none).
	StepsNext *int `json:"steps_next"`
	// StepsNextCall is the before_call= that goes with StepsNext: the
	// page may end between two calls of one iteration (domain.Step.Call).
	StepsNextCall *int `json:"steps_next_call,omitempty"`
}

type stepBody struct {
	Iteration int `json:"iteration"`
	// Call is the step's place among its iteration's steps, from 0: a
	// tools reply of several calls writes a step per call.
	Call   int             `json:"call"`
	Action string          `json:"action"`
	Params json.RawMessage `json:"params"`
	Result string          `json:"result"`
	// ResultBytes is the size of the whole result; ResultClipped says
	// that Result is only its beginning (GET
	// /api/tasks/{number}/steps/{iteration} has all of it).
	ResultBytes   int       `json:"result_bytes"`
	ResultClipped bool      `json:"result_clipped"`
	Success       bool      `json:"success"`
	Error         string    `json:"error,omitempty"`
	Thought       string    `json:"thought,omitempty"`
	Progress      int       `json:"progress"`
	Time          time.Time `json:"time"`
	// Role is whose turn the step was: agent, thought, action,
	// observation, analysis, reviewer, supervisor or an agent's name.
	Role string `json:"role"`
}

type eventBody struct {
	ID         int64           `json:"id"`
	TaskNumber int64           `json:"task_number"`
	Sequence   int64           `json:"sequence"`
	Type       string          `json:"type"`
	Payload    json.RawMessage `json:"payload"`
	Actor      string          `json:"actor"`
	Fence      int64           `json:"fence"`
	Time       time.Time       `json:"time"`
}

type listBody struct {
	Tasks []taskBody `json:"tasks"`
	// Total counts every task the filter matches, over all pages.
	Total int `json:"total"`
	// Next is the after= of the next page; null on the last one.
	Next *int64 `json:"next"`
}

type eventsBody struct {
	Events []eventBody `json:"events"`
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func taskOf(t domain.Task) taskBody {
	b := taskBody{
		Number: t.Number, Name: t.Name, Goal: t.Goal, Status: string(t.Status),
		Progress: t.Progress, PreviousProgress: t.PreviousProgress, StaleCounter: t.StaleCounter,
		Iteration: t.Iteration, MaxIterations: t.MaxIterations, MaxStaleIterations: t.MaxStaleIterations,
		RequestorID: t.RequestorID, Platform: t.Platform, RoomID: t.RoomID, WorkspaceID: t.WorkspaceID,
		LastProcessedAt: optTime(t.LastProcessedAt), CreatedAt: optTime(t.CreatedAt),
		StartedAt: optTime(t.StartedAt), CompletedAt: optTime(t.CompletedAt),
		Summary: t.Summary, Error: t.Error,
		PromptTokens: t.PromptTokens, CompletionTokens: t.CompletionTokens,
		LeaseOwner: t.LeaseOwner, LeaseExpiresAt: optTime(t.LeaseExpiresAt), Fence: t.Fence,
	}
	b.ParentNumber = optNumber(t.ParentNumber)
	b.WaitingOn, b.NextAttemptAt, b.MaxTokens = string(t.WaitingOn), optTime(t.NextAttemptAt), t.MaxTokens
	b.ContinuesNumber = optNumber(t.ContinuesNumber)
	b.ScheduleID = optNumber(t.ScheduleID)
	if t.ApprovalAction != "" {
		b.Approval = &approvalBody{ID: domain.ApprovalID(t), Action: t.ApprovalAction, Params: jsonOf(t.ApprovalParams), Granted: t.ApprovalGranted, Role: t.ApprovalRole}
	}
	b.Strategy, b.Phase, b.Ledger = t.Strategy, t.Phase, json.RawMessage("null")
	if t.Ledger != "" {
		b.Ledger = jsonOf(t.Ledger)
	}
	return b
}

// optNumber is a task number, or null for 0 (none).
func optNumber(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}

// jsonOf is s when it is JSON, {} when it is empty, and s as a JSON
// string otherwise, so that a body is always valid JSON.
func jsonOf(s string) json.RawMessage {
	switch {
	case s == "":
		return json.RawMessage(`{}`)
	case json.Valid([]byte(s)):
		return json.RawMessage(s)
	}
	raw, _ := json.Marshal(s) // a string always encodes
	return raw
}

func stepOf(s domain.Step) stepBody {
	params := s.Params
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	size := max(s.ResultBytes, len(s.Result)) // ResultBytes is 0 from a read that does not clip
	return stepBody{Iteration: s.Iteration, Call: s.Call, Action: s.Action, Params: params, Result: s.Result,
		ResultBytes: size, ResultClipped: len(s.Result) < size, Success: s.Success, Error: s.Error, Thought: s.Thought, Progress: s.Progress, Time: s.Time.UTC(), Role: s.Role}
}

func eventOf(e domain.TaskEvent) eventBody {
	payload := e.Payload
	if len(payload) == 0 {
		payload = json.RawMessage(`{}`)
	}
	return eventBody{ID: e.ID, TaskNumber: e.TaskNumber, Sequence: e.Sequence, Type: e.Type,
		Payload: payload, Actor: e.Actor, Fence: e.Fence, Time: e.Time.UTC()}
}

// notificationBody is one row of the outbox (docs/security.md): a pending
// update for a room, or a dead letter (status "failed") with why.
type notificationBody struct {
	ID         int64           `json:"id"`
	Room       string          `json:"room"`
	TaskNumber int64           `json:"task_number"`
	Category   string          `json:"category"`
	Payload    json.RawMessage `json:"payload"`
	CreatedAt  time.Time       `json:"created_at"`
	Attempts   int             `json:"attempts"`
	LastError  string          `json:"last_error"`
	Status     string          `json:"status"`
	FailedAt   *time.Time      `json:"failed_at"`
}

type notificationsBody struct {
	Notifications []notificationBody `json:"notifications"`
	// Next is the after= of the next page; null on the last one.
	Next *int64 `json:"next"`
}

func notificationOf(n domain.Notification) notificationBody {
	payload := n.Payload
	if len(payload) == 0 {
		payload = json.RawMessage(`{}`)
	}
	return notificationBody{ID: n.ID, Room: n.Room, TaskNumber: n.TaskNumber, Category: n.Category, Payload: payload,
		CreatedAt: n.CreatedAt.UTC(), Attempts: n.Attempts, LastError: n.LastError, Status: n.Status, FailedAt: optTime(n.FailedAt)}
}
