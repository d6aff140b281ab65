package cli

import (
	"encoding/json"
	"time"
)

// The API's wire shapes, as far as this client reads them.

type task struct {
	Number             int64      `json:"number"`
	Name               string     `json:"name"`
	Goal               string     `json:"goal"`
	Status             string     `json:"status"`
	Progress           int        `json:"progress"`
	StaleCounter       int        `json:"stale_counter"`
	Iteration          int        `json:"iteration"`
	MaxIterations      int        `json:"max_iterations"`
	MaxStaleIterations int        `json:"max_stale_iterations"`
	RequestorID        string     `json:"requestor_id"`
	RoomID             string     `json:"room_id"`
	WorkspaceID        string     `json:"workspace_id"`
	CreatedAt          *time.Time `json:"created_at"`
	StartedAt          *time.Time `json:"started_at"`
	CompletedAt        *time.Time `json:"completed_at"`
	LastProcessedAt    *time.Time `json:"last_processed_at"`
	Summary            string     `json:"summary"`
	Error              string     `json:"error"`
	PromptTokens       int64      `json:"prompt_tokens"`
	CompletionTokens   int64      `json:"completion_tokens"`
	LeaseOwner         string     `json:"lease_owner"`
	// WaitingOn is "", answer, subtasks or approval.
	WaitingOn     string     `json:"waiting_on"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	// MaxTokens is the token budget; 0 is no limit.
	MaxTokens       int64     `json:"max_tokens"`
	ContinuesNumber *int64    `json:"continues_number"`
	Approval        *approval `json:"approval"`
	// Strategy is how the task is worked (absent from an older server:
	// loop); Phase where the strategy stands, empty for loop.
	Strategy string `json:"strategy"`
	Phase    string `json:"phase"`
	// Steps are the task's latest steps (a page of StepsTotal), oldest
	// first.
	Steps      []step `json:"steps"`
	StepsTotal int    `json:"steps_total"`
}

// approval is the tool call a task waits to make, or, granted, to run.
type approval struct {
	// ID names the request; a decision that carries it lands on this
	// call or on none.
	ID      string          `json:"id"`
	Action  string          `json:"action"`
	Params  json.RawMessage `json:"params"`
	Granted bool            `json:"granted"`
}

// decision is the answer to an approve or a deny: the task, and the call
// decided on.
type decision struct {
	task
	Decided approval `json:"decided"`
}

type step struct {
	Iteration int `json:"iteration"`
	// Call is the step's place among its iteration's steps, from 0: a
	// tools reply of several calls has a step per call.
	Call int `json:"call"`
	// Role is whose turn the step was: agent, thought, action,
	// observation, analysis, reviewer, supervisor or an agent's name.
	Role     string          `json:"role"`
	Action   string          `json:"action"`
	Params   json.RawMessage `json:"params"`
	Result   string          `json:"result"`
	Success  bool            `json:"success"`
	Error    string          `json:"error"`
	Progress int             `json:"progress"`
	Time     time.Time       `json:"time"`
}

type taskList struct {
	Tasks []task `json:"tasks"`
	Total int    `json:"total"`
	Next  *int64 `json:"next"`
}

type event struct {
	ID         int64     `json:"id"`
	TaskNumber int64     `json:"task_number"`
	Sequence   int64     `json:"sequence"`
	Type       string    `json:"type"`
	Payload    payload   `json:"payload"`
	Actor      string    `json:"actor"`
	Fence      int64     `json:"fence"`
	Time       time.Time `json:"time"`
}

type payload struct {
	Changes map[string]json.RawMessage `json:"changes"`
	Step    *step                      `json:"step"`
	Detail  map[string]any             `json:"detail"`
}

type eventList struct {
	Events []json.RawMessage `json:"events"`
}

// terminal reports whether nothing moves a task out of status.
func terminal(status string) bool {
	switch status {
	case "completed", "failed", "stalemate", "canceled":
		return true
	}
	return false
}

// apply sets the columns an event changed on t. The change values are the
// columns' JSON; a zero time ("0001-01-01T00:00:00Z") means not set.
func (t *task) apply(changes map[string]json.RawMessage) {
	for col, raw := range changes {
		var err error
		switch col {
		case "status":
			err = json.Unmarshal(raw, &t.Status)
		case "progress":
			err = json.Unmarshal(raw, &t.Progress)
		case "iteration":
			err = json.Unmarshal(raw, &t.Iteration)
		case "stale_counter":
			err = json.Unmarshal(raw, &t.StaleCounter)
		case "summary":
			err = json.Unmarshal(raw, &t.Summary)
		case "error":
			err = json.Unmarshal(raw, &t.Error)
		case "lease_owner":
			err = json.Unmarshal(raw, &t.LeaseOwner)
		case "name":
			err = json.Unmarshal(raw, &t.Name)
		case "prompt_tokens":
			err = json.Unmarshal(raw, &t.PromptTokens)
		case "completion_tokens":
			err = json.Unmarshal(raw, &t.CompletionTokens)
		case "completed_at":
			t.CompletedAt = timeOf(raw)
		case "started_at":
			t.StartedAt = timeOf(raw)
		case "next_attempt_at":
			t.NextAttemptAt = timeOf(raw)
		case "waiting_on":
			err = json.Unmarshal(raw, &t.WaitingOn)
		case "max_tokens":
			err = json.Unmarshal(raw, &t.MaxTokens)
		}
		_ = err // a column this client cannot read is left as it was
	}
}

func timeOf(raw json.RawMessage) *time.Time {
	var v time.Time
	if json.Unmarshal(raw, &v) != nil || v.IsZero() {
		return nil
	}
	return &v
}
