package domain

import "context"

// TaskControl is what people's commands ask of the task service, from
// chat and from the API alike; services/tasks implements it. The
// transitions refuse what a task's state forbids with ErrInvalidState or
// ErrTerminal (an answer to a task that asked nothing with
// ErrNotAwaitingAnswer, a decision on one that awaits none with
// ErrNotAwaitingApproval, both ErrInvalidState), Retry of a task that has
// not ended with the service's own error, and Create and Retry past the
// requestor's limit with ErrLimit. Who may ask is decided before: by the
// chat commands (docs/chat.md) and by the API's token (docs/api.md).
type TaskControl interface {
	Create(ctx context.Context, in NewTask) (Task, error)
	Pause(ctx context.Context, number int64, actor string) (Task, error)
	Resume(ctx context.Context, number int64, actor string) (Task, error)
	Cancel(ctx context.Context, number int64, actor string) (Task, error)
	// Answer resumes a task waiting on an answer with a person's words.
	Answer(ctx context.Context, number int64, actor, answer string) (Task, error)
	// Retry creates a task continuing the ended task number; in says who
	// asks and where, and carries the new context.
	Retry(ctx context.Context, number int64, in NewTask) (Task, error)
	// Approve and Deny decide on the tool call a task waits to make.
	// call names the request decided on (ApprovalID); one no longer
	// pending is refused with ErrStaleApproval.
	Approve(ctx context.Context, number int64, actor, call string) (Task, error)
	Deny(ctx context.Context, number int64, actor, call, reason string) (Task, error)
}

// ScheduleControl is what people's commands ask of the scheduler, from
// chat and from the API alike (docs/schedules.md); services/schedules
// implements it. who is the person asking: only a schedule's requestor
// or an admin may change it.
type ScheduleControl interface {
	Create(ctx context.Context, in NewSchedule) (Schedule, error)
	Get(ctx context.Context, id int64, who ScheduleCaller) (Schedule, error)
	Events(ctx context.Context, id int64) ([]ScheduleEvent, error)
	List(ctx context.Context, who ScheduleCaller) ([]Schedule, error)
	Pause(ctx context.Context, id int64, paused bool, who ScheduleCaller) (Schedule, error)
	Delete(ctx context.Context, id int64, who ScheduleCaller) (Schedule, error)
}
