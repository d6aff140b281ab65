package plugin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/taskloom/taskloom/domain"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/taskloom/taskloom/internal/clock"
)

// DefaultProviderBudget bounds how long composing state may take.
const DefaultProviderBudget = 3 * time.Second

// Options configure a Runtime.
type Options struct {
	// Store keeps the memories of the message pipeline. Required by
	// HandleMessage.
	Store     domain.Store
	Character Character
	Logger    *slog.Logger
	Clock     clock.Clock
	// ProviderBudget bounds ComposeState; a provider still running then is
	// cut off and logged, and the others still count.
	ProviderBudget time.Duration
	// FallbackAction answers addressed messages that no command matched
	// when no real model is registered (the demo model does not chat).
	// Default "help".
	FallbackAction string
	// StoreOutageWait is how long a message received while the store
	// cannot be reached waits for it before it is answered that nothing
	// was done (docs/chat.md). Default DefaultStoreOutageWait.
	StoreOutageWait time.Duration
}

// Runtime hosts plugins. Register plugins, then Start; HandleMessage,
// ComposeState, RunAction and UseModel are safe for concurrent use once
// started.
type Runtime struct {
	opts Options
	log  *slog.Logger
	clk  clock.Clock

	mu         sync.RWMutex
	plugins    []*Plugin // as registered
	actions    []Action
	actionByID map[string]Action
	providers  []Provider
	evaluators []Evaluator
	services   []Service
	models     map[ModelType]Model
	routes     []MountedRoute
	handlers   map[EventType][]EventHandler
	platforms  map[string]Platform
	replyPacer ReplyPacer
	running    []Service // started services, to stop in reverse
	// sourced names the actions each source gave SetActions.
	sourced map[string][]string
	// unsaved are the messages this process could not persist yet (they
	// wait for the store) or gave up on; see outage.go.
	unsavedMu sync.Mutex
	unsaved   map[string]unsavedMessage
}

// MountedRoute is a plugin route with its full path.
type MountedRoute struct {
	Plugin  string
	Pattern string // for http.ServeMux, e.g. "GET /plugins/orchestrator/stats"
	Route   Route
}

// New returns a runtime with no plugins.
func New(opts Options) *Runtime {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.ProviderBudget <= 0 {
		opts.ProviderBudget = DefaultProviderBudget
	}
	if opts.FallbackAction == "" {
		opts.FallbackAction = "help"
	}
	if opts.StoreOutageWait <= 0 {
		opts.StoreOutageWait = DefaultStoreOutageWait
	}
	if opts.Character.Name == "" {
		opts.Character = DefaultCharacter()
	}
	return &Runtime{
		opts:       opts,
		log:        opts.Logger,
		clk:        opts.Clock,
		actionByID: map[string]Action{},
		models:     map[ModelType]Model{},
		handlers:   map[EventType][]EventHandler{},
		platforms:  map[string]Platform{},
		unsaved:    map[string]unsavedMessage{},
	}
}

// Character is the bot's persona.
func (rt *Runtime) Character() Character { return rt.opts.Character }

// Store is the runtime's store.
func (rt *Runtime) Store() domain.Store { return rt.opts.Store }

// Clock is the runtime's clock.
func (rt *Runtime) Clock() clock.Clock { return rt.clk }

// Logger is the runtime's logger.
func (rt *Runtime) Logger() *slog.Logger { return rt.log }

// Register adds plugins. They start, in dependency order, on Start.
func (rt *Runtime) Register(plugins ...*Plugin) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, p := range plugins {
		if p == nil || strings.TrimSpace(p.Name) == "" {
			return errors.New("register plugin: a plugin has no name")
		}
		for _, q := range rt.plugins {
			if q.Name == p.Name {
				return fmt.Errorf("register plugin %q: already registered", p.Name)
			}
		}
		rt.plugins = append(rt.plugins, p)
	}
	return nil
}

// StartOrder returns the registered plugins in the order Start starts them:
// every plugin after its dependencies, otherwise in registration order. A
// missing dependency or a cycle is an error naming the plugins.
func (rt *Runtime) StartOrder() ([]*Plugin, error) {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	return startOrder(rt.plugins)
}

func startOrder(plugins []*Plugin) ([]*Plugin, error) {
	byName := map[string]*Plugin{}
	for _, p := range plugins {
		byName[p.Name] = p
	}
	for _, p := range plugins {
		for _, d := range p.Dependencies {
			if _, ok := byName[d]; !ok {
				return nil, fmt.Errorf("plugin %q depends on %q, which is not registered", p.Name, d)
			}
		}
	}
	// Kahn's algorithm, taking the earliest registered plugin that is
	// ready, so unrelated plugins keep their registration order.
	done := map[string]bool{}
	var order []*Plugin
	for len(order) < len(plugins) {
		progressed := false
		for _, p := range plugins {
			if done[p.Name] || !allDone(p.Dependencies, done) {
				continue
			}
			done[p.Name] = true
			order = append(order, p)
			progressed = true
			break
		}
		if !progressed {
			return nil, fmt.Errorf("plugin dependency cycle: %s", strings.Join(findCycle(plugins, byName, done), " → "))
		}
	}
	return order, nil
}

func allDone(names []string, done map[string]bool) bool {
	for _, n := range names {
		if !done[n] {
			return false
		}
	}
	return true
}

// findCycle walks dependencies from the first plugin not started until a
// plugin repeats, and returns the loop.
func findCycle(plugins []*Plugin, byName map[string]*Plugin, done map[string]bool) []string {
	var path []string
	for _, p := range plugins {
		if !done[p.Name] {
			path = []string{p.Name}
			break
		}
	}
	for {
		cur := byName[path[len(path)-1]]
		for _, d := range cur.Dependencies {
			if done[d] {
				continue
			}
			if i := slices.Index(path, d); i >= 0 {
				return append(path[i:], d)
			}
			path = append(path, d)
			break
		}
	}
}

// Start initialises the plugins in dependency order, registers their
// components and starts their services. If anything fails, the services
// already started are stopped and the error names the plugin.
func (rt *Runtime) Start(ctx context.Context) error {
	order, err := rt.StartOrder()
	if err != nil {
		return fmt.Errorf("start runtime: %w", err)
	}
	for _, p := range order {
		if p.Init != nil {
			if err := p.Init(ctx, rt); err != nil {
				rt.stopServices(ctx)
				return fmt.Errorf("start plugin %q: init: %w", p.Name, err)
			}
		}
		if err := rt.addComponents(p); err != nil {
			rt.stopServices(ctx)
			return fmt.Errorf("start plugin %q: %w", p.Name, err)
		}
		for _, s := range p.Services {
			if err := s.Start(ctx); err != nil {
				rt.stopServices(ctx)
				return fmt.Errorf("start plugin %q: service %s: %w", p.Name, s.Name(), err)
			}
			rt.mu.Lock()
			rt.running = append(rt.running, s)
			rt.mu.Unlock()
		}
		rt.log.Debug("plugin started", "plugin", p.Name)
	}
	return nil
}

// AddModel registers a model for a type, replacing any registered before.
func (rt *Runtime) AddModel(t ModelType, m Model) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.models[t] = m
}

func (rt *Runtime) addComponents(p *Plugin) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, a := range p.Actions {
		name := a.Info().Name
		if name == "" {
			return errors.New("an action has no name")
		}
		if _, dup := rt.actionByID[name]; dup {
			return fmt.Errorf("action %q is already registered", name)
		}
		rt.actionByID[name] = a
		rt.actions = append(rt.actions, a)
	}
	rt.providers = append(rt.providers, p.Providers...)
	rt.evaluators = append(rt.evaluators, p.Evaluators...)
	rt.services = append(rt.services, p.Services...)
	for t, m := range p.Models {
		rt.models[t] = m
	}
	for _, r := range p.Routes {
		pattern := "/plugins/" + p.Name + "/" + strings.TrimPrefix(r.Path, "/")
		if r.Method != "" {
			pattern = r.Method + " " + pattern
		}
		rt.routes = append(rt.routes, MountedRoute{Plugin: p.Name, Pattern: pattern, Route: r})
	}
	for t, hs := range p.Events {
		rt.handlers[t] = append(rt.handlers[t], hs...)
	}
	for _, pl := range p.Platforms {
		if _, dup := rt.platforms[pl.Name()]; dup {
			return fmt.Errorf("platform %q is already registered", pl.Name())
		}
		rt.platforms[pl.Name()] = pl
	}
	return nil
}

// Platform returns the platform that serves a room ("discord:123" →
// the "discord" platform).
func (rt *Runtime) Platform(room string) (Platform, bool) {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	p, ok := rt.platforms[domain.RoomPlatform(room)]
	return p, ok
}

// SetReplyPacer makes p pace the direct replies to people with the rest
// of what is sent to a room (the notification service, which keeps the
// platforms' limits); nil sends them unpaced.
func (rt *Runtime) SetReplyPacer(p ReplyPacer) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.replyPacer = p
}

// ReplyTurn books a direct reply's post to room with the reply pacer (see
// ReplyPacer): nil when it may go now, or when there is no pacer, and a
// *RateLimitedError wrapping ErrPaced when the room's windows are full —
// the reply is then left to the outbox, due when they have room.
func (rt *Runtime) ReplyTurn(ctx context.Context, room string) error {
	rt.mu.RLock()
	p := rt.replyPacer
	rt.mu.RUnlock()
	if p == nil {
		return nil
	}
	return p.ReplyTurn(ctx, room)
}

// replyLimited tells the reply pacer, if any, that the platform answered
// a reply to room with sendErr, a 429 when it is a *RateLimitedError
// the pacer did not give, and returns when the reply is due again
// (replyDue).
func (rt *Runtime) replyLimited(room string, sendErr error) time.Time {
	due := replyDue(rt.clk.Now(), sendErr)
	var rl *RateLimitedError
	if !errors.As(sendErr, &rl) || !rl.Until.IsZero() {
		return due
	}
	rt.mu.RLock()
	p := rt.replyPacer
	rt.mu.RUnlock()
	if p != nil {
		p.ReplyLimited(room, due, rl.Global)
	}
	return due
}

// Stop stops every started service, last started first.
func (rt *Runtime) Stop(ctx context.Context) error {
	return rt.stopServices(ctx)
}

func (rt *Runtime) stopServices(ctx context.Context) error {
	rt.mu.Lock()
	running := rt.running
	rt.running = nil
	rt.mu.Unlock()
	var errs []error
	for i := len(running) - 1; i >= 0; i-- {
		if err := running[i].Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop service %s: %w", running[i].Name(), err))
		}
	}
	return errors.Join(errs...)
}

// SetActions makes acts the actions of source, replacing those it set
// before; none removes them. It is for actions that come and go while the
// runtime runs, such as an MCP server's tools (source "mcp:<server>"),
// and is safe for concurrent use. A name that a plugin or another source
// registered, an action with no name or a name given twice refuses the
// whole set, and source keeps the actions it had. A call already running
// is not affected: the runtime finds an action by name when a call starts.
func (rt *Runtime) SetActions(source string, acts []Action) error {
	if strings.TrimSpace(source) == "" {
		return errors.New("set actions: the source has no name")
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	old := rt.sourced[source]
	names := make([]string, 0, len(acts))
	for _, a := range acts {
		name := a.Info().Name
		if name == "" {
			return fmt.Errorf("set actions of %s: an action has no name", source)
		}
		if slices.Contains(names, name) {
			return fmt.Errorf("set actions of %s: action %q is given twice", source, name)
		}
		if _, taken := rt.actionByID[name]; taken && !slices.Contains(old, name) {
			return fmt.Errorf("set actions of %s: action %q is already registered", source, name)
		}
		names = append(names, name)
	}
	// Actions hands out copies, so the list may be changed in place.
	rt.actions = slices.DeleteFunc(rt.actions, func(a Action) bool { return slices.Contains(old, a.Info().Name) })
	for _, name := range old {
		delete(rt.actionByID, name)
	}
	for i, a := range acts {
		rt.actionByID[names[i]] = a
		rt.actions = append(rt.actions, a)
	}
	if rt.sourced == nil {
		rt.sourced = map[string][]string{}
	}
	if len(names) == 0 {
		delete(rt.sourced, source)
	} else {
		rt.sourced[source] = names
	}
	return nil
}

// Actions lists the registered actions in registration order.
func (rt *Runtime) Actions() []Action {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	return slices.Clone(rt.actions)
}

// Action finds an action by name.
func (rt *Runtime) Action(name string) (Action, bool) {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	a, ok := rt.actionByID[name]
	return a, ok
}

// Routes lists the plugins' HTTP routes with their mount patterns.
func (rt *Runtime) Routes() []MountedRoute {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	return slices.Clone(rt.routes)
}

// Model returns the model registered for t.
func (rt *Runtime) Model(t ModelType) (Model, bool) {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	m, ok := rt.models[t]
	return m, ok
}

// ErrNoModel is returned by UseModel when no plugin registered a model of
// the type asked for.
var ErrNoModel = errors.New("no model registered")

// UseModel calls the model registered for t.
func (rt *Runtime) UseModel(ctx context.Context, t ModelType, req ModelRequest) (ModelResponse, error) {
	m, ok := rt.Model(t)
	if !ok {
		return ModelResponse{}, fmt.Errorf("use model %s: %w", t, ErrNoModel)
	}
	start := rt.clk.Now()
	resp, err := m.Generate(ctx, req)
	if err != nil {
		return resp, fmt.Errorf("use model %s: %w", t, err)
	}
	rt.log.Debug("model call", "type", t, "model", resp.Model, "demo", IsDemo(m),
		"prompt_tokens", resp.Usage.PromptTokens, "completion_tokens", resp.Usage.CompletionTokens,
		"elapsed", rt.clk.Now().Sub(start))
	return resp, nil
}

// Subscribe adds a handler for one event type.
func (rt *Runtime) Subscribe(t EventType, h EventHandler) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.handlers[t] = append(rt.handlers[t], h)
}

// Emit tells every subscriber of ev.Type, in subscription order. A handler
// that panics is logged and the rest still run.
func (rt *Runtime) Emit(ctx context.Context, ev Event) {
	if ev.Time.IsZero() {
		ev.Time = rt.clk.Now()
	}
	rt.mu.RLock()
	hs := slices.Clone(rt.handlers[ev.Type])
	rt.mu.RUnlock()
	for _, h := range hs {
		func() {
			defer func() {
				if r := recover(); r != nil {
					rt.log.Error("event handler panicked", "event", ev.Type, "panic", r, "stack", string(debug.Stack()))
				}
			}()
			h(ctx, ev)
		}()
	}
}

// RunAction runs a registered action: validation first, then the handler,
// with ACTION_STARTED and ACTION_COMPLETED around it. A handler that panics
// becomes an error; the runtime keeps running.
func (rt *Runtime) RunAction(ctx context.Context, name string, call *Call) (res Result, err error) {
	a, ok := rt.Action(name)
	if !ok {
		return Result{}, fmt.Errorf("run action %q: %w", name, ErrUnknownAction)
	}
	if call == nil {
		call = &Call{}
	}
	call.Runtime = rt
	if v, ok := a.(ActionValidator); ok {
		if err := v.Validate(ctx, call); err != nil {
			return Result{}, &ActionError{Action: name, Err: err, Refused: true}
		}
	}
	rt.Emit(ctx, Event{Type: ActionStarted, Action: name, Message: call.Message, Task: call.Task})
	defer func() {
		if r := recover(); r != nil {
			rt.log.Error("action panicked", "action", name, "panic", r, "stack", string(debug.Stack()))
			res, err = Result{}, &ActionError{Action: name, Err: fmt.Errorf("panic: %v", r)}
		}
		ev := Event{Type: ActionCompleted, Action: name, Message: call.Message, Task: call.Task, Result: &res, Err: err}
		rt.Emit(ctx, ev)
	}()
	res, err = a.Handle(ctx, call)
	if err != nil {
		return res, &ActionError{Action: name, Err: err}
	}
	return res, nil
}

// ErrUnknownAction is returned for an action name nobody registered.
var ErrUnknownAction = errors.New("no such action")

// ActionError is an action that failed or was refused.
type ActionError struct {
	Action  string
	Err     error
	Refused bool // Validate said no; Err is a sentence for the user
}

func (e *ActionError) Error() string {
	if e.Refused {
		return fmt.Sprintf("action %s refused: %v", e.Action, e.Err)
	}
	return fmt.Sprintf("action %s: %v", e.Action, e.Err)
}

func (e *ActionError) Unwrap() error { return e.Err }

func newRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
