package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/taskloom/taskloom/plugin"
)

// CreateTask validates in, numbers the task and writes it with its
// "created" event.
func (s *Store) CreateTask(ctx context.Context, in plugin.NewTask) (plugin.Task, error) {
	row, err := plugin.NewTaskRow(in)
	if err != nil {
		return plugin.Task{}, err
	}
	plugin.CleanTask(&row)
	actor := plugin.CleanText(in.Actor)
	err = s.inTx(ctx, func(tx txn) error {
		if row.ParentNumber != 0 {
			var ok bool
			if err := tx.QueryRowContext(ctx, sqlParentExists, row.ParentNumber).Scan(&ok); err != nil {
				return fmt.Errorf("create task: parent: %w", err)
			}
			if !ok {
				return fmt.Errorf("create task: %w: parent task #%d does not exist", plugin.ErrInvalid, row.ParentNumber)
			}
		}
		row.EventSeq = 1
		if err := tx.QueryRowContext(ctx, sqlInsertTask, taskArgs(row)[1:]...).Scan(&row.Number); err != nil {
			return fmt.Errorf("create task: %w", err)
		}
		m, err := plugin.Created(row, actor)
		if err != nil {
			return err
		}
		if m.Task.EventSeq != row.EventSeq {
			return fmt.Errorf("create task #%d: the created event has sequence %d", row.Number, m.Task.EventSeq)
		}
		if err := insertEvent(ctx, tx, m.Event); err != nil {
			return fmt.Errorf("create task #%d: %w", row.Number, err)
		}
		return nil
	})
	if err != nil {
		return plugin.Task{}, err
	}
	return row, nil
}

// GetTask reads one task.
func (s *Store) GetTask(ctx context.Context, number int64) (plugin.Task, error) {
	t, err := scanTask(s.read.QueryRowContext(ctx, sqlGetTask, number))
	if isNoRows(err) {
		return plugin.Task{}, &plugin.TaskError{Op: "get", Number: number, Err: plugin.ErrNotFound}
	}
	if err != nil {
		return plugin.Task{}, fmt.Errorf("get task #%d: %w", number, err)
	}
	return t, nil
}

// ListTasks lists the tasks that match f, in f.Order.
func (s *Store) ListTasks(ctx context.Context, f plugin.TaskFilter) ([]plugin.Task, error) {
	q, args := taskQuery(f, false)
	rows, err := s.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	defer rows.Close()
	var out []plugin.Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, fmt.Errorf("list tasks: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	return out, nil
}

// CountTasks counts the tasks that match f, ignoring its limit.
func (s *Store) CountTasks(ctx context.Context, f plugin.TaskFilter) (int, error) {
	q, args := taskQuery(f, true)
	var n int
	if err := s.read.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count tasks: %w", err)
	}
	return n, nil
}

// ClaimTask reads the head of the queue and claims it (sqlClaimTask) in one
// IMMEDIATE transaction, recording the claim with the event plugin.Claimed
// builds from the row before and after.
func (s *Store) ClaimTask(ctx context.Context, c plugin.Claim) (plugin.Task, error) {
	if c.Owner == "" || c.Now.IsZero() {
		return plugin.Task{}, fmt.Errorf("claim task: %w: a claim needs an owner and a time", plugin.ErrInvalid)
	}
	c.Owner = plugin.CleanText(c.Owner)
	now, until := timeArg(plugin.UTC(c.Now)), timeArg(plugin.UTC(c.Now.Add(c.Lease)))
	var after plugin.Task
	err := s.inTx(ctx, func(tx txn) error {
		before, err := scanTask(tx.QueryRowContext(ctx, sqlClaimPick, now))
		if isNoRows(err) {
			return fmt.Errorf("claim task: %w", plugin.ErrNoTask)
		}
		if err != nil {
			return fmt.Errorf("claim task: %w", err)
		}
		after = before
		var status string
		var expiry, started sql.NullInt64
		if err := tx.QueryRowContext(ctx, sqlClaimTask, now, c.Owner, until, before.Number).Scan(
			&status, &after.LeaseOwner, &expiry, &after.Fence, &started, &after.EventSeq); err != nil {
			return fmt.Errorf("claim task #%d: %w", before.Number, err)
		}
		after.Status = plugin.Status(status)
		after.LeaseExpiresAt = timeOf(expiry)
		after.StartedAt = timeOf(started)
		m, err := plugin.Claimed(before, c)
		if err != nil {
			return err
		}
		// The SQL and the domain must agree on what a claim is. (== is
		// the quick check; times from both sides are normalized UTC.)
		if m.Task != after {
			d, err := plugin.DifferingColumns(m.Task, after)
			if err != nil {
				return fmt.Errorf("claim task #%d: %w", after.Number, err)
			}
			if len(d) > 0 {
				return fmt.Errorf("claim task #%d: the claim statement and plugin.Claimed disagree on %v", after.Number, d)
			}
		}
		if err := insertEvent(ctx, tx, m.Event); err != nil {
			return fmt.Errorf("claim task #%d: %w", after.Number, err)
		}
		return nil
	})
	if err != nil {
		return plugin.Task{}, err
	}
	return after, nil
}

// UpdateTask reads the task inside an IMMEDIATE transaction (no other
// writer can change it meanwhile), lets fn compute the change and writes
// it.
func (s *Store) UpdateTask(ctx context.Context, number int64, fn plugin.MutateFunc) (plugin.Task, error) {
	var out plugin.Task
	err := s.inTx(ctx, func(tx txn) error {
		cur, err := scanTask(tx.QueryRowContext(ctx, sqlGetTask, number))
		if isNoRows(err) {
			return &plugin.TaskError{Op: "update", Number: number, Err: plugin.ErrNotFound}
		}
		if err != nil {
			return fmt.Errorf("update task #%d: %w", number, err)
		}
		m, err := fn(cur)
		if err != nil {
			return err
		}
		if err := plugin.CheckMutation(cur, m); err != nil {
			return err
		}
		if err := writeMutation(ctx, tx, &m); err != nil {
			return fmt.Errorf("update task #%d: %w", number, err)
		}
		out = m.Task
		return nil
	})
	if err != nil {
		return plugin.Task{}, err
	}
	return out, nil
}

// writeMutation writes the row, the event, the step and the notifications
// of m.
func writeMutation(ctx context.Context, tx txn, m *plugin.Mutation) error {
	plugin.CleanTask(&m.Task)
	args := taskArgs(m.Task)
	// The number is the last parameter of sqlUpdateTask.
	args = append(args[1:len(args):len(args)], args[0])
	if _, err := tx.ExecContext(ctx, sqlUpdateTask, args...); err != nil {
		return err
	}
	if err := insertEvent(ctx, tx, m.Event); err != nil {
		return err
	}
	if m.Step != nil {
		st := *m.Step
		if err := plugin.CleanStep(&st); err != nil {
			return fmt.Errorf("step: %w", err)
		}
		if _, err := tx.ExecContext(ctx, sqlInsertStep, st.TaskNumber, st.Iteration, st.Thought, st.Action,
			string(st.Params), st.Result, st.Success, st.Error, st.Progress, timeArg(st.Time)); err != nil {
			return fmt.Errorf("step: %w", err)
		}
	}
	for _, n := range m.Notifications {
		if n.TaskNumber == 0 {
			n.TaskNumber = m.Task.Number
		}
		if n.CreatedAt.IsZero() {
			n.CreatedAt = m.Event.Time
		}
		if _, err := enqueue(ctx, tx, n); err != nil {
			return err
		}
	}
	return nil
}

func insertEvent(ctx context.Context, tx txn, e plugin.TaskEvent) error {
	if err := plugin.CleanEvent(&e); err != nil {
		return fmt.Errorf("event: %w", err)
	}
	if _, err := tx.ExecContext(ctx, sqlInsertEvent, e.TaskNumber, e.Sequence, e.Type, string(e.Payload),
		e.Actor, e.Fence, timeArg(e.Time)); err != nil {
		return fmt.Errorf("event %d: %w", e.Sequence, err)
	}
	return nil
}

// Steps lists a task's steps in order.
func (s *Store) Steps(ctx context.Context, number int64) ([]plugin.Step, error) {
	rows, err := s.read.QueryContext(ctx, sqlSteps, number)
	if err != nil {
		return nil, fmt.Errorf("steps of task #%d: %w", number, err)
	}
	defer rows.Close()
	var out []plugin.Step
	for rows.Next() {
		var st plugin.Step
		var params string
		var at sql.NullInt64
		if err := rows.Scan(&st.TaskNumber, &st.Iteration, &st.Thought, &st.Action, &params,
			&st.Result, &st.Success, &st.Error, &st.Progress, &at); err != nil {
			return nil, fmt.Errorf("steps of task #%d: %w", number, err)
		}
		st.Params = []byte(params)
		st.Time = timeOf(at)
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("steps of task #%d: %w", number, err)
	}
	return out, nil
}

// TaskEvents lists one task's events with sequence > after.
func (s *Store) TaskEvents(ctx context.Context, number int64, after int64) ([]plugin.TaskEvent, error) {
	out, err := s.events(ctx, sqlTaskEvents, number, after)
	if err != nil {
		return nil, fmt.Errorf("events of task #%d: %w", number, err)
	}
	return out, nil
}

// EventsSince lists every task's events with ID > after, oldest first, at
// most limit of them (all of them when limit <= 0).
func (s *Store) EventsSince(ctx context.Context, after int64, limit int) ([]plugin.TaskEvent, error) {
	if limit <= 0 {
		limit = -1
	}
	out, err := s.events(ctx, sqlEventsSince, after, limit)
	if err != nil {
		return nil, fmt.Errorf("events since %d: %w", after, err)
	}
	return out, nil
}

func (s *Store) events(ctx context.Context, q string, args ...any) ([]plugin.TaskEvent, error) {
	rows, err := s.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []plugin.TaskEvent
	for rows.Next() {
		var e plugin.TaskEvent
		var payload string
		var at sql.NullInt64
		if err := rows.Scan(&e.ID, &e.TaskNumber, &e.Sequence, &e.Type, &payload, &e.Actor, &e.Fence, &at); err != nil {
			return nil, err
		}
		e.Payload = []byte(payload)
		e.Time = timeOf(at)
		out = append(out, e)
	}
	return out, rows.Err()
}

// taskArgs lists t's values in the order of taskColumns.
func taskArgs(t plugin.Task) []any {
	var parent any
	if t.ParentNumber != 0 {
		parent = t.ParentNumber
	}
	return []any{
		t.Number, t.Name, t.Goal, string(t.Status), t.Progress, t.PreviousProgress,
		t.StaleCounter, t.Iteration, t.MaxIterations, t.MaxStaleIterations,
		t.RequestorID, t.Platform, t.RoomID, t.WorkspaceID, parent,
		timeArg(t.LastProcessedAt), timeArg(t.CreatedAt), timeArg(t.StartedAt), timeArg(t.CompletedAt),
		t.Summary, t.Error, t.PromptTokens, t.CompletionTokens,
		t.LeaseOwner, timeArg(t.LeaseExpiresAt), t.Fence, t.EventSeq,
	}
}

// scanTask reads the columns of taskColumns.
func scanTask(row scanner) (plugin.Task, error) {
	var (
		t                                             plugin.Task
		status                                        string
		parent                                        sql.NullInt64
		processed, created, started, completed, lease sql.NullInt64
	)
	if err := row.Scan(
		&t.Number, &t.Name, &t.Goal, &status, &t.Progress, &t.PreviousProgress,
		&t.StaleCounter, &t.Iteration, &t.MaxIterations, &t.MaxStaleIterations,
		&t.RequestorID, &t.Platform, &t.RoomID, &t.WorkspaceID, &parent,
		&processed, &created, &started, &completed,
		&t.Summary, &t.Error, &t.PromptTokens, &t.CompletionTokens,
		&t.LeaseOwner, &lease, &t.Fence, &t.EventSeq,
	); err != nil {
		return plugin.Task{}, err
	}
	t.Status = plugin.Status(status)
	t.ParentNumber = parent.Int64
	t.LastProcessedAt = timeOf(processed)
	t.CreatedAt = timeOf(created)
	t.StartedAt = timeOf(started)
	t.CompletedAt = timeOf(completed)
	t.LeaseExpiresAt = timeOf(lease)
	return t, nil
}
