package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/render"
	"github.com/taskloom/taskloom/plugin"
)

// Defaults.
const (
	DefaultInterval   = 5 * time.Second
	DefaultLease      = 30 * time.Second
	DefaultMaxBackoff = 5 * time.Minute
	// DefaultSendTimeout bounds one send to a platform: within the lease,
	// so a send that runs out its time still held its claim.
	DefaultSendTimeout = 20 * time.Second
	// DefaultGiveUpAfter is how long a notification may keep failing
	// before it becomes a dead letter (docs/security.md).
	DefaultGiveUpAfter = 24 * time.Hour
	// DefaultSenders is how many rooms a flush sends to at once.
	DefaultSenders = 8
	// roomsPerFlush is how many rooms a flush claims before it ends, so
	// that the loop looks at its schedule and its held rooms again; a
	// flush that ends so is followed by the next at once.
	roomsPerFlush = 1000
	// giveBackTimeout bounds giving rows back when a send was canceled.
	giveBackTimeout = 5 * time.Second
)

// Options configure the notification service.
type Options struct {
	Runtime  *plugin.Runtime // its store, clock, logger and platforms are used
	Interval time.Duration   // TASKLOOM_FLUSH_INTERVAL; whole seconds (cron's constant delay)
	Owner    string          // names this replica in room claims
	Lease    time.Duration   // how long a room's rows are held while sending
	// MaxBackoff caps the wait before retrying a failed delivery.
	MaxBackoff time.Duration
	// SendTimeout bounds each send to a platform, measured on the
	// runtime's clock; DefaultSendTimeout when zero.
	SendTimeout time.Duration
	// GiveUpAfter is how long a notification may keep failing, counted
	// from its creation or its last retry, before it is marked failed;
	// DefaultGiveUpAfter when zero.
	GiveUpAfter time.Duration
	// Demo labels every message as caused by the demo model.
	Demo bool
	// Style is how progress reaches a room (TASKLOOM_NOTIFY_STYLE):
	// StyleBatch (the default, also when empty) or StyleCard, each task's
	// card edited in place on platforms that can edit (Editor).
	Style string
	// StoreClock measures room claims, their renewals and retry times on
	// the store's clock, which every replica shares, rather than on
	// Runtime's (docs/security.md): each flush reads it and keeps the
	// difference. Tests that move a fake clock leave it off.
	StoreClock bool
	// Metrics, when set, counts deliveries by platform (internal/metrics
	// implements it).
	Metrics Metrics
	// Senders is how many rooms a flush sends to at once, each room by
	// one sender; DefaultSenders when zero. Platforms that publish their
	// limits (plugin.Limited) are paced across all senders.
	Senders int
	// MaxPaceWait is the longest a send waits for a platform's global
	// limit before its room is given back for later; DefaultMaxPaceWait
	// when zero.
	MaxPaceWait time.Duration
	// Shares, when set, shares the limits of each platform's bot with the
	// other replicas sending as that bot through the same store (the
	// PostgreSQL store; docs/deploy.md, "What replicas share"), as Owner; nil
	// paces this process alone.
	Shares domain.PaceShares
}

// Metrics receives the notification service's measurements. Its methods
// must be cheap and safe for concurrent use.
type Metrics interface {
	// NotificationSent counts a message a platform accepted.
	NotificationSent(platform string)
	// NotificationFailed counts a message that could not be delivered
	// (its rows stay pending and are retried, unless given up on).
	NotificationFailed(platform string)
	// NotificationsDead counts n notifications given up on: marked failed,
	// kept until someone retries them.
	NotificationsDead(platform string, n int)
}

type noMetrics struct{}

func (noMetrics) NotificationSent(string)       {}
func (noMetrics) NotificationFailed(string)     {}
func (noMetrics) NotificationsDead(string, int) {}

// Service is the notification service.
type Service struct {
	opts  Options
	rt    *plugin.Runtime
	store domain.Store
	clk   clock.Clock
	log   *slog.Logger
	sched cron.Schedule

	poke chan struct{}
	mu   sync.Mutex
	stop chan struct{}
	done chan struct{}
	// cancel ends the loop's context: a send still running at the end of
	// Stop's deadline.
	cancel context.CancelFunc
	// beating is closed when the beats of the shared pacers end.
	beating chan struct{}
	// skew is the store's clock minus Runtime's, in nanoseconds, as the
	// last flush read it (StoreClock).
	skew atomic.Int64

	pacersMu sync.Mutex
	pacers   map[string]*pacer // by platform name; nil for one without limits
	// held are the rooms the pacer put off, and the platforms whose
	// pacers were saturated, each with when it is due again on Runtime's
	// clock: an early wake flushes them, and no other room.
	held map[heldKey]time.Time
	// perFlush is how many rooms a flush claims at most (roomsPerFlush).
	perFlush int
}

// heldUntil is the earliest time a room put off by the pacer is due.
func (s *Service) heldUntil() time.Time {
	s.pacersMu.Lock()
	defer s.pacersMu.Unlock()
	var first time.Time
	for _, t := range s.held {
		if first.IsZero() || t.Before(first) {
			first = t
		}
	}
	return first
}

// holdUntil notes that room — or every room of a platform, when room is a
// platform's name a saturated pacer held — is due at t, so that the loop
// flushes it then rather than at its next tick.
func (s *Service) holdUntil(room string, platform bool, t time.Time) {
	s.pacersMu.Lock()
	defer s.pacersMu.Unlock()
	k := heldKey{name: room, platform: platform}
	if at, ok := s.held[k]; !ok || t.Before(at) {
		s.held[k] = t
	}
}

// heldKey names a room, or a platform, held by the pacer.
type heldKey struct {
	name     string
	platform bool
}

// clearHeld forgets the rooms noted by holdUntil: a flush is about to
// claim every room due.
func (s *Service) clearHeld() {
	s.pacersMu.Lock()
	defer s.pacersMu.Unlock()
	clear(s.held)
}

// takeHeld forgets and returns the rooms and platforms noted by holdUntil
// that are due at now.
func (s *Service) takeHeld(now time.Time) (rooms, platforms []string) {
	s.pacersMu.Lock()
	defer s.pacersMu.Unlock()
	for k, t := range s.held {
		if t.After(now) {
			continue
		}
		delete(s.held, k)
		if k.platform {
			platforms = append(platforms, k.name)
		} else {
			rooms = append(rooms, k.name)
		}
	}
	return rooms, platforms
}

var _ plugin.Service = (*Service)(nil)

// New returns the service; Start runs its schedule.
func New(opts Options) *Service {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Lease <= 0 {
		opts.Lease = DefaultLease
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.SendTimeout <= 0 {
		opts.SendTimeout = DefaultSendTimeout
	}
	if opts.GiveUpAfter <= 0 {
		opts.GiveUpAfter = DefaultGiveUpAfter
	}
	if opts.Owner == "" {
		opts.Owner = "notify"
	}
	if opts.Metrics == nil {
		opts.Metrics = noMetrics{}
	}
	if opts.Senders <= 0 {
		opts.Senders = DefaultSenders
	}
	if opts.MaxPaceWait <= 0 {
		opts.MaxPaceWait = DefaultMaxPaceWait
	}
	rt := opts.Runtime
	s := &Service{
		opts: opts, rt: rt, store: rt.Store(), clk: rt.Clock(),
		log:    rt.Logger().With("service", "notifications"),
		sched:  cron.Every(opts.Interval),
		poke:   make(chan struct{}, 1),
		pacers: map[string]*pacer{},
		held:   map[heldKey]time.Time{},

		perFlush: roomsPerFlush,
	}
	// Terminal changes and task posts go out at once.
	rt.Subscribe(plugin.TaskEnded, func(context.Context, plugin.Event) { s.Poke() })
	// So do replies whose direct send failed.
	rt.Subscribe(plugin.ReplyQueued, func(context.Context, plugin.Event) { s.Poke() })
	rt.Subscribe(plugin.TaskChanged, func(_ context.Context, ev plugin.Event) {
		if !ev.Quiet {
			s.Poke()
		}
	})
	return s
}

// Name implements plugin.Service.
func (s *Service) Name() string { return "notifications" }

// Poke asks for an immediate send of urgent rows (terminal, posts).
func (s *Service) Poke() {
	select {
	case s.poke <- struct{}{}:
	default:
	}
}

// Start runs the flush schedule until Stop.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop != nil {
		return errors.New("notification service already started")
	}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	loopCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	s.beating = make(chan struct{})
	go s.loop(loopCtx)
	s.rt.SetReplyPacer(s) // direct replies keep to the pace too
	if s.opts.Shares != nil {
		go s.beats(loopCtx, s.stop, s.beating)
	} else {
		close(s.beating)
	}
	s.log.Info("notification service started", "interval", s.opts.Interval)
	return nil
}

// Stop ends the schedule, then sends what people are waiting for — ended
// tasks, posts, questions and approvals — within ctx. Progress batches
// still pending stay in the outbox for the next start or another replica,
// so a shutdown with a backlog (a thousand rooms paced by a platform's
// limits) does not run out its deadline sending them. When ctx ends
// first, a send still running is canceled, its rows given back due at
// once, and Stop returns.
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	stop, done, cancel, beating := s.stop, s.done, s.cancel, s.beating
	if stop != nil {
		select {
		case <-stop: // already stopped
		default:
			close(stop)
		}
	}
	s.mu.Unlock()
	if stop == nil {
		return nil
	}
	select {
	case <-done:
	case <-ctx.Done():
		cancel()
		<-done
		return fmt.Errorf("notification service: a send was canceled at shutdown: %w", ctx.Err())
	}
	cancel()
	<-beating
	_, err := s.flush(ctx, urgent, nil)
	if err != nil {
		err = fmt.Errorf("notification service: last flush: %w", err)
	}
	// The others take this replica's share of the pace at their next
	// beat, not once its beat has expired.
	for _, p := range s.sharedPacers() {
		if lerr := p.sh.leave(ctx); lerr != nil {
			s.log.Warn("cannot give this replica's share of the pace back; it expires in seconds", "platform", p.sh.platform, "err", lerr)
		}
	}
	return err
}

// beats writes the beats of the shared pacers in the middle of every
// epoch until stop is closed, so that a replica with nothing to send
// keeps its place among the members, and its share follows the others'
// demand.
func (s *Service) beats(ctx context.Context, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		// The middle of the next epoch: in the part beats are written.
		_, in := epochOf(s.now())
		wait := beatEvery/2 - in
		if wait <= 0 {
			wait += beatEvery
		}
		t := s.clk.NewTimer(wait)
		select {
		case <-stop:
			t.Stop()
			return
		case <-t.C():
		}
		for _, p := range s.sharedPacers() {
			s.beatIfDue(ctx, p)
		}
	}
}

func (s *Service) loop(ctx context.Context) {
	defer close(s.done)
	next := s.sched.Next(s.clk.Now())
	for {
		at := next
		if held := s.heldUntil(); !held.IsZero() && held.Before(at) {
			at = held // a room the pacer put off is due before the next flush
		}
		t := s.clk.NewTimer(at.Sub(s.clk.Now()))
		select {
		case <-s.stop:
			t.Stop()
			return
		case <-s.poke:
			t.Stop()
			if _, err := s.flush(ctx, urgent, s.stop); err != nil {
				s.log.Error("sending urgent notifications failed", "err", err)
			}
		case <-t.C():
			if now := s.clk.Now(); now.Before(next) {
				// Woken early for rooms the pacer put off: they go now, and
				// every other room waits for its tick, so that no room gets
				// two batches inside one interval.
				if err := s.flushHeld(ctx, now); err != nil {
					s.log.Error("flushing held-back notifications failed", "err", err)
				}
				continue
			}
			s.clearHeld()
			_, more, err := s.flushSome(ctx, scope{}, s.stop)
			if err != nil {
				s.log.Error("flushing notifications failed", "err", err)
			}
			switch now := s.clk.Now(); {
			case more:
				// The flush claimed as many rooms as one may, and more may
				// be due: they go on at once, not a whole interval after
				// the others (a thousand rooms waited 5 s more for their
				// first batch).
				next = now
			case !now.Before(next):
				next = s.sched.Next(now)
			}
		}
	}
}

// Flush sends every room with due notifications one message each, and
// reports how many rooms got one.
func (s *Service) Flush(ctx context.Context) (int, error) { return s.flush(ctx, nil, nil) }

// FlushUrgent does the same for rooms with a due terminal notification or
// task post, folding in whatever else those rooms have pending.
func (s *Service) FlushUrgent(ctx context.Context) (int, error) {
	return s.flush(ctx, urgent, nil)
}

// urgent are the categories that go out at once.
var urgent = []string{domain.NotifyTerminal, domain.NotifyMessage, domain.NotifyReply}

// now is the time claims are measured by: Runtime's clock, moved onto
// the store's when StoreClock is set.
func (s *Service) now() time.Time {
	return s.clk.Now().Add(time.Duration(s.skew.Load()))
}

// flush claims rooms with due rows of categories (any when empty) and
// sends them, Senders rooms at a time, until none is due, ctx ends or
// halt is closed (the service is stopping: rooms not claimed yet are left
// to Stop's last flush, or to the next start or another replica). A room
// is claimed by one sender at a time; when only rooms being sent to have
// rows left, the flush waits for a sender to finish and claims again, so
// a room's backlog goes out message after message within one flush.
func (s *Service) flush(ctx context.Context, categories []string, halt <-chan struct{}) (int, error) {
	return s.flushScope(ctx, scope{categories: categories}, halt)
}

// scope narrows what a flush claims: rows of categories (any when
// empty), of room only (any when empty), and no room of the platforms of
// skip (besides those saturated).
type scope struct {
	categories []string
	room       string
	skip       []string
}

// flushHeld is an early wake's flush: the rooms the pacer put off that
// are due at now, each claimed alone, and the rooms of the platforms
// whose pacers were saturated (skipping every other platform's).
func (s *Service) flushHeld(ctx context.Context, now time.Time) error {
	rooms, platforms := s.takeHeld(now)
	var errs []error
	if len(platforms) > 0 {
		var skip []string
		s.pacersMu.Lock()
		for name := range s.pacers {
			if !slices.Contains(platforms, name) {
				skip = append(skip, name)
			}
		}
		s.pacersMu.Unlock()
		if _, err := s.flushScope(ctx, scope{skip: skip}, s.stop); err != nil {
			errs = append(errs, err)
		}
	}
	for _, r := range rooms {
		if _, err := s.flushScope(ctx, scope{room: r}, s.stop); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// flushScope is flush, narrowed to sc.
func (s *Service) flushScope(ctx context.Context, sc scope, halt <-chan struct{}) (int, error) {
	n, _, err := s.flushSome(ctx, sc, halt)
	return n, err
}

// flushSome is flushScope that also says whether it ended because it had
// claimed perFlush rooms, with more perhaps due, rather than because none
// was.
func (s *Service) flushSome(ctx context.Context, sc scope, halt <-chan struct{}) (int, bool, error) {
	if s.opts.StoreClock {
		t, err := s.store.Now(ctx)
		if err != nil {
			return 0, false, fmt.Errorf("read the store's clock: %w", err)
		}
		s.skew.Store(int64(t.Sub(s.clk.Now())))
	}
	ctx = withHalt(ctx, halt)
	var (
		sent     atomic.Int64
		inflight atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		errs     []error
		slots    = make(chan struct{}, s.opts.Senders)
		finished = make(chan struct{}, s.opts.Senders)
	)
	// report waits for the senders and returns what they did, with
	// whether the flush claimed all it may and cause, why it ended early
	// (nil when it did not).
	report := func(more bool, cause error) (int, bool, error) {
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return int(sent.Load()), more, errors.Join(append([]error{cause}, errs...)...)
	}
	// Only claims that took a room count: a claim that found none while
	// senders were busy waits for one of them, and is not a room claimed.
	for claimed := 0; claimed < s.perFlush; {
		select {
		case slots <- struct{}{}:
		case <-halt:
			return report(false, nil)
		case <-ctx.Done():
			return report(false, ctx.Err())
		}
		select {
		case <-halt:
			<-slots
			return report(false, nil)
		default:
		}
		busy := inflight.Load() > 0 // read before the claim: see below
		room, rows, err := s.store.ClaimRoom(ctx, domain.RoomClaim{
			Owner: s.opts.Owner, Now: s.now(), Lease: s.opts.Lease, Categories: sc.categories, Room: sc.room,
			SkipPlatforms: append(s.saturated(), sc.skip...),
		})
		if err != nil {
			<-slots
			return report(false, fmt.Errorf("claim room: %w", err))
		}
		if room == "" {
			<-slots
			if !busy {
				return report(false, nil) // nothing due, and no room held by this flush
			}
			// The rooms left may be the ones being sent to: claim again
			// once a sender is done. (A sender that finished before the
			// claim left a signal too, and costs one more claim.)
			select {
			case <-finished:
			case <-halt:
				return report(false, nil)
			case <-ctx.Done():
				return report(false, ctx.Err())
			}
			continue
		}
		claimed++
		inflight.Add(1)
		wg.Go(func() {
			defer func() {
				<-slots
				inflight.Add(-1)
				select {
				case finished <- struct{}{}:
				default:
				}
			}()
			ok, err := s.deliver(ctx, room, rows)
			if ok {
				sent.Add(1)
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	return report(true, nil)
}

// payload shapes.
type (
	progressPayload struct {
		Progress  int `json:"progress"`
		Iteration int `json:"iteration"`
	}
	actionPayload struct {
		Step domain.Step `json:"step"`
	}
	errorPayload struct {
		Error string `json:"error"`
	}
	terminalPayload struct {
		Status domain.Status `json:"status"`
	}
	messagePayload struct {
		Kind     string `json:"kind"` // post, question, approval
		Text     string `json:"text"`
		TaskName string `json:"task_name"`
		// Call is an approval request's id (domain.ApprovalID).
		Call string `json:"call,omitempty"`
	}
)

// compose renders one message for a room from its rows: task posts and
// questions first, then ended tasks, then one progress block per task. It
// returns the progress each task is shown at, to remember as last sent.
func (s *Service) compose(ctx context.Context, room string, rows []domain.Notification) (plugin.Outgoing, []domain.RoomProgress, error) {
	if m, ok := replyMessage(rows); ok {
		return m, nil, nil
	}
	f := render.ForPlatform(domain.RoomPlatform(room))
	var order []int64
	byTask := map[int64][]domain.Notification{}
	for _, r := range rows {
		if _, seen := byTask[r.TaskNumber]; !seen {
			order = append(order, r.TaskNumber)
		}
		byTask[r.TaskNumber] = append(byTask[r.TaskNumber], r)
	}
	sort.Slice(order, func(i, j int) bool { return order[i] < order[j] })
	last, err := s.store.LastSent(ctx, room, order)
	if err != nil {
		return plugin.Outgoing{}, nil, fmt.Errorf("last sent to %s: %w", room, err)
	}
	var (
		posts, ended []string
		asks         []string // requests to approve a call
		endedTasks   []int64
		approvals    []plugin.ApprovalRef
		updates      []render.Update
		shown        []domain.RoomProgress
		tasks        []int64
	)
	var why []reasoning // a react task's latest thought and observation, parallel to updates
	for _, n := range order {
		if n == 0 {
			// A message of the service itself (tasks on hold), about no
			// one task.
			for _, r := range byTask[n] {
				var p messagePayload
				if r.Category == domain.NotifyMessage && json.Unmarshal(r.Payload, &p) == nil && p.Text != "" {
					posts = append(posts, render.Escape(f, p.Text))
				}
			}
			continue
		}
		t, err := s.store.GetTask(ctx, n)
		if errors.Is(err, domain.ErrNotFound) {
			continue
		}
		if err != nil {
			return plugin.Outgoing{}, nil, fmt.Errorf("task #%d: %w", n, err)
		}
		u := render.Update{Task: t, From: last[n]}
		var said reasoning
		terminal, changed := false, false
		for _, r := range byTask[n] {
			switch r.Category {
			case domain.NotifyMessage:
				var p messagePayload
				if json.Unmarshal(r.Payload, &p) == nil && p.Text != "" {
					if p.Kind == "approval" {
						asks = append(asks, postText(f, t, p))
					} else {
						posts = append(posts, postText(f, t, p))
					}
					if p.Kind == "approval" && p.Call != "" && p.Call == domain.ApprovalID(t) {
						// Still pending: buttons bound to this call. A
						// request decided meanwhile is shown without.
						approvals = append(approvals, plugin.ApprovalRef{Task: n, Call: p.Call})
					}
				}
			case domain.NotifyTerminal:
				terminal = true
			case domain.NotifyProgress:
				changed = true
			case domain.NotifyAction:
				var p actionPayload
				if json.Unmarshal(r.Payload, &p) == nil {
					if said.add(p.Step) {
						changed = true // a thought or an observation, not an action
						continue
					}
					step := p.Step
					u.LastAction, changed = &step, true
				}
			case domain.NotifyError:
				var p errorPayload
				if json.Unmarshal(r.Payload, &p) == nil && p.Error != "" {
					u.Errors, changed = append(u.Errors, p.Error), true
				}
			}
		}
		switch {
		case terminal && t.Status.Terminal():
			// The count and the last step, without its result: what
			// the message shows, however many steps the task ran.
			page, err := s.store.PageSteps(ctx, n, domain.StepQuery{Limit: 1})
			if err != nil {
				return plugin.Outgoing{}, nil, fmt.Errorf("steps of task #%d: %w", n, err)
			}
			var lastStep *domain.Step
			if len(page.Steps) > 0 {
				lastStep = &page.Steps[len(page.Steps)-1]
			}
			ended = append(ended, render.Terminal(f, t, page.Total, lastStep))
			endedTasks = append(endedTasks, n)
		case changed && !t.Status.Terminal():
			if u.LastAction == nil && len(u.Errors) == 0 && u.From == t.Progress && said.empty() {
				continue // nothing new to show
			}
			updates = append(updates, u)
			why = append(why, said)
			tasks = append(tasks, n)
		default:
			continue
		}
		shown = append(shown, domain.RoomProgress{Room: room, TaskNumber: n, Progress: t.Progress, From: last[n]})
	}
	parts := append(posts, ended...)
	if len(updates) > 0 {
		parts = append(parts, progressWithReasoning(f, updates, why))
	}
	// The requests to approve go last, beside their buttons: the platforms
	// keep the end of a long message whole in its last part, which carries
	// them (render.SplitKeepingEnd).
	parts = append(parts, asks...)
	if len(parts) == 0 {
		return plugin.Outgoing{}, shown, nil
	}
	text := strings.Join(parts, "\n\n")
	if s.opts.Demo {
		text += demoNote
	}
	return plugin.Outgoing{Text: text, Tasks: tasks, Ended: endedTasks, Approvals: approvals}, shown, nil
}

func postText(f render.Flavor, t domain.Task, p messagePayload) string {
	title := fmt.Sprintf("Task #%d \"%s\"", t.Number, render.Escape(f, t.Name))
	if p.Kind == "approval" {
		return fmt.Sprintf("🔐 Task #%d wants to run %s\n   Say `approve #%d` to let it, or `deny #%d <reason>`.",
			t.Number, render.Call(f, p.Text, ""), t.Number, t.Number)
	}
	if p.Kind == "question" {
		return fmt.Sprintf("❓ %s asks:\n   %s\n   Reply to this message, or say `answer #%d <your answer>`.",
			title, indent(render.Escape(f, p.Text)), t.Number)
	}
	return fmt.Sprintf("💬 %s:\n   %s", title, indent(render.Escape(f, p.Text)))
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n   ") }

// Outbox derives the outbox rows a task change causes; the task service
// writes them in the change's transaction (tasks.Options.Notify). A task
// without a room causes none.
func (s *Service) Outbox(before, after domain.Task, m *domain.Mutation) []domain.Notification {
	if after.RoomID == "" {
		return nil
	}
	now := m.Event.Time
	mk := func(category string, payload any) domain.Notification {
		raw, err := json.Marshal(payload)
		if err != nil {
			raw = []byte(`{}`)
		}
		return domain.Notification{Room: after.RoomID, TaskNumber: after.Number, Category: category,
			Payload: raw, CreatedAt: now, NextAttemptAt: now}
	}
	if after.Status.Terminal() && !before.Status.Terminal() {
		out := []domain.Notification{mk(domain.NotifyTerminal, terminalPayload{Status: after.Status})}
		if s.opts.Style == StyleCard {
			// The task's card gets its final state as well.
			out = append(out, mk(domain.NotifyProgress, progressPayload{Progress: after.Progress, Iteration: after.Iteration}))
		}
		return out
	}
	if m.Event.Type != domain.EventIterated {
		return nil
	}
	out := []domain.Notification{mk(domain.NotifyProgress, progressPayload{Progress: after.Progress, Iteration: after.Iteration})}
	if m.Step != nil {
		// A tools reply of several calls has a step per call: the last is
		// the action shown (the latest wins), and each that failed is an
		// error of its own.
		steps := append([]domain.Step{*m.Step}, m.Steps...)
		step := steps[len(steps)-1]
		step.Result = "" // the message shows the action, not its output
		out = append(out, mk(domain.NotifyAction, actionPayload{Step: step}))
		for _, st := range steps {
			if !st.Success && st.Error != "" {
				out = append(out, mk(domain.NotifyError, errorPayload{Error: st.Error}))
			}
		}
	}
	return out
}
