package schedules

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/plugin"
)

// Defaults of the service.
const (
	// DefaultMaxSleep caps the loop's sleep: a schedule another replica
	// created or resumed, due sooner than anything this replica knew of,
	// fires at most this late (docs/schedules.md). The PostgreSQL
	// listener wakes task workers on new tasks only, so schedules poll.
	DefaultMaxSleep = 2 * time.Second
	// minSleep keeps a loop that finds a schedule due but held by another
	// replica (which is firing it) from spinning.
	minSleep     = 100 * time.Millisecond
	errorBackoff = time.Second
	// eventsShown is how many of a schedule's events Events reads.
	eventsShown = 50
)

// Options configure the scheduler.
type Options struct {
	Runtime *plugin.Runtime // its store, clock and logger are used
	// Strategies, when set, lists the strategies a schedule may name (the
	// task service's).
	Strategies func() []string
	// Wake, when set, tells this replica's task workers a run was created.
	Wake func()
	// Limits and defaults of the runs, as the task service's: the
	// requestor's active tasks (TASKLOOM_MAX_ACTIVE), the token budget,
	// the iteration limits.
	MaxActive                         int
	MaxTokens                         int64
	MaxIterations, MaxStaleIterations int
	// MinInterval is the shortest gap between two runs
	// (TASKLOOM_SCHEDULE_MIN_INTERVAL); 0 is the default, a minute.
	MinInterval time.Duration
	// MaxSleep caps the loop's sleep; 0 is DefaultMaxSleep.
	MaxSleep time.Duration
	// Admins may change any schedule (TASKLOOM_ADMINS).
	Admins []string
}

// Service is the scheduler.
type Service struct {
	opts  Options
	rt    *plugin.Runtime
	store domain.Store
	clk   clock.Clock
	log   *slog.Logger
	wake  chan struct{}
	loop  plugin.Loop
}

var (
	_ plugin.Service         = (*Service)(nil)
	_ domain.ScheduleControl = (*Service)(nil)
)

// New returns the scheduler; Start runs its loop.
func New(opts Options) *Service {
	if opts.MinInterval <= 0 {
		opts.MinInterval = domain.DefaultScheduleMinInterval
	}
	if opts.MaxSleep <= 0 {
		opts.MaxSleep = DefaultMaxSleep
	}
	rt := opts.Runtime
	return &Service{opts: opts, rt: rt, store: rt.Store(), clk: rt.Clock(),
		log: rt.Logger().With("service", "schedules"), wake: make(chan struct{}, 1)}
}

// Name implements plugin.Service.
func (s *Service) Name() string { return "schedules" }

// Start runs the loop until Stop.
func (s *Service) Start(ctx context.Context) error {
	// Start returns once the loop has fired what was due and waits for
	// the next due time: a clock's waiters are then the loop's for good
	// (a test on a fake clock counts them before it moves the clock).
	if err := s.loop.Go(ctx, s.run); err != nil {
		return fmt.Errorf("schedule service: %w", err)
	}
	s.log.Info("schedule service started", "min_interval", s.opts.MinInterval, "max_sleep", s.opts.MaxSleep)
	return nil
}

// Stop ends the loop: a firing in flight is one transaction, which
// commits or not.
func (s *Service) Stop(ctx context.Context) error {
	if err := s.loop.Stop(ctx); err != nil {
		return fmt.Errorf("schedule service: %w", err)
	}
	return nil
}

// Wake makes the loop look at the schedules again: one changed.
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run is the loop: it fires what is due, then sleeps until the next due
// time, a change (Wake) or MaxSleep, whichever comes first; armed is
// called once it first sleeps.
func (s *Service) run(ctx context.Context, armed func()) {
	for ctx.Err() == nil {
		wait := s.opts.MaxSleep
		var next time.Time
		firedAt, err := s.fireDue(ctx)
		if err == nil {
			next, err = s.store.NextScheduleDue(ctx)
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Error("firing schedules failed", "err", err)
			wait, next = errorBackoff, time.Time{}
		}
		// A due time after the last look that the clock has reached
		// since (while the store answered, or while the timer was being
		// set, which measured from then would fire late) is looked at
		// again at once. One already due at the last look is being fired
		// by another replica: it is waited for minSleep.
		reached := func() bool { return next.After(firedAt) && !s.clk.Now().Before(next) }
		if reached() {
			continue
		}
		if !next.IsZero() {
			wait = max(min(next.Sub(s.clk.Now()), wait), minSleep)
		}
		t := s.clk.NewTimer(wait)
		if reached() {
			t.Stop()
			continue
		}
		armed()
		select {
		case <-ctx.Done():
		case <-s.wake:
		case <-t.C():
		}
		t.Stop()
	}
}

// FireDue fires every schedule due now, one transaction each, and says
// what went wrong first. The loop calls it; tests may too.
func (s *Service) FireDue(ctx context.Context) error {
	_, err := s.fireDue(ctx)
	return err
}

// fireDue is FireDue; it also returns the time of its last look, at
// which nothing (this replica could claim) was due.
func (s *Service) fireDue(ctx context.Context) (time.Time, error) {
	for {
		now := s.clk.Now()
		f, err := s.store.FireSchedule(ctx, domain.FireSchedule{
			Now: now, MaxActive: s.opts.MaxActive, MaxTokens: s.maxTokens(),
			MaxIterations: s.opts.MaxIterations, MaxStaleIterations: s.opts.MaxStaleIterations,
		})
		if errors.Is(err, domain.ErrNoScheduleDue) {
			return now, nil
		}
		if err != nil {
			return now, err
		}
		sc := f.Schedule
		s.log.Info("schedule came due", "schedule", sc.ID, "event", f.Event.Type, "task", f.Task.Number,
			"detail", f.Event.Detail, "next_run_at", sc.NextRunAt)
		if f.Task.Number != 0 {
			t := f.Task
			s.rt.Emit(ctx, plugin.Event{Type: plugin.TaskCreated, Task: &t})
			if s.opts.Wake != nil {
				s.opts.Wake()
			}
		}
	}
}

func (s *Service) maxTokens() *int64 {
	n := s.opts.MaxTokens
	return &n
}

// MinInterval is the shortest gap allowed between two runs.
func (s *Service) MinInterval() time.Duration { return s.opts.MinInterval }

// Create checks and stores a schedule; its loop, and this replica's, look
// at the schedules again.
func (s *Service) Create(ctx context.Context, in domain.NewSchedule) (domain.Schedule, error) {
	in.Strategy = strings.ToLower(strings.TrimSpace(in.Strategy))
	if in.Strategy != "" && s.opts.Strategies != nil {
		names := s.opts.Strategies()
		if !slices.Contains(names, in.Strategy) {
			return domain.Schedule{}, fmt.Errorf("create schedule: %w: there is no %q strategy; choose one of %s",
				domain.ErrInvalid, in.Strategy, strings.Join(names, ", "))
		}
	}
	in.MinInterval = s.opts.MinInterval
	in.MaxPerRequestor = domain.MaxSchedulesPerRequestor
	if in.Now.IsZero() {
		in.Now = s.clk.Now()
	}
	sc, err := s.store.CreateSchedule(ctx, in)
	if err != nil {
		return domain.Schedule{}, err
	}
	s.log.Info("schedule created", "schedule", sc.ID, "cron", sc.Cron, "requestor", sc.RequestorID, "next_run_at", sc.NextRunAt)
	s.Wake()
	return sc, nil
}

// Get reads a schedule the caller may see.
func (s *Service) Get(ctx context.Context, id int64, who domain.ScheduleCaller) (domain.Schedule, error) {
	sc, err := s.store.GetSchedule(ctx, id)
	if err != nil {
		return domain.Schedule{}, err
	}
	if who.WorkspaceID != "" && sc.WorkspaceID != who.WorkspaceID {
		// As one that does not exist: numbers do not leak across
		// workspaces.
		return domain.Schedule{}, fmt.Errorf("get schedule #%d: %w", id, domain.ErrScheduleNotFound)
	}
	return sc, nil
}

// Events lists a schedule's latest events, newest first.
func (s *Service) Events(ctx context.Context, id int64) ([]domain.ScheduleEvent, error) {
	return s.store.ScheduleEvents(ctx, id, eventsShown)
}

// List lists the schedules of the caller's workspace (all of them when
// it names none).
func (s *Service) List(ctx context.Context, who domain.ScheduleCaller) ([]domain.Schedule, error) {
	return s.store.ListSchedules(ctx, domain.ScheduleFilter{WorkspaceID: who.WorkspaceID})
}

// Pause pauses (paused) or resumes a schedule the caller may change.
func (s *Service) Pause(ctx context.Context, id int64, paused bool, who domain.ScheduleCaller) (domain.Schedule, error) {
	op := map[bool]string{true: "pause", false: "resume"}[paused]
	if err := s.mayChange(ctx, op, id, who); err != nil {
		return domain.Schedule{}, err
	}
	sc, err := s.store.PauseSchedule(ctx, id, paused, who.ID, s.clk.Now())
	if err != nil {
		return domain.Schedule{}, err
	}
	s.Wake()
	return sc, nil
}

// Delete deletes a schedule the caller may change; its runs stay.
func (s *Service) Delete(ctx context.Context, id int64, who domain.ScheduleCaller) (domain.Schedule, error) {
	sc, err := s.Get(ctx, id, who)
	if err != nil {
		return domain.Schedule{}, fmt.Errorf("delete schedule #%d: %w", id, errors.Unwrap(err))
	}
	if !s.may(sc, who) {
		return domain.Schedule{}, fmt.Errorf("delete schedule #%d: %w", id, domain.ErrScheduleForbidden)
	}
	if err := s.store.DeleteSchedule(ctx, id); err != nil {
		return domain.Schedule{}, err
	}
	s.log.Info("schedule deleted", "schedule", id, "actor", who.ID)
	s.Wake()
	return sc, nil
}

func (s *Service) mayChange(ctx context.Context, op string, id int64, who domain.ScheduleCaller) error {
	sc, err := s.Get(ctx, id, who)
	if err != nil {
		return fmt.Errorf("%s schedule #%d: %w", op, id, errors.Unwrap(err))
	}
	if !s.may(sc, who) {
		return fmt.Errorf("%s schedule #%d: %w", op, id, domain.ErrScheduleForbidden)
	}
	return nil
}

// may says whether who may change sc: its requestor and admins may, as
// with tasks.
func (s *Service) may(sc domain.Schedule, who domain.ScheduleCaller) bool {
	return who.ID != "" && (who.Admin || who.ID == sc.RequestorID || slices.Contains(s.opts.Admins, who.ID))
}
