package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// ScheduleTx is a Tx that runs the statements of ScheduleSQL in its
// transaction: what a dialect adds for schedules (docs/schedules.md).
type ScheduleTx interface {
	// ScheduleRow runs q for at most one row.
	ScheduleRow(ctx context.Context, q string, args ...any) Row
	// ScheduleExec runs q and says how many rows it changed.
	ScheduleExec(ctx context.Context, q string, args ...any) (int64, error)
	// ScheduleQuery runs q and hands its rows to read.
	ScheduleQuery(ctx context.Context, q string, args []any, read func(Rows) error) error
}

// ScheduleColumns are the columns of schedules, in the order ScanSchedule
// reads them and ScheduleArgs writes them.
const ScheduleColumns = `id, name, cron, goal, platform, room, workspace, requestor, strategy, overlap, catch_up,
paused, next_run_at, last_run_at, last_task, failures, created_at, skips, resumed_at`

// ScheduleEventColumns are the columns ScanScheduleEvent reads.
const ScheduleEventColumns = `id, schedule_id, type, task_number, detail, actor, time`

// ScheduleSQL is a dialect's text of the schedule statements.
type ScheduleSQL struct {
	// Insert: ScheduleArgs but the id, returning the id. Get and Lock:
	// $1 id, ScheduleColumns (Lock keeps other writers off the row).
	// LockDue: $1 now, the most overdue schedule not paused whose
	// next_run_at <= $1 that no other transaction holds (SKIP LOCKED on
	// PostgreSQL), locked. Update: $1 id, $2 paused, $3 next_run_at, $4
	// last_run_at, $5 last_task, $6 failures, $7 skips, $8 resumed_at. Delete: $1 id. Count: $1
	// requestor. Runs: $1 id, $2 k, the TaskColumns of its latest k runs,
	// newest first. InsertEvent: ScheduleEventArgs. List: $1 requestor or
	// "", $2 workspace or "", by id. Events: $1 id, $2 limit, newest
	// first. NextDue: the earliest next_run_at of those not paused (NULL
	// for none).
	Insert, Get, Lock, LockDue, Update, Delete, Count, Runs, InsertEvent, List, Events, NextDue string
}

// Schedules is the schedule store of a SQL store, written once over its
// Core (for the writes), its ReadDB and its ScheduleSQL. A store embeds
// it and implements domain.ScheduleStore.
type Schedules struct {
	Core Core
	DB   ReadDB
	SQL  ScheduleSQL
	Time TimeArg
}

// ScheduleArgs lists s's values in the order of ScheduleColumns, but its id.
func ScheduleArgs(s domain.Schedule, timeArg TimeArg) []any {
	var lastTask any
	if s.LastTask != 0 {
		lastTask = s.LastTask
	}
	return []any{s.Name, s.Cron, s.Goal, s.Platform, s.Room, s.WorkspaceID, s.RequestorID, s.Strategy,
		s.Overlap, s.CatchUp, s.Paused, timeArg(s.NextRunAt), timeArg(s.LastRunAt), lastTask, s.Failures,
		timeArg(s.CreatedAt), s.Skips, timeArg(s.ResumedAt)}
}

// ScanSchedule reads the columns of ScheduleColumns.
func ScanSchedule(row Row) (domain.Schedule, error) {
	var s domain.Schedule
	var next, last, created, resumed Time
	var lastTask nullInt
	err := row.Scan(&s.ID, &s.Name, &s.Cron, &s.Goal, &s.Platform, &s.Room, &s.WorkspaceID, &s.RequestorID,
		&s.Strategy, &s.Overlap, &s.CatchUp, &s.Paused, &next, &last, &lastTask, &s.Failures, &created,
		&s.Skips, &resumed)
	s.NextRunAt, s.LastRunAt, s.CreatedAt, s.LastTask = next.T, last.T, created.T, int64(lastTask)
	s.ResumedAt = resumed.T
	return s, err
}

// ScheduleEventArgs lists e's values in the order of ScheduleEventColumns,
// but its id.
func ScheduleEventArgs(e domain.ScheduleEvent, timeArg TimeArg) []any {
	var task any
	if e.TaskNumber != 0 {
		task = e.TaskNumber
	}
	return []any{e.ScheduleID, e.Type, task, e.Detail, e.Actor, timeArg(e.Time)}
}

// ScanScheduleEvent reads the columns of ScheduleEventColumns.
func ScanScheduleEvent(row Row) (domain.ScheduleEvent, error) {
	var e domain.ScheduleEvent
	var at Time
	var task nullInt
	err := row.Scan(&e.ID, &e.ScheduleID, &e.Type, &task, &e.Detail, &e.Actor, &at)
	e.Time, e.TaskNumber = at.T, int64(task)
	return e, err
}

// nullInt scans a nullable integer as 0 when NULL.
type nullInt int64

func (n *nullInt) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*n = 0
	case int64:
		*n = nullInt(x)
	case int32:
		*n = nullInt(x)
	default:
		return fmt.Errorf("sqlstore: cannot read %T as an integer", v)
	}
	return nil
}

// write runs fn in a write transaction of the dialect, which must be a
// ScheduleTx.
func (s Schedules) write(ctx context.Context, fn func(Tx, ScheduleTx) error) error {
	return s.Core.D.Write(ctx, func(tx Tx) error {
		st, ok := tx.(ScheduleTx)
		if !ok {
			return errors.New("the store's transactions cannot run schedule statements")
		}
		return fn(tx, st)
	})
}

// CreateSchedule validates in and writes it with its "created" event,
// refusing it past the requestor's limit of schedules: the count and the
// insert in one transaction, under the requestor's lock, so two creators
// at the limit cannot both pass it.
func (s Schedules) CreateSchedule(ctx context.Context, in domain.NewSchedule) (domain.Schedule, error) {
	row, err := domain.ValidateSchedule(in)
	if err != nil {
		return domain.Schedule{}, err
	}
	limit := in.MaxPerRequestor
	if limit <= 0 {
		limit = domain.MaxSchedulesPerRequestor
	}
	err = s.write(ctx, func(tx Tx, st ScheduleTx) error {
		if row.RequestorID != "" {
			if err := tx.LockRequestor(ctx, row.RequestorID); err != nil {
				return fmt.Errorf("create schedule: %w", err)
			}
			var n int
			if err := st.ScheduleRow(ctx, s.SQL.Count, row.RequestorID).Scan(&n); err != nil {
				return fmt.Errorf("create schedule: count: %w", err)
			}
			if n >= limit {
				return fmt.Errorf("create schedule: %w: you already have %d schedules (the limit is %d)", domain.ErrLimit, n, limit)
			}
		}
		if err := st.ScheduleRow(ctx, s.SQL.Insert, ScheduleArgs(row, s.Time)...).Scan(&row.ID); err != nil {
			return fmt.Errorf("create schedule: %w", err)
		}
		return s.event(ctx, st, domain.ScheduleEvent{ScheduleID: row.ID, Type: domain.ScheduleCreated,
			Detail: "next run at " + row.NextRunAt.Format(time.RFC3339), Actor: domain.CleanText(in.Actor), Time: row.CreatedAt})
	})
	if err != nil {
		return domain.Schedule{}, err
	}
	return row, nil
}

func (s Schedules) event(ctx context.Context, st ScheduleTx, e domain.ScheduleEvent) error {
	e.Time = domain.UTC(e.Time)
	e.Detail = domain.CleanText(e.Detail)
	if _, err := st.ScheduleExec(ctx, s.SQL.InsertEvent, ScheduleEventArgs(e, s.Time)...); err != nil {
		return fmt.Errorf("schedule #%d: record its %s event: %w", e.ScheduleID, e.Type, err)
	}
	return nil
}

func (s Schedules) notFound(op string, id int64) error {
	return fmt.Errorf("%s schedule #%d: %w", op, id, domain.ErrScheduleNotFound)
}

// GetSchedule reads one schedule.
func (s Schedules) GetSchedule(ctx context.Context, id int64) (domain.Schedule, error) {
	sc, err := ScanSchedule(s.DB.QueryRow(ctx, s.SQL.Get, id))
	if s.DB.IsNoRows(err) {
		return domain.Schedule{}, s.notFound("get", id)
	}
	if err != nil {
		return domain.Schedule{}, fmt.Errorf("get schedule #%d: %w", id, err)
	}
	return sc, nil
}

// ListSchedules lists the schedules f selects, by id.
func (s Schedules) ListSchedules(ctx context.Context, f domain.ScheduleFilter) ([]domain.Schedule, error) {
	out, err := QueryAll(ctx, s.DB, s.SQL.List, []any{f.RequestorID, f.WorkspaceID}, ScanSchedule)
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	return out, nil
}

// ScheduleEvents lists a schedule's latest events, newest first.
func (s Schedules) ScheduleEvents(ctx context.Context, id int64, limit int) ([]domain.ScheduleEvent, error) {
	if limit <= 0 {
		limit = 50
	}
	out, err := QueryAll(ctx, s.DB, s.SQL.Events, []any{id, limit}, ScanScheduleEvent)
	if err != nil {
		return nil, fmt.Errorf("events of schedule #%d: %w", id, err)
	}
	return out, nil
}

// NextScheduleDue is the earliest due time of the schedules not paused.
func (s Schedules) NextScheduleDue(ctx context.Context) (time.Time, error) {
	var t Time
	if err := s.DB.QueryRow(ctx, s.SQL.NextDue).Scan(&t); err != nil {
		return time.Time{}, fmt.Errorf("next schedule due: %w", err)
	}
	return t.T, nil
}

// DeleteSchedule deletes a schedule and its events (its runs stay).
func (s Schedules) DeleteSchedule(ctx context.Context, id int64) error {
	return s.write(ctx, func(_ Tx, st ScheduleTx) error {
		n, err := st.ScheduleExec(ctx, s.SQL.Delete, id)
		if err != nil {
			return fmt.Errorf("delete schedule #%d: %w", id, err)
		}
		if n == 0 {
			return s.notFound("delete", id)
		}
		return nil
	})
}

// lock reads schedule id for this transaction.
func (s Schedules) lock(ctx context.Context, st ScheduleTx, op string, id int64) (domain.Schedule, error) {
	sc, err := ScanSchedule(st.ScheduleRow(ctx, s.SQL.Lock, id))
	if s.DB.IsNoRows(err) || errors.Is(err, ErrNoRows) {
		return domain.Schedule{}, s.notFound(op, id)
	}
	if err != nil {
		return domain.Schedule{}, fmt.Errorf("%s schedule #%d: %w", op, id, err)
	}
	return sc, nil
}

func (s Schedules) update(ctx context.Context, st ScheduleTx, sc domain.Schedule) error {
	var lastTask any
	if sc.LastTask != 0 {
		lastTask = sc.LastTask
	}
	if _, err := st.ScheduleExec(ctx, s.SQL.Update, sc.ID, sc.Paused, s.Time(sc.NextRunAt), s.Time(sc.LastRunAt), lastTask, sc.Failures,
		sc.Skips, s.Time(sc.ResumedAt)); err != nil {
		return fmt.Errorf("update schedule #%d: %w", sc.ID, err)
	}
	return nil
}

// PauseSchedule pauses or resumes a schedule. A resumed one waits for its
// first due time after now: the ones that passed while it was paused are
// not caught up, and its counts of failed runs and of skipped due times
// start again from now (ResumedAt), so the runs that paused it are not
// counted again at its next due time.
func (s Schedules) PauseSchedule(ctx context.Context, id int64, paused bool, actor string, now time.Time) (domain.Schedule, error) {
	op := map[bool]string{true: "pause", false: "resume"}[paused]
	now = domain.UTC(now)
	var out domain.Schedule
	err := s.write(ctx, func(_ Tx, st ScheduleTx) error {
		sc, err := s.lock(ctx, st, op, id)
		if err != nil {
			return err
		}
		out = sc
		if sc.Paused == paused {
			return nil
		}
		sc.Paused = paused
		typ := domain.SchedulePaused
		if !paused {
			typ = domain.ScheduleResumed
			if sc.NextRunAt, err = domain.NextRun(sc, now); err != nil {
				return fmt.Errorf("resume schedule #%d: %w", id, err)
			}
			sc.Failures, sc.Skips, sc.ResumedAt = 0, 0, now
		}
		if err := s.update(ctx, st, sc); err != nil {
			return err
		}
		out = sc
		return s.event(ctx, st, domain.ScheduleEvent{ScheduleID: id, Type: typ, Actor: domain.CleanText(actor), Time: now})
	})
	if err != nil {
		return domain.Schedule{}, err
	}
	return out, nil
}

// FireSchedule claims the most overdue schedule and does what its due
// time calls for (domain.DecideRun), all in one transaction: the run's
// task with its "created" event, the schedule's event, its next due time
// and counts, and the lines its room is told (RunDecision.Notes: the
// first skip of a row, a pause, the first run after a resume). A run past
// the requestor's limit is a skip (RunDecision.Skip). A replica that finds
// the schedule claimed by another passes over it (LockDue), and once the
// claim commits the schedule is no longer due: each due time fires once,
// on one replica.
func (s Schedules) FireSchedule(ctx context.Context, f domain.FireSchedule) (domain.ScheduleFiring, error) {
	now := domain.UTC(f.Now)
	var out domain.ScheduleFiring
	err := s.write(ctx, func(tx Tx, st ScheduleTx) error {
		out = domain.ScheduleFiring{}
		sc, err := ScanSchedule(st.ScheduleRow(ctx, s.SQL.LockDue, s.Time(now)))
		if s.DB.IsNoRows(err) || errors.Is(err, ErrNoRows) {
			return domain.ErrNoScheduleDue
		}
		if err != nil {
			return fmt.Errorf("claim a due schedule: %w", err)
		}
		cron, err := domain.ParseCron(sc.Cron)
		if err != nil {
			// Validated when created, so only a row edited by hand
			// gets here: pause it rather than meet it at every turn.
			sc.Paused = true
			if err := s.update(ctx, st, sc); err != nil {
				return err
			}
			out.Schedule = sc
			out.Event = domain.ScheduleEvent{ScheduleID: sc.ID, Type: domain.ScheduleAutoPaused, Detail: err.Error(), Time: now}
			return s.event(ctx, st, out.Event)
		}
		var runs []domain.Task
		err = st.ScheduleQuery(ctx, s.SQL.Runs, []any{sc.ID, domain.MaxScheduleFailures}, func(rows Rows) error {
			var err error
			runs, err = Collect(rows, func(r Row) (domain.Task, error) { return ScanTask(r) })
			return err
		})
		if err != nil {
			return fmt.Errorf("schedule #%d: its latest runs: %w", sc.ID, err)
		}
		d := domain.DecideRun(sc, cron, now, runs)
		if d.Run {
			row, err := domain.NewTaskRow(domain.ScheduleRun(sc, f, now))
			if err != nil {
				return fmt.Errorf("schedule #%d: %w", sc.ID, err)
			}
			domain.CleanTask(&row)
			err = checkActive(ctx, tx, &row, f.MaxActive)
			switch {
			case errors.Is(err, domain.ErrLimit):
				d.Skip(sc, 0, limitReason(err))
			case err != nil:
				return fmt.Errorf("schedule #%d: %w", sc.ID, err)
			default:
				if err := insertTask(ctx, tx, &row, fmt.Sprintf("schedule #%d", sc.ID), ""); err != nil {
					return fmt.Errorf("schedule #%d: %w", sc.ID, err)
				}
				out.Task = row
				d.Event.TaskNumber = row.Number
				d.Started(sc, row.Number)
				sc.LastRunAt, sc.LastTask = now, row.Number
			}
		}
		ev := d.Event
		ev.ScheduleID, ev.Time, ev.Actor = sc.ID, now, "scheduler"
		sc.NextRunAt, sc.Failures, sc.Skips = d.Next, d.Failures, d.Skips
		sc.Paused = sc.Paused || d.Pause
		if err := s.update(ctx, st, sc); err != nil {
			return err
		}
		if err := s.event(ctx, st, ev); err != nil {
			return err
		}
		if sc.Room != "" {
			for _, text := range d.Notes {
				payload, _ := json.Marshal(map[string]string{"text": text})
				n, err := PrepareNotification(domain.Notification{Room: sc.Room, Category: domain.NotifyMessage,
					Payload: payload, CreatedAt: now})
				if err != nil {
					return fmt.Errorf("schedule #%d: %w", sc.ID, err)
				}
				if err := tx.Enqueue(ctx, n); err != nil {
					return fmt.Errorf("schedule #%d: tell its room: %w", sc.ID, err)
				}
			}
		}
		out.Schedule, out.Event = sc, ev
		return nil
	})
	if err != nil {
		return domain.ScheduleFiring{}, err
	}
	return out, nil
}
