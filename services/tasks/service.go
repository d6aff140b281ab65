package tasks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/plugin"
)

// Defaults for the service.
const (
	DefaultPoll             = 2 * time.Second
	DefaultMaxActivePerUser = 20
	leaseMargin             = 10 * time.Second
	commitTimeout           = 15 * time.Second
	errorBackoff            = time.Second
)

// NotifyFunc derives the outbox rows a task change causes; the service
// writes them in the same transaction as the change. The notification
// service provides it.
type NotifyFunc func(before, after plugin.Task, m *plugin.Mutation) []plugin.Notification

// Options configure the task service.
type Options struct {
	Runtime *plugin.Runtime // its store, clock and logger are used
	Workers int             // iterations in flight; default 1
	Lease   time.Duration   // default 2m
	Poll    time.Duration   // how often idle workers look for work without a signal
	// Owner names this replica in leases; default host-pid-random.
	Owner            string
	History          History
	MaxActivePerUser int
	Notify           NotifyFunc
	// Listen, when set, delivers signals from other replicas that a task
	// became ready (PostgreSQL LISTEN/NOTIFY).
	Listen func(ctx context.Context) (<-chan struct{}, error)
	// Metrics, when set, is told about claims, model calls and iteration
	// outcomes (internal/metrics implements it).
	Metrics Metrics
}

// Metrics receives the measurements of the task service. Its methods must
// be cheap and safe for concurrent use.
type Metrics interface {
	// Iteration counts an iteration by outcome: the status it left the
	// task in ("continued" for running, "completed", "failed",
	// "stalemate", "waiting", "paused"), or "rejected" (the lease was
	// lost or the task ended meanwhile), "released" (shutdown) or "error".
	Iteration(outcome string)
	// Claim observes how long a claim statement took.
	Claim(d time.Duration)
	// ModelRequest observes one model call of an iteration and its usage.
	ModelRequest(d time.Duration, u plugin.Usage)
	// LeaseLost counts a result rejected because its lease was lost.
	LeaseLost()
}

type noMetrics struct{}

func (noMetrics) Iteration(string)                         {}
func (noMetrics) Claim(time.Duration)                      {}
func (noMetrics) ModelRequest(time.Duration, plugin.Usage) {}
func (noMetrics) LeaseLost()                               {}

// Service is the task service.
type Service struct {
	opts  Options
	rt    *plugin.Runtime
	store plugin.Store
	clk   clock.Clock
	log   *slog.Logger
	it    *Iterator

	wake chan struct{}

	mu       sync.Mutex
	stopping chan struct{}      // closed: claim nothing new
	hard     context.CancelFunc // cancels in-flight iterations
	hardCtx  context.Context
	wg       sync.WaitGroup
}

var _ plugin.Service = (*Service)(nil)

// New returns a task service; Start runs its workers.
func New(opts Options) *Service {
	if opts.Workers <= 0 {
		opts.Workers = 1
	}
	if opts.Lease <= 0 {
		opts.Lease = 2 * time.Minute
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	if opts.Owner == "" {
		opts.Owner = defaultOwner()
	}
	if opts.MaxActivePerUser <= 0 {
		opts.MaxActivePerUser = DefaultMaxActivePerUser
	}
	if opts.Metrics == nil {
		opts.Metrics = noMetrics{}
	}
	rt := opts.Runtime
	return &Service{
		opts:  opts,
		rt:    rt,
		store: rt.Store(),
		clk:   rt.Clock(),
		log:   rt.Logger().With("service", "tasks"),
		it:    &Iterator{Runtime: rt, History: opts.History, Metrics: opts.Metrics},
		wake:  make(chan struct{}, 1),
	}
}

func defaultOwner() string {
	host, _ := os.Hostname()
	var b [3]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Store is the store the service works on.
func (s *Service) Store() plugin.Store { return s.store }

// Name implements plugin.Service.
func (s *Service) Name() string { return "tasks" }

// Start launches the workers.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping != nil {
		return errors.New("task service already started")
	}
	s.stopping = make(chan struct{})
	s.hardCtx, s.hard = context.WithCancel(context.WithoutCancel(ctx))
	if s.opts.Listen != nil {
		signals, err := s.opts.Listen(s.hardCtx)
		if err != nil {
			s.log.Warn("cannot listen for tasks from other replicas; polling instead", "err", err)
		} else {
			s.wg.Add(1)
			go s.relay(signals)
		}
	}
	for i := range s.opts.Workers {
		s.wg.Add(1)
		go s.work(fmt.Sprintf("%s/%d", s.opts.Owner, i))
	}
	s.log.Info("task service started", "workers", s.opts.Workers, "lease", s.opts.Lease, "owner", s.opts.Owner)
	return nil
}

// Stop claims nothing new and waits for in-flight iterations to finish
// and commit. If ctx ends first, they are canceled and their tasks
// released, so another replica takes them at once rather than after the
// lease.
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	if s.stopping == nil {
		s.mu.Unlock()
		return nil
	}
	select {
	case <-s.stopping:
	default:
		close(s.stopping)
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		s.hard()
		return nil
	case <-ctx.Done():
		s.hard()
		<-done
		return fmt.Errorf("task service: in-flight iterations canceled: %w", ctx.Err())
	}
}

// Wake tells an idle worker that a task may be ready.
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Service) relay(signals <-chan struct{}) {
	defer s.wg.Done()
	for {
		select {
		case <-s.stopping:
			return
		case _, ok := <-signals:
			if !ok {
				return
			}
			s.Wake()
		}
	}
}

func (s *Service) work(owner string) {
	defer s.wg.Done()
	for {
		select {
		case <-s.stopping:
			return
		default:
		}
		did, err := s.Step(s.hardCtx, owner)
		if err != nil {
			if s.hardCtx.Err() != nil {
				return
			}
			s.log.Error("iteration failed", "owner", owner, "err", err)
			if !s.idle(errorBackoff) {
				return
			}
			continue
		}
		if did {
			s.Wake() // there may be more ready: let another idle worker look
			continue
		}
		if !s.idle(s.opts.Poll) {
			return
		}
	}
}

// idle waits for a wake-up or d; false means the service is stopping.
func (s *Service) idle(d time.Duration) bool {
	t := s.clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.stopping:
		return false
	case <-s.wake:
	case <-t.C():
	}
	return true
}

// Step claims the next task and runs one iteration of it as owner,
// committing the result if the lease still holds. It reports whether a
// task was served. Workers call it in a loop; tests and benchmarks call it
// directly.
func (s *Service) Step(ctx context.Context, owner string) (bool, error) {
	start := s.clk.Now()
	task, err := s.store.ClaimTask(ctx, plugin.Claim{Owner: owner, Now: start, Lease: s.opts.Lease})
	if err == nil || errors.Is(err, plugin.ErrNoTask) {
		s.opts.Metrics.Claim(s.clk.Now().Sub(start))
	}
	if errors.Is(err, plugin.ErrNoTask) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("claim: %w", err)
	}
	s.emit(ctx, plugin.TaskChanged, task)
	budget := max(s.opts.Lease-leaseMargin, s.opts.Lease/2)
	iterCtx, cancel := clock.WithTimeout(ctx, s.clk, budget)
	o := s.it.Run(iterCtx, task)
	cancel()
	// The write must happen even if ctx is being canceled: use a
	// context of its own.
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer wcancel()
	if ctx.Err() != nil {
		// Shutting down mid-iteration: give the task back untouched.
		_, err := s.mutate(wctx, task.Number, func(t plugin.Task) (plugin.Mutation, error) {
			return plugin.Released(t, owner, task.Fence, s.clk.Now())
		})
		if err != nil && !errors.Is(err, plugin.ErrStaleFence) {
			s.opts.Metrics.Iteration("error")
			return true, fmt.Errorf("release task #%d: %w", task.Number, err)
		}
		s.opts.Metrics.Iteration("released")
		return true, ctx.Err()
	}
	return true, s.commit(wctx, task, o)
}

// commit applies an outcome, or records its rejection when the lease was
// lost meanwhile.
func (s *Service) commit(ctx context.Context, claimed plugin.Task, o plugin.Outcome) error {
	after, err := s.mutate(ctx, claimed.Number, func(t plugin.Task) (plugin.Mutation, error) {
		return plugin.Iterated(t, o)
	})
	if errors.Is(err, plugin.ErrStaleFence) || errors.Is(err, plugin.ErrTerminal) {
		s.log.Warn("late iteration result rejected", "task", claimed.Number, "fence", o.Fence, "owner", o.Owner, "err", err)
		s.opts.Metrics.Iteration("rejected")
		if errors.Is(err, plugin.ErrStaleFence) {
			s.opts.Metrics.LeaseLost()
		}
		_, rerr := s.mutate(ctx, claimed.Number, func(t plugin.Task) (plugin.Mutation, error) {
			return plugin.Rejected(t, o, err)
		})
		if rerr != nil {
			return fmt.Errorf("record rejected result of task #%d: %w", claimed.Number, rerr)
		}
		return nil
	}
	if err != nil {
		s.opts.Metrics.Iteration("error")
		return fmt.Errorf("commit iteration of task #%d: %w", claimed.Number, err)
	}
	s.opts.Metrics.Iteration(outcome(after.Status))
	s.afterChange(ctx, after)
	return nil
}

// outcome names an iteration's result by the status it left the task in.
func outcome(st plugin.Status) string {
	if st == plugin.StatusRunning {
		return "continued"
	}
	return string(st)
}

// mutate runs a transition through the store, adding the notifications
// the change causes to the same transaction.
func (s *Service) mutate(ctx context.Context, number int64, fn plugin.MutateFunc) (plugin.Task, error) {
	return s.store.UpdateTask(ctx, number, func(cur plugin.Task) (plugin.Mutation, error) {
		m, err := fn(cur)
		if err != nil {
			return m, err
		}
		if s.opts.Notify != nil {
			m.Notifications = append(m.Notifications, s.opts.Notify(cur, m.Task, &m)...)
		}
		return m, nil
	})
}

// afterChange tells subscribers and wakes workers for a task back in the
// queue. A task that ended may have resumed its parent in the same
// transaction (see adapters/sqlstore): subscribers hear of the parent too.
func (s *Service) afterChange(ctx context.Context, t plugin.Task) {
	switch {
	case t.Status.Terminal():
		s.emit(ctx, plugin.TaskEnded, t)
		if t.ParentNumber != 0 {
			if parent, err := s.store.GetTask(ctx, t.ParentNumber); err == nil {
				s.emit(ctx, plugin.TaskChanged, parent)
				if parent.Status == plugin.StatusQueued {
					s.Wake()
				}
			}
		}
	default:
		s.emit(ctx, plugin.TaskChanged, t)
		if t.Status == plugin.StatusQueued {
			s.Wake()
		}
	}
}

func (s *Service) emit(ctx context.Context, typ plugin.EventType, t plugin.Task) {
	s.rt.Emit(ctx, plugin.Event{Type: typ, Task: &t})
}
