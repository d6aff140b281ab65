package tasks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/taskloom/taskloom/domain"
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
	// stopGrace is how long a write still running when Stop's deadline
	// passes (a commit, a release) may go on: past it the task is left
	// to its lease, and Stop returns.
	stopGrace = 2 * time.Second
)

// writeContext bounds a write that must happen even as its caller is
// canceled — an iteration's commit, a task given back: commitTimeout,
// cut to stopGrace (on the service's clock) once parent ends, which for
// a worker is when Stop's deadline has passed.
func (s *Service) writeContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), commitTimeout)
	stop := context.AfterFunc(parent, func() {
		t := s.clk.NewTimer(stopGrace)
		defer t.Stop()
		select {
		case <-t.C():
			cancel()
		case <-ctx.Done():
		}
	})
	return ctx, func() { stop(); cancel() }
}

// NotifyFunc derives the outbox rows a task change causes; the service
// writes them in the same transaction as the change. The notification
// service provides it.
type NotifyFunc func(before, after domain.Task, m *domain.Mutation) []domain.Notification

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
	// Temperature is the base temperature of iterations; 0 means
	// DefaultTemperature.
	Temperature float64
	// MaxTokens is the token budget of a task created without one; 0 is
	// no limit.
	MaxTokens int64
	// AnswerTimeout is how long a question waits for an answer before the
	// task goes on without one; 0 means DefaultAnswerTimeout.
	AnswerTimeout time.Duration
	// StoreClock measures leases on the store's clock, which every replica
	// shares, rather than on Runtime's (docs/security.md). Tests that move a fake
	// clock leave it off.
	StoreClock bool
	// Retention is how long chat memories are kept; 0 means
	// DefaultRetention.
	Retention time.Duration
	// ApproveTools are the tools a person must approve before a task runs
	// them (TASKLOOM_APPROVE_TOOLS); nil means none.
	ApproveTools []string
	// Strategies are strategies a plugin adds to the built-in ones of
	// docs/strategies.md, by the name a task chooses them with; a built-in name
	// replaces that strategy.
	Strategies map[string]Strategy
	// Agents are the team of the multi-agent strategies (docs/strategies.md:
	// supervisor, magentic, group_chat; TASKLOOM_AGENTS); nil means
	// BuiltinAgents. Team sets their limits and how a group chat chooses
	// who speaks.
	Agents []Agent
	Team   TeamOptions
	// Memory, when set, recalls for every iteration what is remembered
	// in the task's room that bears on its goal and latest step: the
	// prompt's "Relevant memory" section (docs/memory.md).
	Memory MemorySection
}

// MemorySection is what the task service asks of memory: a bounded
// section for a prompt (*plugin.Recaller implements it).
type MemorySection interface {
	Section(ctx context.Context, ask plugin.MemoryAsk) (string, error)
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
	// ModelUp says whether the model answers (taskloom_model_up).
	ModelUp(up bool)
}

type noMetrics struct{}

func (noMetrics) Iteration(string)                         {}
func (noMetrics) Claim(time.Duration)                      {}
func (noMetrics) ModelRequest(time.Duration, plugin.Usage) {}
func (noMetrics) LeaseLost()                               {}
func (noMetrics) ModelUp(bool)                             {}

// Service is the task service.
var _ domain.TaskControl = (*Service)(nil)

type Service struct {
	opts  Options
	rt    *plugin.Runtime
	store domain.Store
	clk   clock.Clock
	log   *slog.Logger
	it    *Iterator
	model *breaker
	// files keeps the task's files as this service's last commit of
	// each task left them, for the task's next iteration.
	files listings

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
	if opts.Temperature <= 0 {
		opts.Temperature = DefaultTemperature
	}
	if opts.AnswerTimeout <= 0 {
		opts.AnswerTimeout = DefaultAnswerTimeout
	}
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	rt := opts.Runtime
	return &Service{
		opts:  opts,
		rt:    rt,
		store: rt.Store(),
		clk:   rt.Clock(),
		log:   rt.Logger().With("service", "tasks"),
		it: &Iterator{Runtime: rt, History: opts.History, Metrics: opts.Metrics, Temperature: opts.Temperature,
			ApproveTools: opts.ApproveTools, Memory: opts.Memory, strategies: newStrategies(opts.Strategies),
			team: newTeam(opts.Agents, opts.Team)},
		model: newBreaker(),
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
func (s *Service) Store() domain.Store { return s.store }

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
	s.wg.Add(1)
	go s.sweep()
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
	w := s.Worker(owner)
	defer func() {
		// A task claimed with the last commit is not in flight: give it
		// back for another replica to take at once.
		ctx, cancel := s.writeContext(s.hardCtx)
		defer cancel()
		if err := w.Release(ctx); err != nil {
			s.log.Error("cannot give back the task claimed ahead", "owner", owner, "err", err)
		}
	}()
	for {
		select {
		case <-s.stopping:
			return
		default:
		}
		if blocked, wait := s.model.blocked(s.clk.Now()); blocked && w.next.Number == 0 {
			if !s.idle(wait) {
				return
			}
			continue
		}
		did, err := w.Step(s.hardCtx)
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
// task was served. Tests and benchmarks call it directly; workers use a
// Worker, which also claims its next task with each commit.
//
// While the model is unavailable (docs/tasks.md) the replica's breaker keeps
// Step from claiming, but for one probe when the backoff or the hold's
// probe interval ends.
func (s *Service) Step(ctx context.Context, owner string) (bool, error) {
	return s.step(ctx, owner, nil)
}

// step is Step; with w, it runs the task w claimed with its last commit,
// if it holds one, and claims w's next task with this commit.
func (s *Service) step(ctx context.Context, owner string, w *Worker) (bool, error) {
	var task domain.Task
	var leaseLeft time.Duration // what is left of an adopted task's lease
	if w != nil && w.next.Number == 0 && w.unsure {
		if err := w.adopt(ctx); err != nil {
			return false, err
		}
	}
	if w != nil && w.next.Number != 0 {
		task, w.next = w.next, domain.Task{}
		leaseLeft, w.nextBudget = w.nextBudget, 0
		if blocked, _ := s.model.blocked(s.clk.Now()); blocked {
			// The model stopped answering since the claim: the task
			// waits with the others, untouched.
			return true, s.release(ctx, task)
		}
	} else {
		start := s.clk.Now()
		if ok, _ := s.model.allow(start); !ok {
			return false, nil
		}
		var err error
		task, err = s.store.ClaimTask(ctx, domain.Claim{Owner: owner, Now: start, Lease: s.opts.Lease, StoreClock: s.opts.StoreClock})
		if err == nil || errors.Is(err, domain.ErrNoTask) {
			s.opts.Metrics.Claim(s.clk.Now().Sub(start))
		}
		if err != nil {
			s.model.abandon()
			if errors.Is(err, domain.ErrNoTask) {
				return false, nil
			}
			if w != nil && !domainError(err) {
				w.unsure = true // it may have committed unheard
			}
			return false, fmt.Errorf("claim: %w", err)
		}
		s.emitQuiet(ctx, task) // a claim enqueues no notification
	}
	budget := max(s.opts.Lease-leaseMargin, s.opts.Lease/2)
	if leaseLeft > 0 {
		// An adopted task: its lease began with a claim made earlier,
		// and the iteration must end before it does.
		budget = min(budget, leaseLeft)
	}
	iterCtx, cancel := clock.WithTimeout(ctx, s.clk, budget)
	files := s.files.view(s.store, task)
	o, runErr := s.it.run(iterCtx, task, files)
	cancel()
	if ctx.Err() != nil {
		// Shutting down mid-iteration: give the task back untouched.
		if err := s.release(ctx, task); err != nil {
			return true, err
		}
		return true, ctx.Err()
	}
	// The write must happen even if ctx is being canceled: use a
	// context of its own.
	wctx, wcancel := s.writeContext(ctx)
	defer wcancel()
	var mf *ModelFailure
	if errors.As(runErr, &mf) {
		return true, s.modelFailed(wctx, task, mf)
	}
	if lifted := s.model.success(); lifted != "" {
		s.log.Info("the model answers again: tasks are no longer on hold", "was", lifted)
	}
	s.opts.Metrics.ModelUp(true)
	return true, s.commit(wctx, task, o, w, files)
}

// release gives task, claimed and not run or not finished, back
// untouched (an iteration "released"). A lease lost meanwhile leaves
// nothing to give back.
func (s *Service) release(ctx context.Context, task domain.Task) error {
	wctx, cancel := s.writeContext(ctx)
	defer cancel()
	err := s.persist(wctx, func() error {
		_, err := s.mutate(wctx, task.Number, func(t domain.Task) (domain.Mutation, error) {
			return domain.Released(t, task.LeaseOwner, task.Fence, s.clk.Now())
		})
		return err
	})
	if err != nil && !errors.Is(err, domain.ErrStaleFence) {
		s.opts.Metrics.Iteration("error")
		return fmt.Errorf("release task #%d: %w", task.Number, err)
	}
	s.opts.Metrics.Iteration("released")
	return nil
}

// A Worker serves tasks one iteration at a time as one owner, as each of
// the service's workers does. When the store is a domain.NextClaimer, the
// commit of each iteration claims the worker's next task in the same
// transaction (docs/PERFORMANCE.md: one commit an iteration instead of two), and
// its next Step runs that task. A Worker is not safe for concurrent use.
type Worker struct {
	s     *Service
	owner string
	next  domain.Task // claimed with the last commit and not yet run
	// nextBudget, when not zero, bounds the iteration of next: what is
	// left of an adopted task's lease, less the margin a commit needs.
	nextBudget time.Duration
	// unsure is set when a claim of the worker's may have committed
	// without its answer reaching the worker (the connection broke
	// between the two): before it claims again, the worker looks for a
	// task leased to it (adopt), so that task does not wait for its
	// lease to end.
	unsure bool
}

// Worker returns a worker that serves tasks as owner.
func (s *Service) Worker(owner string) *Worker { return &Worker{s: s, owner: owner} }

// Step runs one iteration: of the task claimed with the last commit, or
// else of the next task it claims, as Service.Step does. It reports
// whether a task was served.
func (w *Worker) Step(ctx context.Context) (bool, error) { return w.s.step(ctx, w.owner, w) }

// Release gives back, untouched, the task claimed with the last commit,
// if the worker holds one: a worker that stops serving must call it, or
// the task waits for its lease to end.
func (w *Worker) Release(ctx context.Context) error {
	if w.unsure && w.next.Number == 0 {
		if err := w.adopt(ctx); err != nil {
			return err
		}
	}
	if w.next.Number == 0 {
		return nil
	}
	task := w.next
	w.next, w.nextBudget = domain.Task{}, 0
	return w.s.release(ctx, task)
}

// adopt takes up a task the store shows leased to the worker while the
// worker knows of none: one claimed by a claim or a commit whose answer
// was lost. Its lease and fence are the worker's, so the worker runs it
// next, in its turn, as if the answer had come — but only while the lease
// holds, and for no longer than it holds: once a lease has ended, any
// worker may claim the task, and running it under the old lease could
// run the same iteration twice at once. A task whose lease has ended, or
// has too little left for an iteration, is given back instead (a lease
// taken over meanwhile leaves nothing to give back), and the worker
// claims afresh.
func (w *Worker) adopt(ctx context.Context) error {
	held, err := w.s.store.ListTasks(ctx, domain.TaskFilter{LeaseOwner: w.owner,
		Statuses: []domain.Status{domain.StatusRunning}, Order: domain.OrderQueue, Limit: 2})
	if err != nil {
		return fmt.Errorf("look for a task claimed without an answer: %w", err)
	}
	// Two such claims in a row leave two tasks: the next step takes the
	// other.
	w.unsure = len(held) > 1
	if len(held) == 0 {
		return nil
	}
	task := held[0]
	now, err := w.s.leaseNow(ctx)
	if err != nil {
		w.unsure = true
		return fmt.Errorf("look for a task claimed without an answer: %w", err)
	}
	left := task.LeaseExpiresAt.Sub(now) - leaseMargin
	if left <= 0 {
		w.s.log.Info("a task claimed without an answer (the connection broke) is given back: its lease has ended or is about to",
			"task", task.Number, "owner", w.owner, "fence", task.Fence, "lease_expires_at", task.LeaseExpiresAt)
		return w.s.release(ctx, task)
	}
	w.next, w.nextBudget = task, left
	w.s.log.Info("a task claimed without an answer (the connection broke) is run by its worker",
		"task", task.Number, "owner", w.owner, "fence", task.Fence, "budget", left)
	return nil
}

// leaseNow is the time leases are measured at: the store's clock when
// the service measures leases on it, else the service's own.
func (s *Service) leaseNow(ctx context.Context) (time.Time, error) {
	if !s.opts.StoreClock {
		return s.clk.Now(), nil
	}
	now, err := s.store.Now(ctx)
	if err != nil {
		return time.Time{}, fmt.Errorf("read the store's clock: %w", err)
	}
	return now, nil
}

// ModelState is what /readyz says of the model: "ok", "degraded" while
// calls fail transiently, or "on hold: <reason>" after a refusal.
func (s *Service) ModelState() string { return s.model.state() }

// modelFailed gives the task back unchanged but for when it may be tried
// again: after a backoff for a transient failure, at the next probe for a
// permanent one, which also puts the replica on hold — one log line and
// one message to each room with active tasks.
func (s *Service) modelFailed(ctx context.Context, task domain.Task, mf *ModelFailure) error {
	now := s.clk.Now()
	var next time.Time
	reason := mf.Err.Error()
	if mf.Class == plugin.ModelPermanent {
		next = now.Add(holdProbe)
		if s.model.permanent(now, reason) {
			s.log.Error("the model refused the request: every task is on hold until it answers", "err", mf.Err)
			s.announceHold(ctx, reason, mf.Err)
		}
	} else {
		next = now.Add(s.model.transient(now))
		s.log.Warn("the model is unavailable; the task will be tried again", "task", task.Number, "retry_at", next, "err", mf.Err)
	}
	s.opts.Metrics.ModelUp(false)
	s.opts.Metrics.Iteration("model_unavailable")
	var after domain.Task
	err := s.persist(ctx, func() error {
		var err error
		after, err = s.mutate(ctx, task.Number, func(t domain.Task) (domain.Mutation, error) {
			return domain.ModelUnavailable(t, task.LeaseOwner, task.Fence, now, next, reason)
		})
		return err
	})
	if errors.Is(err, domain.ErrStaleFence) || errors.Is(err, domain.ErrTerminal) {
		return nil // the lease was lost meanwhile: nothing of ours to give back
	}
	if err != nil {
		return fmt.Errorf("release task #%d after a model failure: %w", task.Number, err)
	}
	s.emit(ctx, plugin.TaskChanged, after)
	return nil
}

// announceHold tells each room with active tasks, once, that they are on
// hold.
func (s *Service) announceHold(ctx context.Context, reason string, err error) {
	tasks, lerr := s.store.ListTasks(ctx, domain.TaskFilter{Statuses: active})
	if lerr != nil {
		s.log.Error("cannot list the rooms to tell of the hold", "err", lerr)
		return
	}
	text := "⏸️ Tasks are on hold: the model refused the request"
	var me *plugin.ModelError
	if errors.As(err, &me) && me.Status != 0 {
		text += fmt.Sprintf(" (%d: %s)", me.Status, clip(reason, 200))
	} else {
		text += " (" + clip(reason, 200) + ")"
	}
	text += ". They resume by themselves once it answers again."
	seen := map[string]bool{}
	for _, t := range tasks {
		if t.RoomID == "" || seen[t.RoomID] {
			continue
		}
		seen[t.RoomID] = true
		payload, _ := json.Marshal(map[string]string{"text": text})
		if _, err := s.store.Enqueue(ctx, domain.Notification{Room: t.RoomID, Category: domain.NotifyMessage,
			Payload: payload, CreatedAt: s.clk.Now()}); err != nil {
			s.log.Error("cannot tell a room of the hold", "room", t.RoomID, "err", err)
		}
	}
}

// commit applies an outcome, or records its rejection when the lease was
// lost meanwhile. With w, unless the service is stopping or the model's
// breaker keeps it from claiming, the same transaction claims w's next
// task (domain.NextClaimer). files, the iteration's view of the task's
// files, is kept for the task's next iteration when the commit goes
// through.
func (s *Service) commit(ctx context.Context, claimed domain.Task, o domain.Outcome, w *Worker, files *domain.FileView) error {
	s.files.forget(claimed.Number)
	apply := func(t domain.Task) (domain.Mutation, error) {
		if o.Approved {
			return domain.ToolRan(t, o)
		}
		return domain.Iterated(t, o)
	}
	var ahead *domain.Claim
	nc, ok := s.store.(domain.NextClaimer)
	if w != nil && ok && !s.isStopping() {
		now := s.clk.Now()
		if allowed, _ := s.model.allow(now); allowed {
			ahead = &domain.Claim{Owner: w.owner, Now: now, Lease: s.opts.Lease, StoreClock: s.opts.StoreClock}
		}
	}
	// urgent is whether the change written enqueues a notification to
	// send at once (the last try's, the one that committed).
	urgent := false
	notified := s.notifying(apply)
	write := func(t domain.Task) (domain.Mutation, error) {
		m, err := notified(t)
		urgent = slices.ContainsFunc(m.Notifications, domain.Notification.Urgent)
		return m, err
	}
	var after, next domain.Task
	var claimErr error
	tries := 0
	err := s.persist(ctx, func() error {
		tries++
		var err error
		if ahead == nil {
			after, err = s.store.UpdateTask(ctx, claimed.Number, write)
			return err
		}
		after, next, err = nc.UpdateTaskAndClaim(ctx, claimed.Number, write, *ahead)
		if err != nil && after.Number != 0 {
			// The commit went through; the claim that followed it on
			// its own did not.
			claimErr, err = err, nil
		}
		return err
	})
	if ahead != nil && next.Number == 0 {
		s.model.abandon()
		// A try whose answer was lost may have committed, and claimed
		// with it; so may a claim after the commit that failed.
		if (err != nil && (tries > 1 || !domainError(err))) || (claimErr != nil && !domainError(claimErr)) {
			w.unsure = true
		}
	}
	if claimErr != nil {
		s.log.Warn("cannot claim the next task with the commit; the worker claims it next", "task", claimed.Number, "err", claimErr)
	}
	if next.Number != 0 {
		w.next = next
		defer s.emitQuiet(ctx, next)
	}
	if tries > 1 && errors.Is(err, domain.ErrStaleFence) {
		// The store may have taken an earlier try whose answer was lost
		// with its connection: then the result is in, not late.
		if s.landed(ctx, claimed, o) {
			if t, gerr := s.store.GetTask(ctx, claimed.Number); gerr == nil {
				s.opts.Metrics.Iteration(outcome(t.Status))
				s.afterChange(ctx, t, false)
			}
			return nil
		}
	}
	if errors.Is(err, domain.ErrStaleFence) || errors.Is(err, domain.ErrTerminal) {
		s.log.Warn("late iteration result rejected", "task", claimed.Number, "fence", o.Fence, "owner", o.Owner, "err", err)
		s.opts.Metrics.Iteration("rejected")
		if errors.Is(err, domain.ErrStaleFence) {
			s.opts.Metrics.LeaseLost()
		}
		_, rerr := s.mutate(ctx, claimed.Number, func(t domain.Task) (domain.Mutation, error) {
			return domain.Rejected(t, o, err)
		})
		if rerr != nil {
			return fmt.Errorf("record rejected result of task #%d: %w", claimed.Number, rerr)
		}
		return nil
	}
	if err != nil {
		s.opts.Metrics.Iteration("error")
		err = fmt.Errorf("commit iteration of task #%d: %w", claimed.Number, err)
		if ferr := s.commitFailed(claimed, o, err); ferr != nil {
			return errors.Join(err, ferr)
		}
		return err
	}
	s.files.committed(after, files, o.Now)
	s.opts.Metrics.Iteration(outcome(after.Status))
	s.afterChange(ctx, after, !urgent)
	return nil
}

// commitFailed records that o, the result of the iteration claimed on
// claimed, could not be written for reason, and gives the task back to run
// that iteration again — or, the domain.MaxCommitFailures-th time, fails
// it with the reason. The count is in the task's recent events, so it
// holds across workers and replicas.
func (s *Service) commitFailed(claimed domain.Task, o domain.Outcome, reason error) error {
	if s.hardCtx != nil && s.hardCtx.Err() != nil {
		// Stopping past its deadline: the commit was cut short, not
		// refused; the task's lease gives it back.
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	evs, err := s.store.TaskEvents(ctx, claimed.Number, max(0, claimed.EventSeq-recentCommitEvents))
	if err != nil {
		return fmt.Errorf("count the failed commits of task #%d: %w", claimed.Number, err)
	}
	failures := domain.CommitFailures(evs, claimed.Iteration+1) + 1
	o.Now = s.clk.Now()
	record := func(t domain.Task) (domain.Mutation, error) { return domain.CommitFailed(t, o, reason, failures) }
	t, err := s.mutate(ctx, claimed.Number, record)
	if err != nil && !domainError(err) {
		return fmt.Errorf("record the failed commit of task #%d: %w", claimed.Number, err)
	}
	if err != nil && t.Number == 0 {
		// What the change causes may be what the store refuses (a
		// notification it cannot take): record it without.
		if t, err = s.store.UpdateTask(ctx, claimed.Number, record); err != nil {
			return fmt.Errorf("record the failed commit of task #%d: %w", claimed.Number, err)
		}
	}
	s.log.Error("an iteration's result could not be recorded", "task", claimed.Number, "iteration", claimed.Iteration+1,
		"failures", failures, "task_failed", t.Status.Terminal(), "err", reason)
	s.afterChange(ctx, t, false)
	return nil
}

// recentCommitEvents is how far back in a task's events commitFailed
// looks for the failed commits of the same iteration: each failure is a
// claim and a commit_failed event, so the last MaxCommitFailures fit with
// room for others between them.
const recentCommitEvents = 8 * domain.MaxCommitFailures

// landed reports whether the task's event log shows o committed: its
// iteration (or the approved call's run) under o's fence, after the
// claim. The row cannot say: once the commit is in, anyone may claim the
// task again.
func (s *Service) landed(ctx context.Context, claimed domain.Task, o domain.Outcome) bool {
	evs, err := s.store.TaskEvents(ctx, claimed.Number, claimed.EventSeq)
	if err != nil {
		return false
	}
	for _, e := range evs {
		if e.Fence == o.Fence && (e.Type == domain.EventIterated || e.Type == domain.EventToolRan) {
			return true
		}
	}
	return false
}

// Store outages: a write the store refused for a reason other than the
// task's state (a connection killed, the database restarting) is tried
// again, the wait doubling up to maxStoreRetryWait, until the caller's
// context ends.
const (
	firstStoreRetryWait = 100 * time.Millisecond
	maxStoreRetryWait   = 2 * time.Second
)

// persist runs write until it succeeds, fails for a reason of the task's
// own (its state, its lease, its limits), or ctx ends. Retrying is safe:
// a transaction that failed wrote nothing, and one whose commit went
// through although its answer was lost is refused the second time by the
// fence.
func (s *Service) persist(ctx context.Context, write func() error) error {
	wait := firstStoreRetryWait
	for {
		err := write()
		if err == nil || domainError(err) || ctx.Err() != nil {
			return err
		}
		s.log.Warn("the store did not take a change; trying again", "err", err, "in", wait)
		t := s.clk.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C():
		}
		wait = min(wait*2, maxStoreRetryWait)
	}
}

// domainError reports whether err is the task's doing rather than the
// store's: trying again would change nothing.
func domainError(err error) bool {
	for _, e := range []error{domain.ErrStaleFence, domain.ErrTerminal, domain.ErrInvalidState, domain.ErrInvalid,
		domain.ErrNotFound, domain.ErrLimit, domain.ErrNoTask, domain.ErrExists} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// outcome names an iteration's result by the status it left the task in.
func outcome(st domain.Status) string {
	if st == domain.StatusRunning {
		return "continued"
	}
	return string(st)
}

// mutate runs a transition through the store, adding the notifications
// the change causes to the same transaction.
func (s *Service) mutate(ctx context.Context, number int64, fn domain.MutateFunc) (domain.Task, error) {
	return s.store.UpdateTask(ctx, number, s.notifying(fn))
}

// notifying is fn with the notifications its change causes added.
func (s *Service) notifying(fn domain.MutateFunc) domain.MutateFunc {
	return func(cur domain.Task) (domain.Mutation, error) {
		m, err := fn(cur)
		if err != nil {
			return m, err
		}
		if s.opts.Notify != nil {
			m.Notifications = append(m.Notifications, s.opts.Notify(cur, m.Task, &m)...)
		}
		return m, nil
	}
}

// isStopping reports whether Stop was called.
func (s *Service) isStopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping == nil {
		return false
	}
	select {
	case <-s.stopping:
		return true
	default:
		return false
	}
}

// afterChange tells subscribers and wakes workers for a task back in the
// queue. A task that ended may have resumed its parent in the same
// transaction (see adapters/sqlstore): subscribers hear of the parent too.
// quiet says the change enqueued no notification to send at once
// (plugin.Event.Quiet).
func (s *Service) afterChange(ctx context.Context, t domain.Task, quiet bool) {
	switch {
	case t.Status.Terminal():
		s.emit(ctx, plugin.TaskEnded, t)
		if t.ParentNumber != 0 {
			if parent, err := s.store.GetTask(ctx, t.ParentNumber); err == nil {
				s.emit(ctx, plugin.TaskChanged, parent)
				if parent.Status == domain.StatusQueued {
					s.Wake()
				}
			}
		}
	case quiet:
		s.emitQuiet(ctx, t)
		if t.Status == domain.StatusQueued {
			s.Wake()
		}
	default:
		s.emit(ctx, plugin.TaskChanged, t)
		if t.Status == domain.StatusQueued {
			s.Wake()
		}
	}
}

func (s *Service) emit(ctx context.Context, typ plugin.EventType, t domain.Task) {
	s.rt.Emit(ctx, plugin.Event{Type: typ, Task: &t})
}

// emitQuiet tells subscribers of t, changed by a change that enqueued no
// notification to send at once (plugin.Event.Quiet).
func (s *Service) emitQuiet(ctx context.Context, t domain.Task) {
	s.rt.Emit(ctx, plugin.Event{Type: plugin.TaskChanged, Task: &t, Quiet: true})
}
