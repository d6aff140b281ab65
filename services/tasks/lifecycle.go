package tasks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// ErrTooManyActive refuses a task past a limit (the requestor's active
// tasks, a task's subtasks, their depth): domain.ErrLimit, which the store
// checks atomically with the insert.
var ErrTooManyActive = domain.ErrLimit

// active are the statuses of tasks that have not ended.
var active = []domain.Status{domain.StatusQueued, domain.StatusRunning, domain.StatusPaused, domain.StatusWaiting}

// Create validates and creates a task and wakes a worker for it. A
// requestor may have at most MaxActivePerUser tasks that have not ended.
//
// A task created without a token budget gets the service's default (a
// subtask's is at most what its parent has left: the store sees to it).
func (s *Service) Create(ctx context.Context, in domain.NewTask) (domain.Task, error) {
	if in.Now.IsZero() {
		in.Now = s.clk.Now()
	}
	if err := s.it.strategies.check(in.Strategy); err != nil {
		return domain.Task{}, err
	}
	if in.MaxTokens == nil {
		d := s.opts.MaxTokens
		in.MaxTokens = &d
	}
	if in.MaxActive == 0 {
		in.MaxActive = s.opts.MaxActivePerUser
	}
	// A store that does not answer is tried again for a while, and an
	// insert whose answer was lost (the connection broke after its
	// commit) is found, not made twice.
	cctx, cancel := context.WithTimeout(ctx, commitTimeout)
	defer cancel()
	var t domain.Task
	sent := false
	err := s.persist(cctx, func() error {
		if sent {
			found, ok, err := s.createdUnheard(cctx, in)
			if err != nil || ok {
				t = found
				return err
			}
		}
		sent = true
		var err error
		t, err = s.store.CreateTask(cctx, in)
		return err
	})
	var made *domain.ExistingTaskError
	switch {
	case errors.As(err, &made):
		// Made for this request already (in.Origin): by an earlier
		// create whose answer was lost, or another handling of the same
		// message. That task is the answer; nothing new happened.
		return made.Task, nil
	case err != nil:
		return domain.Task{}, err
	}
	s.emit(ctx, plugin.TaskCreated, t)
	s.Wake()
	return t, nil
}

// createdUnheard finds the task a CreateTask of in made if it committed:
// the requestor's task with in's goal, room and creation time (set by
// Create, to the microsecond).
func (s *Service) createdUnheard(ctx context.Context, in domain.NewTask) (domain.Task, bool, error) {
	want, err := domain.NewTaskRow(in)
	if err != nil {
		return domain.Task{}, false, nil // CreateTask refuses it too
	}
	domain.CleanTask(&want)
	recent, err := s.store.ListTasks(ctx, domain.TaskFilter{RequestorID: want.RequestorID, RoomID: want.RoomID,
		Query: want.Goal, Order: domain.OrderRecent, Limit: 20})
	if err != nil {
		return domain.Task{}, false, fmt.Errorf("look for the task created without an answer: %w", err)
	}
	for _, t := range recent {
		if t.Goal == want.Goal && t.CreatedAt.Equal(want.CreatedAt) && t.ParentNumber == want.ParentNumber {
			return t, true, nil
		}
	}
	return domain.Task{}, false, nil
}

// Strategies lists the names of the strategies a task may choose, in
// the order docs/strategies.md gives them, then the ones plugins added.
func (s *Service) Strategies() []string { return slices.Clone(s.it.strategies.names) }

// Pause stops a task from being served until it is resumed. An iteration
// already running finishes and is kept; the task stays paused.
func (s *Service) Pause(ctx context.Context, number int64, actor string) (domain.Task, error) {
	return s.transition(ctx, number, func(t domain.Task) (domain.Mutation, error) {
		return domain.Paused(t, actor, s.clk.Now())
	})
}

// Resume puts a paused task back in the queue.
func (s *Service) Resume(ctx context.Context, number int64, actor string) (domain.Task, error) {
	return s.transition(ctx, number, func(t domain.Task) (domain.Mutation, error) {
		return domain.Resumed(t, actor, s.clk.Now())
	})
}

// Cancel ends a task for good, and its subtasks with it.
func (s *Service) Cancel(ctx context.Context, number int64, actor string) (domain.Task, error) {
	t, err := s.transition(ctx, number, func(t domain.Task) (domain.Mutation, error) {
		return domain.Canceled(t, actor, "", s.clk.Now())
	})
	if err != nil {
		return t, err
	}
	children, err := s.store.ListTasks(ctx, domain.TaskFilter{ParentNumber: number, Statuses: active})
	if err != nil {
		return t, fmt.Errorf("cancel subtasks of #%d: %w", number, err)
	}
	for _, c := range children {
		if _, err := s.Cancel(ctx, c.Number, actor); err != nil && !errors.Is(err, domain.ErrTerminal) {
			return t, err
		}
	}
	return t, nil
}

// Answer resumes a task waiting for an answer to its question.
func (s *Service) Answer(ctx context.Context, number int64, actor, answer string) (domain.Task, error) {
	return s.transition(ctx, number, func(t domain.Task) (domain.Mutation, error) {
		return domain.Answered(t, actor, answer, s.clk.Now())
	})
}

// Approve lets a task run the tool call it asked approval for, exactly as
// it asked (docs/security.md). call is the id of the request the person saw
// (domain.ApprovalID), or "" for the call pending now; a call no longer
// pending is refused with a *domain.StaleApprovalError. Who may decide is
// the caller's to check.
func (s *Service) Approve(ctx context.Context, number int64, actor, call string) (domain.Task, error) {
	return s.transition(ctx, number, func(t domain.Task) (domain.Mutation, error) {
		return domain.Approved(t, actor, call, s.clk.Now())
	})
}

// Deny refuses the tool call a task asked approval for; its step fails
// with reason. call is as for Approve.
func (s *Service) Deny(ctx context.Context, number int64, actor, call, reason string) (domain.Task, error) {
	return s.transition(ctx, number, func(t domain.Task) (domain.Mutation, error) {
		return domain.Denied(t, actor, call, reason, s.clk.Now())
	})
}

// ErrNotEnded refuses to retry a task that has not ended.
var ErrNotEnded = errors.New("task has not ended")

// Retry continues an ended task: a new task with the same goal,
// continues_number set, a copy of the old task's files (the store makes it
// as it creates the task, so no worker can claim the task before they are
// there), and in its first prompt a summary of the old run and context. in
// says who asks and where (its Goal is ignored); the requestor's limits
// apply.
func (s *Service) Retry(ctx context.Context, number int64, in domain.NewTask) (domain.Task, error) {
	old, err := s.store.GetTask(ctx, number)
	if err != nil {
		return domain.Task{}, err
	}
	if !old.Status.Terminal() {
		return domain.Task{}, &domain.TaskError{Op: "retry", Number: number, Status: old.Status, Err: ErrNotEnded}
	}
	in.Goal, in.ContinuesNumber = old.Goal, old.Number
	if in.Name == "" {
		in.Name = old.Name
	}
	if in.MaxIterations == 0 {
		in.MaxIterations = old.MaxIterations
	}
	if in.MaxStaleIterations == 0 {
		in.MaxStaleIterations = old.MaxStaleIterations
	}
	return s.Create(ctx, in)
}

// transition writes a person's change of task number (fn), tells
// subscribers and wakes workers. A store that does not answer is tried
// again for a while, as Create does, and a change whose commit went
// through without its answer reaching us (the connection broke after the
// commit) is found in the task's events and reported done — not tried
// again and refused as though it had not happened ("already paused").
func (s *Service) transition(ctx context.Context, number int64, fn domain.MutateFunc) (domain.Task, error) {
	cctx, cancel := context.WithTimeout(ctx, commitTimeout)
	defer cancel()
	var tried []domain.TaskEvent // the events of the writes that may have committed
	var t domain.Task
	err := s.persist(cctx, func() error {
		if len(tried) > 0 {
			found, ok, err := s.transitioned(cctx, number, tried)
			if err != nil || ok {
				t = found
				return err
			}
		}
		var err error
		t, err = s.mutate(cctx, number, func(cur domain.Task) (domain.Mutation, error) {
			m, err := fn(cur)
			if err == nil {
				tried = append(tried, m.Event)
			}
			return m, err
		})
		return err
	})
	if err != nil {
		return t, err
	}
	s.afterChange(ctx, t, false)
	return t, nil
}

// transitioned looks in task number's events for one of the events tried
// (the same sequence, type, actor and time, to the microsecond a store
// keeps): if one is there, its write committed, and it returns the task.
func (s *Service) transitioned(ctx context.Context, number int64, tried []domain.TaskEvent) (domain.Task, bool, error) {
	from := tried[0].Sequence - 1
	for _, e := range tried {
		from = min(from, e.Sequence-1)
	}
	evs, err := s.store.TaskEvents(ctx, number, from)
	if err != nil {
		return domain.Task{}, false, fmt.Errorf("look for the change of task #%d made without an answer: %w", number, err)
	}
	for _, got := range evs {
		for _, e := range tried {
			if got.Sequence == e.Sequence && got.Type == e.Type && got.Actor == domain.CleanText(e.Actor) &&
				got.Time.Sub(e.Time).Abs() < time.Microsecond {
				t, err := s.store.GetTask(ctx, number)
				return t, err == nil, err
			}
		}
	}
	return domain.Task{}, false, nil
}
