package tasks

import (
	"context"
	"errors"
	"fmt"

	"github.com/taskloom/taskloom/plugin"
)

// ErrTooManyActive refuses a task beyond a requestor's limit of active ones.
var ErrTooManyActive = errors.New("too many active tasks")

// active are the statuses of tasks that have not ended.
var active = []plugin.Status{plugin.StatusQueued, plugin.StatusRunning, plugin.StatusPaused, plugin.StatusWaiting}

// Create validates and creates a task and wakes a worker for it. A
// requestor may have at most MaxActivePerUser tasks that have not ended.
func (s *Service) Create(ctx context.Context, in plugin.NewTask) (plugin.Task, error) {
	if in.Now.IsZero() {
		in.Now = s.clk.Now()
	}
	if in.RequestorID != "" {
		n, err := s.store.CountTasks(ctx, plugin.TaskFilter{RequestorID: in.RequestorID, Statuses: active})
		if err != nil {
			return plugin.Task{}, fmt.Errorf("create task: count active tasks: %w", err)
		}
		if n >= s.opts.MaxActivePerUser {
			return plugin.Task{}, fmt.Errorf("create task: %w: you already have %d tasks that have not ended (the limit is %d)", ErrTooManyActive, n, s.opts.MaxActivePerUser)
		}
	}
	t, err := s.store.CreateTask(ctx, in)
	if err != nil {
		return plugin.Task{}, err
	}
	s.emit(ctx, plugin.TaskCreated, t)
	s.Wake()
	return t, nil
}

// Pause stops a task from being served until it is resumed. An iteration
// already running finishes and is kept; the task stays paused.
func (s *Service) Pause(ctx context.Context, number int64, actor string) (plugin.Task, error) {
	return s.transition(ctx, number, func(t plugin.Task) (plugin.Mutation, error) {
		return plugin.Paused(t, actor, s.clk.Now())
	})
}

// Resume puts a paused task back in the queue.
func (s *Service) Resume(ctx context.Context, number int64, actor string) (plugin.Task, error) {
	return s.transition(ctx, number, func(t plugin.Task) (plugin.Mutation, error) {
		return plugin.Resumed(t, actor, s.clk.Now())
	})
}

// Cancel ends a task for good, and its subtasks with it.
func (s *Service) Cancel(ctx context.Context, number int64, actor string) (plugin.Task, error) {
	t, err := s.transition(ctx, number, func(t plugin.Task) (plugin.Mutation, error) {
		return plugin.Canceled(t, actor, "", s.clk.Now())
	})
	if err != nil {
		return t, err
	}
	children, err := s.store.ListTasks(ctx, plugin.TaskFilter{ParentNumber: number, Statuses: active})
	if err != nil {
		return t, fmt.Errorf("cancel subtasks of #%d: %w", number, err)
	}
	for _, c := range children {
		if _, err := s.Cancel(ctx, c.Number, actor); err != nil && !errors.Is(err, plugin.ErrTerminal) {
			return t, err
		}
	}
	return t, nil
}

// Answer resumes a task waiting for an answer to its question.
func (s *Service) Answer(ctx context.Context, number int64, actor, answer string) (plugin.Task, error) {
	return s.transition(ctx, number, func(t plugin.Task) (plugin.Mutation, error) {
		return plugin.Answered(t, actor, answer, s.clk.Now())
	})
}

func (s *Service) transition(ctx context.Context, number int64, fn plugin.MutateFunc) (plugin.Task, error) {
	t, err := s.mutate(ctx, number, fn)
	if err != nil {
		return t, err
	}
	s.afterChange(ctx, t)
	return t, nil
}
