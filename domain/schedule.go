package domain

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/robfig/cron/v3"
)

// A schedule creates a task from its goal at the times of a cron
// expression (docs/schedules.md). Schedules live in the store next to the
// queue; whichever replica finds one due first claims it and creates its
// run in one transaction that also moves its next time on, so each due
// time fires once without a leader.

// Overlap policies: what a due time does while the schedule's previous
// run has not ended.
const (
	// OverlapSkip skips the due time (the default).
	OverlapSkip = "skip"
	// OverlapAllow starts another run.
	OverlapAllow = "allow"
)

// Catch-up policies: what due times missed while no replica ran become.
const (
	// CatchUpOne makes them one run, at once (the default).
	CatchUpOne = "one"
	// CatchUpNone drops them.
	CatchUpNone = "none"
)

// Schedule events (ScheduleEvent.Type).
const (
	ScheduleCreated = "created"
	// ScheduleFired: a due time created its run (TaskNumber).
	ScheduleFired = "fired"
	// ScheduleCaughtUp: a run made for due times missed while no replica ran.
	ScheduleCaughtUp = "caught_up"
	// ScheduleMissed: due times missed while no replica ran, dropped
	// (CatchUpNone).
	ScheduleMissed = "missed"
	// ScheduleSkipped: a due time made no run (the previous one is still
	// active, or the requestor is at their limit); Detail says which.
	ScheduleSkipped = "skipped"
	SchedulePaused  = "paused"
	ScheduleResumed = "resumed"
	// ScheduleAutoPaused: its last MaxScheduleFailures runs (since it
	// was last resumed) failed or stalled, or its last MaxScheduleSkips
	// due times were skipped, so it paused itself.
	ScheduleAutoPaused = "auto_paused"
)

// Limits of schedules (docs/schedules.md).
const (
	// MaxSchedulesPerRequestor bounds the schedules one person has.
	MaxSchedulesPerRequestor = 20
	// DefaultScheduleMinInterval is the shortest gap allowed between two
	// runs (TASKLOOM_SCHEDULE_MIN_INTERVAL).
	DefaultScheduleMinInterval = time.Minute
	// MaxScheduleFailures runs in a row that failed or stalled pause a
	// schedule.
	MaxScheduleFailures = 3
	// MaxScheduleSkips due times in a row that made no run (its runs
	// wait on a person, or its requestor is at the limit) pause a
	// schedule: it does not write a skipped event every period forever.
	MaxScheduleSkips = 10
	// ScheduleLateGrace is how late a due time may fire and still count
	// as on time rather than missed (CatchUp decides what a missed one
	// does).
	ScheduleLateGrace = time.Minute
	// MaxCronLength bounds a cron expression.
	MaxCronLength = 200
)

// ErrScheduleNotFound is what a schedule that does not exist gets.
var ErrScheduleNotFound = errors.New("no such schedule")

// ErrNoScheduleDue is FireSchedule's answer when no schedule is due.
var ErrNoScheduleDue = errors.New("no schedule is due")

// Schedule is one row of the schedules table. Times are UTC.
type Schedule struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	Cron        string `json:"cron"`
	Goal        string `json:"goal"`
	Platform    string `json:"platform"`
	Room        string `json:"room"`
	WorkspaceID string `json:"workspace_id"`
	RequestorID string `json:"requestor_id"`
	Strategy    string `json:"strategy"`
	Overlap     string `json:"overlap"`
	CatchUp     string `json:"catch_up"`
	Paused      bool   `json:"paused"`
	// NextRunAt is the due time the schedule waits for (kept while it is
	// paused, recomputed when it resumes).
	NextRunAt time.Time `json:"next_run_at"`
	// LastRunAt is when it last created a run, LastTask that run.
	LastRunAt time.Time `json:"last_run_at,omitzero"`
	LastTask  int64     `json:"last_task,omitempty"`
	// Failures counts its latest runs that failed or stalled in a row
	// since it was last resumed, as last seen when it came due.
	Failures int `json:"failures"`
	// Skips counts its latest due times in a row that made no run (a run
	// that starts, and a resume, set it back to 0).
	Skips int `json:"skips"`
	// ResumedAt is when it was last resumed: runs created before it are
	// not counted as failures in a row, so a schedule that paused itself
	// after failed runs runs again at its next due time once resumed.
	ResumedAt time.Time `json:"resumed_at,omitzero"`
	CreatedAt time.Time `json:"created_at"`
}

// ScheduleEvent is one thing that happened to a schedule.
type ScheduleEvent struct {
	ID         int64     `json:"id"`
	ScheduleID int64     `json:"schedule_id"`
	Type       string    `json:"type"`
	TaskNumber int64     `json:"task_number,omitempty"`
	Detail     string    `json:"detail,omitempty"`
	Actor      string    `json:"actor,omitempty"`
	Time       time.Time `json:"time"`
}

// NewSchedule is what it takes to create a schedule.
type NewSchedule struct {
	Name        string
	Cron        string
	Goal        string
	Platform    string
	Room        string
	WorkspaceID string
	RequestorID string
	Strategy    string
	Overlap     string
	CatchUp     string
	// MinInterval is the shortest gap allowed between two runs; 0 is
	// DefaultScheduleMinInterval.
	MinInterval time.Duration
	// MaxPerRequestor bounds the requestor's schedules, checked
	// atomically with the insert; 0 is MaxSchedulesPerRequestor.
	MaxPerRequestor int
	Actor           string
	Now             time.Time
}

// ScheduleFilter selects schedules; zero fields select all.
type ScheduleFilter struct {
	RequestorID string
	WorkspaceID string
}

// FireSchedule asks the store to fire the most overdue schedule.
type FireSchedule struct {
	// Now is the replica's time: schedules due at or before it fire.
	Now time.Time
	// MaxActive is the requestor's limit of active tasks (0: none).
	MaxActive int
	// MaxTokens is the token budget of a run (nil: none).
	MaxTokens *int64
	// MaxIterations and MaxStaleIterations are a run's defaults.
	MaxIterations, MaxStaleIterations int
}

// ScheduleFiring is what one firing did: the schedule after it, the run
// it created (Task.Number 0 when none) and the event it recorded.
type ScheduleFiring struct {
	Schedule Schedule
	Task     Task
	Event    ScheduleEvent
}

// ScheduleStore keeps schedules. Both stores implement it
// (adapters/storetest's schedule cases).
type ScheduleStore interface {
	// CreateSchedule validates in (ValidateSchedule), refuses it past
	// the requestor's limit (ErrLimit), and writes it with its first due
	// time and a "created" event.
	CreateSchedule(ctx context.Context, in NewSchedule) (Schedule, error)
	// GetSchedule reads one; ErrScheduleNotFound when there is none.
	GetSchedule(ctx context.Context, id int64) (Schedule, error)
	// ListSchedules lists those f selects, by ID.
	ListSchedules(ctx context.Context, f ScheduleFilter) ([]Schedule, error)
	// ScheduleEvents lists a schedule's latest limit events, newest first.
	ScheduleEvents(ctx context.Context, id int64, limit int) ([]ScheduleEvent, error)
	// DeleteSchedule deletes one and its events; its runs are kept.
	DeleteSchedule(ctx context.Context, id int64) error
	// PauseSchedule pauses or resumes one at now; a resumed schedule's
	// next due time is the first after now. Pausing a paused one (or
	// resuming a running one) changes nothing.
	PauseSchedule(ctx context.Context, id int64, paused bool, actor string, now time.Time) (Schedule, error)
	// NextScheduleDue is the earliest due time of the schedules not
	// paused; the zero time when there is none.
	NextScheduleDue(ctx context.Context) (time.Time, error)
	// FireSchedule claims one schedule due at f.Now (the most overdue),
	// decides what its due time does (DecideRun) and, in the same
	// transaction, creates its run, records its event and moves its next
	// due time on: whichever replica claims it, a due time fires once.
	// ErrNoScheduleDue when none is due.
	FireSchedule(ctx context.Context, f FireSchedule) (ScheduleFiring, error)
}

// cronParser reads five fields, descriptors (@daily, @every 2h) and a
// CRON_TZ= or TZ= prefix.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseCron reads a cron expression, or says in one sentence what is
// wrong with it.
func ParseCron(expr string) (cron.Schedule, error) {
	expr = strings.TrimSpace(expr)
	switch {
	case expr == "":
		return nil, fmt.Errorf("%w: the cron expression is empty; give five fields such as `0 9 * * 1-5` or a descriptor such as `@daily`", ErrInvalid)
	case utf8.RuneCountInString(expr) > MaxCronLength:
		return nil, fmt.Errorf("%w: the cron expression is longer than %d characters", ErrInvalid, MaxCronLength)
	}
	s, err := cronParser.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("%w: the cron expression %q is not valid: %s", ErrInvalid, expr, cronReason(err))
	}
	return s, nil
}

// cronReason makes robfig/cron's message a clause: lower-case, no
// trailing period, one line.
func cronReason(err error) string {
	s := strings.TrimSpace(strings.ReplaceAll(err.Error(), "\n", " "))
	return strings.TrimSuffix(s, ".")
}

// CheckInterval refuses a schedule whose runs would come closer than min
// apart: the gap between its next two due times after now. One that never
// fires is refused too.
func CheckInterval(expr string, s cron.Schedule, now time.Time, min time.Duration) error {
	first := s.Next(now)
	if first.IsZero() {
		return fmt.Errorf("%w: the cron expression %q never fires", ErrInvalid, expr)
	}
	second := s.Next(first)
	if second.IsZero() {
		return nil
	}
	if gap := second.Sub(first); gap < min {
		return fmt.Errorf("%w: %q fires every %s; the shortest interval allowed is %s", ErrInvalid, expr, gap, min)
	}
	return nil
}

// ValidateSchedule checks in and returns the row to insert, its first due
// time set from in.Now.
func ValidateSchedule(in NewSchedule) (Schedule, error) {
	sched, err := ParseCron(in.Cron)
	if err != nil {
		return Schedule{}, fmt.Errorf("create schedule: %w", err)
	}
	min := in.MinInterval
	if min <= 0 {
		min = DefaultScheduleMinInterval
	}
	now := UTC(in.Now)
	if err := CheckInterval(strings.TrimSpace(in.Cron), sched, now, min); err != nil {
		return Schedule{}, fmt.Errorf("create schedule: %w", err)
	}
	// The goal is checked as a task's is, so a run never fails to be
	// created for its goal.
	if _, err := NewTaskRow(NewTask{Goal: in.Goal, Name: in.Name, Now: now}); err != nil {
		_, reason, _ := strings.Cut(err.Error(), ErrInvalid.Error()+": ")
		return Schedule{}, fmt.Errorf("create schedule: %w: %s", ErrInvalid, reason)
	}
	overlap := strings.ToLower(strings.TrimSpace(in.Overlap))
	switch overlap {
	case "":
		overlap = OverlapSkip
	case OverlapSkip, OverlapAllow:
	default:
		return Schedule{}, fmt.Errorf("create schedule: %w: overlap is %q; it must be %q or %q", ErrInvalid, in.Overlap, OverlapSkip, OverlapAllow)
	}
	catchUp := strings.ToLower(strings.TrimSpace(in.CatchUp))
	switch catchUp {
	case "":
		catchUp = CatchUpOne
	case CatchUpOne, CatchUpNone:
	default:
		return Schedule{}, fmt.Errorf("create schedule: %w: catch_up is %q; it must be %q or %q", ErrInvalid, in.CatchUp, CatchUpOne, CatchUpNone)
	}
	goal := strings.TrimSpace(in.Goal)
	name := strings.TrimSpace(in.Name)
	if name == "" {
		name = NameFromGoal(goal)
	}
	if utf8.RuneCountInString(name) > MaxNameLength {
		name = truncateRunes(name, MaxNameLength)
	}
	strategy := strings.TrimSpace(in.Strategy)
	if strategy == "" {
		strategy = StrategyLoop
	}
	return Schedule{
		Name: CleanText(name), Cron: strings.TrimSpace(in.Cron), Goal: CleanText(goal),
		Platform: CleanText(in.Platform), Room: CleanText(in.Room), WorkspaceID: CleanText(in.WorkspaceID),
		RequestorID: CleanText(in.RequestorID), Strategy: strategy, Overlap: overlap, CatchUp: catchUp,
		NextRunAt: UTC(sched.Next(now)), CreatedAt: now,
	}, nil
}

// NextRun is the schedule's first due time after now.
func NextRun(s Schedule, now time.Time) (time.Time, error) {
	sched, err := ParseCron(s.Cron)
	if err != nil {
		return time.Time{}, err
	}
	return UTC(sched.Next(now)), nil
}

// RunDecision is what one due time of a schedule does.
type RunDecision struct {
	// Run: create a run now.
	Run bool
	// Event is the schedule event that records the decision (its Type
	// and Detail; the store fills the rest).
	Event ScheduleEvent
	// Pause: the schedule pauses itself (Event says why).
	Pause bool
	// Next is the schedule's next due time, computed from now rather than
	// from the due time, so missed due times are not replayed one by one.
	Next time.Time
	// Failures is the schedule's count of failed runs in a row since it
	// was last resumed; Skips its count of due times in a row that made
	// no run.
	Failures, Skips int
	// Notes are the lines its room is told, in the transaction that
	// records the decision.
	Notes []string
}

// DecideRun decides what schedule s, due at s.NextRunAt <= now, does at
// now, given its latest runs, newest first (at least MaxScheduleFailures
// of them when it has that many). A due time is missed when the next one
// has come too, or it is more than ScheduleLateGrace late: CatchUpOne
// makes the missed ones one run, CatchUpNone none. A schedule whose last
// MaxScheduleFailures runs since it was last resumed all failed or
// stalled pauses itself instead of running again; with OverlapSkip, a due
// time whose previous run is still active makes no run (Skip). A run
// that the store then finds past the requestor's limit is a skip too
// (Skip).
func DecideRun(s Schedule, sched cron.Schedule, now time.Time, runs []Task) RunDecision {
	due := s.NextRunAt
	d := RunDecision{Next: UTC(nextAfter(sched, now, due)), Skips: s.Skips}
	for _, t := range runs {
		if (!s.ResumedAt.IsZero() && !t.CreatedAt.After(s.ResumedAt)) || (t.Status != StatusFailed && t.Status != StatusStalemate) {
			break
		}
		d.Failures++
	}
	following := nextAfter(sched, due, due)
	missed := (!following.IsZero() && !following.After(now)) || now.Sub(due) > ScheduleLateGrace
	switch {
	case d.Failures >= MaxScheduleFailures:
		d.Pause = true
		d.Event = ScheduleEvent{Type: ScheduleAutoPaused,
			Detail: fmt.Sprintf("its last %d runs failed or stalled", d.Failures)}
		d.Notes = append(d.Notes, pausedNote(s, d.Event.Detail))
	case missed && s.CatchUp == CatchUpNone:
		d.Event = ScheduleEvent{Type: ScheduleMissed,
			Detail: fmt.Sprintf("due at %s while no replica ran; catch_up is none", due.Format(time.RFC3339))}
	case s.Overlap != OverlapAllow && len(runs) > 0 && !runs[0].Status.Terminal():
		d.Skip(s, runs[0].Number, fmt.Sprintf("run #%d has not ended (overlap is skip)", runs[0].Number))
	case missed:
		d.Run = true
		d.Event = ScheduleEvent{Type: ScheduleCaughtUp,
			Detail: fmt.Sprintf("one run for the due times since %s, missed while no replica ran", due.Format(time.RFC3339))}
	default:
		d.Run = true
		d.Event = ScheduleEvent{Type: ScheduleFired}
	}
	return d
}

// Skip makes d a due time of s that made no run, for the reason detail
// (task names the run it waits on, if any). Skips are counted in a row:
// the first one of a row is told in the room, the next ones only
// recorded, and the MaxScheduleSkips-th pauses the schedule, which says
// so in its room: a schedule whose runs keep waiting on a person speaks
// twice, not once a period.
func (d *RunDecision) Skip(s Schedule, task int64, detail string) {
	d.Run = false
	d.Skips++
	d.Event = ScheduleEvent{Type: ScheduleSkipped, TaskNumber: task, Detail: detail}
	switch {
	case d.Skips >= MaxScheduleSkips:
		d.Pause = true
		d.Event = ScheduleEvent{Type: ScheduleAutoPaused, TaskNumber: task,
			Detail: fmt.Sprintf("its last %d due times were skipped (the latest because %s)", d.Skips, detail)}
		d.Notes = append(d.Notes, pausedNote(s, d.Event.Detail))
	case d.Skips == 1:
		d.Notes = append(d.Notes, fmt.Sprintf("⏭️ Schedule #%d %q skipped its run: %s. It says so once: if its next %d due times are skipped too, it pauses itself.",
			s.ID, s.Name, detail, MaxScheduleSkips-1))
	}
}

// Started records on d that its due time created run task: the skips in
// a row end, and the first run after a resume is told in the room.
func (d *RunDecision) Started(s Schedule, task int64) {
	d.Skips = 0
	if !s.ResumedAt.IsZero() && s.LastRunAt.Before(s.ResumedAt) {
		d.Notes = append(d.Notes, fmt.Sprintf("▶️ Schedule #%d %q runs again since it was resumed: task #%d.", s.ID, s.Name, task))
	}
}

func pausedNote(s Schedule, why string) string {
	return fmt.Sprintf("⏸️ Schedule #%d %q paused itself: %s. Say `resume schedule #%d` to start it again.", s.ID, s.Name, why, s.ID)
}

// nextAfter is sched's first due time after t that does not read, on
// the schedule's wall clock, as prev does. robfig/cron fires a time of
// the hour that repeats when clocks go back twice (02:30 in Berlin on
// the last Sunday of October, once in summer time and once in winter
// time); a schedule runs once at each time its expression names, so the
// repeat is passed over. (A time of the hour that clocks skip in spring
// does not exist: robfig/cron skips it that day, and so does a schedule.)
func nextAfter(sched cron.Schedule, t, prev time.Time) time.Time {
	n := sched.Next(t)
	spec, ok := sched.(*cron.SpecSchedule)
	if !ok || n.IsZero() || prev.IsZero() {
		return n
	}
	const wall = "2006-01-02 15:04"
	if n.In(spec.Location).Format(wall) == prev.In(spec.Location).Format(wall) {
		return sched.Next(n)
	}
	return n
}

// ScheduleRun is the task a schedule's due time creates.
func ScheduleRun(s Schedule, f FireSchedule, now time.Time) NewTask {
	return NewTask{
		Name: s.Name, Goal: s.Goal, RequestorID: s.RequestorID, Platform: s.Platform, RoomID: s.Room,
		WorkspaceID: s.WorkspaceID, Strategy: s.Strategy, MaxTokens: f.MaxTokens, MaxActive: f.MaxActive,
		MaxIterations: f.MaxIterations, MaxStaleIterations: f.MaxStaleIterations,
		ScheduleID: s.ID, Actor: fmt.Sprintf("schedule #%d", s.ID), Now: now,
	}
}

// ErrScheduleForbidden refuses a change to a schedule by someone who is
// neither its requestor nor an admin.
var ErrScheduleForbidden = errors.New("only the person who created a schedule, or an admin, can change it")

// ScheduleCaller is who asks to see or change a schedule: a schedule of
// another workspace is answered as one that does not exist (Workspace ""
// sees every workspace, as the API does), and only its requestor or an
// admin may pause, resume or delete it.
type ScheduleCaller struct {
	ID          string
	Admin       bool
	WorkspaceID string
}
