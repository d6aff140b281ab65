package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/plugin"
)

// Platform is the platform name: the prefix of Slack rooms and
// plugin.Message.Platform.
const Platform = "slack"

// Timings.
const (
	// AckWindow is how long a slash command's answer is waited for before
	// Slack is acknowledged without it; Slack gives up after three seconds.
	AckWindow = 2500 * time.Millisecond
	// EventStoreWait is how long an event's message may take to be
	// stored before the event is left unacknowledged, for Slack to
	// deliver again; Slack gives up after three seconds.
	EventStoreWait = 2 * time.Second
	// userLookupWait bounds asking Slack who a message's author is before
	// the message is stored; it is asked again after.
	userLookupWait = 500 * time.Millisecond
	// lastRetry is the number of Slack's last retry of an event it was
	// not acknowledged: it retries three times.
	lastRetry = 3
	// AdminTTL is how long whether a user is a workspace admin is trusted.
	AdminTTL = 10 * time.Minute
	// maxReplyWait caps how long a reply waits out a rate limit.
	maxReplyWait = time.Minute
	// replyAttempts is how often a reply is tried when rate limited.
	replyAttempts = 3
	// HTTPTimeout bounds every Web API call, so that a Slack that never
	// answers cannot hold a notification's claim or a reply forever.
	HTTPTimeout = 30 * time.Second
)

// Options configure the adapter.
type Options struct {
	BotToken      string // SLACK_BOT_TOKEN, xoxb-
	AppToken      string // SLACK_APP_TOKEN, xapp- with connections:write: Socket Mode
	SigningSecret string // SLACK_SIGNING_SECRET: the HTTP Events API
	// APIURL is the Web API base (SLACK_API_URL), "https://slack.com/api/"
	// when empty.
	APIURL  string
	Runtime *plugin.Runtime
	Logger  *slog.Logger // the runtime's when nil
	Clock   clock.Clock  // the runtime's when nil
	// FollowStore, when set, is how often the Home tabs look at the
	// store's event stream for the changes other replicas make to tasks
	// (the changes this one makes refresh them at once). Zero follows
	// this replica's changes only: enough for one replica.
	FollowStore time.Duration
}

// Adapter is the Slack platform and the service that listens to Slack.
type Adapter struct {
	opts Options
	api  *slackapi.Client
	rt   *plugin.Runtime
	log  *slog.Logger
	clk  clock.Clock

	// base is the context incoming messages are handled in; Stop cancels
	// it once they have drained (or its own context ends).
	base   context.Context
	cancel context.CancelFunc
	work   tracker
	// bg counts work that waits on the clock (a Home tab's debounce),
	// which Drain does not wait for and Stop cancels.
	bg sync.WaitGroup

	home      homeTabs
	assistant assistantThreads

	mu      sync.Mutex
	self    identity
	started bool
	stopped bool // Stop was called: a late reconnect must not start
	socket  *socketLoop
	users   map[string]userInfo
}

// identity is who the bot is, from auth.test.
type identity struct {
	UserID string // the bot user, whom mentions name
	BotID  string // bot_id, which the bot's own messages carry
	TeamID string
}

var (
	_ plugin.Platform = (*Adapter)(nil)
	_ plugin.Service  = (*Adapter)(nil)
)

// New returns an adapter; it talks to Slack once started.
func New(opts Options) (*Adapter, error) {
	switch {
	case opts.Runtime == nil:
		return nil, errors.New("slack: no runtime")
	case opts.BotToken == "":
		return nil, errors.New("slack: no bot token (SLACK_BOT_TOKEN)")
	case opts.AppToken == "" && opts.SigningSecret == "":
		return nil, errors.New("slack: neither an app-level token (SLACK_APP_TOKEN, for Socket Mode) nor a signing secret (SLACK_SIGNING_SECRET, for the HTTP Events API)")
	case opts.AppToken != "" && !strings.HasPrefix(opts.AppToken, "xapp-"):
		return nil, errors.New("slack: the app-level token (SLACK_APP_TOKEN) must start with xapp-")
	}
	if opts.APIURL == "" {
		opts.APIURL = slackapi.APIURL
	}
	if !strings.HasSuffix(opts.APIURL, "/") {
		opts.APIURL += "/"
	}
	if opts.Logger == nil {
		opts.Logger = opts.Runtime.Logger()
	}
	if opts.Clock == nil {
		opts.Clock = opts.Runtime.Clock()
	}
	log := opts.Logger.With("platform", Platform)
	apiOpts := []slackapi.Option{
		slackapi.OptionAPIURL(opts.APIURL),
		slackapi.OptionHTTPClient(&http.Client{Timeout: HTTPTimeout}),
		slackapi.OptionLog(slog.NewLogLogger(log.Handler(), slog.LevelDebug)),
		// No OptionRetry: a 429 must reach Send's caller, whose outbox
		// retries after Retry-After.
	}
	if opts.AppToken != "" {
		apiOpts = append(apiOpts, slackapi.OptionAppLevelToken(opts.AppToken))
	}
	base, cancel := context.WithCancel(context.Background())
	return &Adapter{
		opts: opts, rt: opts.Runtime, log: log, clk: opts.Clock,
		api:  slackapi.New(opts.BotToken, apiOpts...),
		base: base, cancel: cancel,
		users:     map[string]userInfo{},
		home:      homeTabs{users: map[string]*homeUser{}},
		assistant: assistantThreads{threads: map[room]*assistantThread{}},
	}, nil
}

// Plugin is the "slack" plugin: this adapter as the platform for "slack:"
// rooms and as the service that listens to Slack.
func (a *Adapter) Plugin() *plugin.Plugin {
	return &plugin.Plugin{
		Name:         Platform,
		Description:  "Slack: app mentions, direct messages, /task and its modal, buttons, the Home tab and assistant threads, over Socket Mode or the HTTP Events API",
		Dependencies: []string{"orchestrator"},
		Platforms:    []plugin.Platform{a},
		Services:     []plugin.Service{a},
		Events: map[plugin.EventType][]plugin.EventHandler{
			plugin.TaskCreated: {a.onTaskEvent},
			plugin.TaskChanged: {a.onTaskEvent},
			plugin.TaskEnded:   {a.onTaskEvent},
		},
	}
}

// onTaskEvent follows a task's changes where Slack shows them: its
// requestor's Home tab, and the status of the assistant thread it was
// created in. It only schedules work; it never blocks the task service.
func (a *Adapter) onTaskEvent(_ context.Context, ev plugin.Event) {
	if ev.Task == nil {
		return
	}
	if _, started := a.identity(); !started {
		return
	}
	t := *ev.Task
	if a.opts.FollowStore > 0 {
		a.home.sawChange(t) // so the follower skips it
	}
	a.taskChanged(t)
}

// taskChanged brings what Slack shows in line with t's change, made by
// this replica (onTaskEvent) or another (followStore).
func (a *Adapter) taskChanged(t domain.Task) {
	if t.Platform == Platform {
		a.homeChanged(t)
	}
	if r, err := parseRoom(t.RoomID); err == nil && r.Thread != "" {
		a.assistantTouched(r)
	}
}

// Name is the platform's and the service's name.
func (a *Adapter) Name() string { return Platform }

// SocketMode reports whether the adapter listens over Socket Mode (an
// app-level token is set) rather than the HTTP Events API.
func (a *Adapter) SocketMode() bool { return a.opts.AppToken != "" }

// Start asks Slack who the bot is (auth.test), then, in Socket Mode,
// connects. In HTTP mode HTTPHandler starts answering.
func (a *Adapter) Start(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.started {
		return errors.New("slack: already started")
	}
	auth, err := a.api.AuthTestContext(ctx)
	switch {
	case err == nil:
		a.connected(auth)
	case refusedToken(err):
		return fmt.Errorf("slack: auth.test with the bot token (SLACK_BOT_TOKEN): %w", err)
	default:
		// Slack (or the way to it) is down: the rest of the service
		// runs, and the adapter connects once Slack answers; events
		// before then are not taken (Slack sends them again).
		a.log.Warn("cannot reach Slack; trying again", "in", firstRetry, "err", err)
		a.bg.Add(1)
		go func() {
			defer a.bg.Done()
			a.reconnect(a.base)
		}()
		return nil
	}
	if a.opts.FollowStore > 0 {
		a.bg.Add(1)
		go func() {
			defer a.bg.Done()
			a.followStore(a.base)
		}()
	}
	return nil
}

// Check asks Slack whom the bot token belongs to (auth.test), for
// `taskloom doctor`: the workspace and bot, or why not. apiURL is
// SLACK_API_URL ("" is Slack's).
func Check(ctx context.Context, botToken, apiURL string) (string, error) {
	if apiURL == "" {
		apiURL = slackapi.APIURL
	}
	if !strings.HasSuffix(apiURL, "/") {
		apiURL += "/"
	}
	api := slackapi.New(botToken, slackapi.OptionAPIURL(apiURL), slackapi.OptionHTTPClient(&http.Client{Timeout: HTTPTimeout}))
	auth, err := api.AuthTestContext(ctx)
	switch {
	case err == nil:
		return fmt.Sprintf("workspace %s (%s), bot user %s", auth.Team, auth.TeamID, auth.UserID), nil
	case refusedToken(err):
		return "", fmt.Errorf("Slack refused SLACK_BOT_TOKEN: %w", err)
	}
	return "", fmt.Errorf("cannot reach Slack: %w", err)
}

// Connected reports whether the adapter has reached Slack: auth.test
// answered, and in Socket Mode the connection was opened.
func (a *Adapter) Connected() bool {
	_, ok := a.identity()
	return ok
}

// connected takes the bot's identity from auth.test's answer and, in
// Socket Mode, opens the connection; a.mu is held.
func (a *Adapter) connected(auth *slackapi.AuthTestResponse) {
	a.self = identity{UserID: auth.UserID, BotID: auth.BotID, TeamID: auth.TeamID}
	if a.SocketMode() {
		a.socket = a.startSocket()
	}
	a.started = true
	mode := "HTTP Events API"
	if a.SocketMode() {
		mode = "Socket Mode"
	}
	a.log.Info("slack connected", "mode", mode, "team", auth.TeamID, "bot_user", auth.UserID, "api", a.opts.APIURL)
}

// Reaching Slack at start-up again after a failure: the wait doubles
// from firstRetry up to maxRetry.
const (
	firstRetry = time.Second
	maxRetry   = 5 * time.Minute
)

// reconnect asks auth.test until Slack answers, refuses the token for
// good, or ctx (the adapter's life) ends.
func (a *Adapter) reconnect(ctx context.Context) {
	wait := firstRetry
	for {
		if err := clock.Sleep(ctx, a.clk, wait); err != nil {
			return
		}
		auth, err := a.api.AuthTestContext(ctx)
		switch {
		case err == nil:
			a.mu.Lock()
			if !a.stopped {
				a.connected(auth)
			}
			a.mu.Unlock()
			return
		case ctx.Err() != nil:
			return
		case refusedToken(err):
			a.log.Error("Slack refused SLACK_BOT_TOKEN; chat on Slack stays off until restart", "err", err)
			return
		}
		wait = min(2*wait, maxRetry)
		a.log.Warn("cannot reach Slack; trying again", "in", wait, "err", err)
	}
}

// refusedToken reports whether err is Slack refusing the bot token, which
// no retry changes.
func refusedToken(err error) bool {
	var se slackapi.SlackErrorResponse
	if !errors.As(err, &se) {
		return false
	}
	switch se.Err {
	case "invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired", "no_permission", "missing_scope":
		return true
	}
	return false
}

// Stop closes the Socket Mode connection, then waits (within ctx) for the
// messages being handled to be answered.
func (a *Adapter) Stop(ctx context.Context) error {
	a.mu.Lock()
	sock := a.socket
	a.socket = nil
	a.started, a.stopped = false, true
	a.mu.Unlock()
	if sock != nil {
		sock.stop()
	}
	err := a.Drain(ctx)
	a.cancel()
	a.bg.Wait() // the Home tabs' debounces end with the context
	if err != nil {
		return fmt.Errorf("slack: messages still being handled: %w", err)
	}
	return nil
}

// Drain waits until every incoming message taken so far has been handled
// and answered, or ctx ends.
func (a *Adapter) Drain(ctx context.Context) error { return a.work.wait(ctx) }

func (a *Adapter) identity() (identity, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.self, a.started
}

// tracker counts work in flight; wait returns when there is none.
type tracker struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed while n == 0; nil means closed
}

func (t *tracker) add() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		t.idle = make(chan struct{})
	}
	t.n++
}

func (t *tracker) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.n == 0 {
		close(t.idle)
	}
}

func (t *tracker) wait(ctx context.Context) error {
	t.mu.Lock()
	ch := t.idle
	t.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// goBackground runs fn, which waits on the clock within a.base, in a
// goroutine Stop waits for after cancelling a.base, and reports whether it
// did: once Stop has begun it runs nothing, since the count may not grow
// while Stop waits on it.
func (a *Adapter) goBackground(fn func()) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.started {
		return false
	}
	a.bg.Add(1)
	go func() {
		defer a.bg.Done()
		fn()
	}()
	return true
}

// goTracked runs fn in a goroutine counted by the tracker.
func (a *Adapter) goTracked(fn func()) {
	a.work.add()
	go func() {
		defer a.work.done()
		fn()
	}()
}
