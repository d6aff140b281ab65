package discord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/plugin"
)

// Name is the platform's name: the plugin's, the service's, and the
// prefix of its rooms ("discord:123").
const Name = "discord"

// DefaultAPIURL is Discord's site root; REST is under api/v9/.
const DefaultAPIURL = "https://discord.com/"

// DefaultDeferAfter is how long an interaction waits for its reply before
// it is deferred: Discord wants the first response within three seconds,
// and the response itself takes a round trip.
const DefaultDeferAfter = 2 * time.Second

// Intents are the gateway intents the bot asks for: guild metadata
// (roles and owners, for the Manage Server check), guild messages and
// DMs. None is privileged.
const Intents = discordgo.IntentGuilds | discordgo.IntentGuildMessages | discordgo.IntentDirectMessages

// Options configure the adapter.
type Options struct {
	// Token is the bot token (DISCORD_BOT_TOKEN), with or without "Bot ".
	Token string
	// ApplicationID is the application's ID (DISCORD_APPLICATION_ID). When
	// empty, the one READY announces is used.
	ApplicationID string
	// APIURL is the site root of Discord or of a Discord-compatible server
	// (DISCORD_API_URL); DefaultAPIURL when empty.
	APIURL string
	// ShardID and ShardCount run one shard of the gateway
	// (DISCORD_SHARD_ID, DISCORD_SHARD_COUNT); a count of 0 or 1 means
	// no sharding.
	ShardID, ShardCount int
	// Runtime handles the messages; its store, clock and logger are used
	// unless Logger and Clock say otherwise.
	Runtime *plugin.Runtime
	Logger  *slog.Logger
	Clock   clock.Clock
	// DeferAfter is how long an interaction's reply may take before the
	// interaction is deferred; DefaultDeferAfter when zero.
	DeferAfter time.Duration
	// Threads gives a task created in a guild text channel a thread of its
	// own, started from the acknowledgement, where it reports
	// (TASKLOOM_DISCORD_THREADS).
	Threads bool
}

// Adapter is Taskloom's Discord bot: a plugin.Platform for rooms
// "discord:<channel>" and the plugin.Service holding the gateway.
type Adapter struct {
	opts Options
	rt   *plugin.Runtime
	log  *slog.Logger
	clk  clock.Clock
	sess *discordgo.Session

	mu       sync.Mutex
	running  bool
	stopping bool
	appID    string
	base     context.Context // handlers' context, canceled by Stop
	cancel   context.CancelFunc
	inflight sync.WaitGroup // event handlers running; Add under mu
	partial  map[string]partialSend
	created  map[string]int64  // message or interaction ID → the task it created, until its reply
	dms      map[string]string // user ID → the DM channel with the bot
	adopted  map[string]bool   // private threads whose former room was moved (adoptPrivate)
}

var (
	_ plugin.Platform = (*Adapter)(nil)
	_ plugin.Service  = (*Adapter)(nil)
)

// session is a discordgo session for token whose REST calls go to
// apiURL (DISCORD_API_URL; "" is Discord's).
func session(token, apiURL string) (*discordgo.Session, error) {
	token = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(token), "Bot "))
	if token == "" {
		return nil, errors.New("discord: DISCORD_BOT_TOKEN is empty")
	}
	if apiURL == "" {
		apiURL = DefaultAPIURL
	}
	root, err := url.Parse(apiURL)
	if err != nil || (root.Scheme != "http" && root.Scheme != "https") || root.Host == "" {
		return nil, fmt.Errorf("discord: DISCORD_API_URL=%q: want an http:// or https:// URL", apiURL)
	}
	if !strings.HasSuffix(root.Path, "/") {
		root.Path += "/"
	}
	sess, err := discordgo.New("Bot " + token)
	if err != nil {
		return nil, fmt.Errorf("discord: new session: %w", err)
	}
	sess.Client = &http.Client{Timeout: 20 * time.Second, Transport: http.DefaultTransport}
	if root.String() != DefaultAPIURL {
		sess.Client.Transport = rewriteRoot{to: root, next: http.DefaultTransport}
	}
	return sess, nil
}

// Check asks Discord who the bot token belongs to (Get Current User, no
// gateway), for `taskloom doctor`: the bot's name, or why not.
func Check(ctx context.Context, token, apiURL string) (string, error) {
	sess, err := session(token, apiURL)
	if err != nil {
		return "", err
	}
	u, err := sess.User("@me", discordgo.WithContext(ctx))
	if err != nil {
		if refused(err) {
			return "", fmt.Errorf("Discord refused DISCORD_BOT_TOKEN: %w", err)
		}
		return "", fmt.Errorf("cannot reach Discord: %w", err)
	}
	return fmt.Sprintf("bot %s (%s)", u.Username, u.ID), nil
}

// New checks the options and builds the adapter; Start connects it.
func New(opts Options) (*Adapter, error) {
	if opts.Runtime == nil {
		return nil, errors.New("discord: no runtime")
	}
	sess, err := session(opts.Token, opts.APIURL)
	if err != nil {
		return nil, err
	}
	if opts.ShardCount < 0 || opts.ShardID < 0 || (opts.ShardCount <= 1 && opts.ShardID != 0) ||
		(opts.ShardCount > 1 && opts.ShardID >= opts.ShardCount) {
		return nil, fmt.Errorf("discord: shard %d of %d: want 0 <= DISCORD_SHARD_ID < DISCORD_SHARD_COUNT", opts.ShardID, opts.ShardCount)
	}
	if opts.Logger == nil {
		opts.Logger = opts.Runtime.Logger()
	}
	if opts.Clock == nil {
		opts.Clock = opts.Runtime.Clock()
	}
	if opts.DeferAfter <= 0 {
		opts.DeferAfter = DefaultDeferAfter
	}

	sess.Identify.Intents = Intents
	// The outbox retries with its own backoff; discordgo's retry sleeps
	// as long as Discord says, ignoring the context.
	sess.ShouldRetryOnRateLimit = false
	if opts.ShardCount > 1 {
		sess.ShardID, sess.ShardCount = opts.ShardID, opts.ShardCount
	}

	a := &Adapter{
		opts:    opts,
		rt:      opts.Runtime,
		log:     opts.Logger.With("platform", Name),
		clk:     opts.Clock,
		sess:    sess,
		partial: map[string]partialSend{},
		created: map[string]int64{},
		dms:     map[string]string{},
		adopted: map[string]bool{},
	}
	sess.AddHandler(a.onMessageCreate)
	sess.AddHandler(a.onInteractionCreate)
	sess.AddHandler(a.onConnect)
	sess.AddHandler(a.onGuildCreate)
	return a, nil
}

// Plugin is the "discord" plugin: the platform and the gateway service.
func (a *Adapter) Plugin() *plugin.Plugin {
	return &plugin.Plugin{
		Name:         Name,
		Description:  "Discord: mentions, DMs, the /task command, task buttons and notifications",
		Dependencies: []string{"orchestrator"},
		Platforms:    []plugin.Platform{a},
		Services:     []plugin.Service{a},
		Events:       map[plugin.EventType][]plugin.EventHandler{plugin.ActionCompleted: {a.noteCreated}},
	}
}

// Name implements plugin.Platform and plugin.Service.
func (a *Adapter) Name() string { return Name }

// Session is the discordgo session, for what the adapter does not cover.
func (a *Adapter) Session() *discordgo.Session { return a.sess }

// ApplicationID is the application whose commands were registered; ""
// before Start.
func (a *Adapter) ApplicationID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.appID
}

// Start opens the gateway and registers the /task command.
func (a *Adapter) Start(ctx context.Context) error {
	a.mu.Lock()
	if a.running || a.stopping {
		a.mu.Unlock()
		return errors.New("discord: already started")
	}
	a.base, a.cancel = context.WithCancel(context.WithoutCancel(ctx))
	a.running = true
	a.mu.Unlock()

	err := a.connect(ctx)
	switch {
	case err == nil:
		return nil
	case refused(err):
		// A token or settings Discord refuses stay refused: say so now.
		a.abort()
		return err
	}
	// Discord (or the way to it) is down: the rest of the service runs,
	// and the connection is tried again until it is made.
	a.log.Warn("cannot connect to Discord; trying again", "in", firstRetry, "err", err)
	go a.reconnect(a.base)
	return nil
}

// Connecting at start-up again after a failure: the wait doubles from
// firstRetry up to maxRetry.
const (
	firstRetry = time.Second
	maxRetry   = 5 * time.Minute
)

// connect opens the gateway, learns the application and registers the
// commands.
func (a *Adapter) connect(ctx context.Context) error {
	if err := a.sess.Open(); err != nil {
		return fmt.Errorf("discord: connect to the gateway: %w", explainOpen(err))
	}
	appID, err := a.applicationID()
	if err == nil {
		a.mu.Lock()
		a.appID = appID
		a.mu.Unlock()
		err = a.registerCommands(ctx, appID)
	}
	if err != nil {
		a.closeSession()
		return fmt.Errorf("discord: %w", err)
	}
	shard := "none"
	if a.opts.ShardCount > 1 {
		shard = fmt.Sprintf("%d of %d", a.opts.ShardID, a.opts.ShardCount)
	}
	a.log.Info("connected to Discord", "bot", a.botID(), "application", appID, "shard", shard)
	return nil
}

// reconnect tries connect until it succeeds, Discord refuses for good, or
// ctx (the adapter's life) ends.
func (a *Adapter) reconnect(ctx context.Context) {
	wait := firstRetry
	for {
		if err := clock.Sleep(ctx, a.clk, wait); err != nil {
			return
		}
		a.mu.Lock()
		stopping := a.stopping
		a.mu.Unlock()
		if stopping {
			return
		}
		err := a.connect(ctx)
		switch {
		case err == nil:
			return
		case ctx.Err() != nil:
			return
		case refused(err):
			a.log.Error("Discord refused the connection; chat on Discord stays off until restart", "err", err)
			return
		}
		wait = min(2*wait, maxRetry)
		a.log.Warn("cannot connect to Discord; trying again", "in", wait, "err", err)
	}
}

// settingError is a setting that does not fit what Discord says of the
// bot (its application): no retry mends it.
type settingError string

func (e settingError) Error() string { return string(e) }

// refused reports whether err is Discord refusing the bot's token or
// settings, which no retry changes: a gateway close 4004 (token),
// 4010–4014 (shard, intents), or an HTTP 4xx other than a rate limit or
// a timeout (a refused token, an application that is not the bot's).
func refused(err error) bool {
	var ce *websocket.CloseError
	if errors.As(err, &ce) && (ce.Code == 4004 || (ce.Code >= 4010 && ce.Code <= 4014)) {
		return true
	}
	var se settingError
	if errors.As(err, &se) {
		return true
	}
	var re *discordgo.RESTError
	if !errors.As(err, &re) || re.Response == nil {
		return false
	}
	code := re.Response.StatusCode
	return code >= 400 && code < 500 && code != http.StatusTooManyRequests && code != http.StatusRequestTimeout
}

func (a *Adapter) abort() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.running = false
	if a.cancel != nil {
		a.cancel()
	}
}

// applicationID is the configured application ID, checked against the
// one READY names for the token.
func (a *Adapter) applicationID() (string, error) {
	st := a.sess.State
	st.RLock()
	var ready string
	if st.Application != nil {
		ready = st.Application.ID
	}
	if ready == "" && st.User != nil {
		ready = st.User.ID // the same for every application made since 2020
	}
	st.RUnlock()
	switch want := a.opts.ApplicationID; {
	case want == "":
		if ready == "" {
			return "", settingError("the gateway did not say which application the token belongs to: set DISCORD_APPLICATION_ID")
		}
		return ready, nil
	case ready != "" && ready != want:
		return "", settingError(fmt.Sprintf("DISCORD_APPLICATION_ID=%s, but the token belongs to application %s", want, ready))
	default:
		return want, nil
	}
}

// Stop closes the gateway and waits, within ctx, for the messages and
// interactions being handled.
func (a *Adapter) Stop(ctx context.Context) error {
	a.mu.Lock()
	if !a.running {
		a.mu.Unlock()
		return nil
	}
	a.running, a.stopping = false, true
	cancel := a.cancel
	a.mu.Unlock()
	defer cancel()

	closed := make(chan struct{})
	go func() {
		a.closeSession()
		close(closed)
	}()
	handled := make(chan struct{})
	go func() {
		a.inflight.Wait()
		close(handled)
	}()
	var errs []error
	for _, w := range []struct {
		what string
		done <-chan struct{}
	}{{"close the gateway", closed}, {"finish the messages being handled", handled}} {
		select {
		case <-w.done:
		case <-ctx.Done():
			cancel()
			errs = append(errs, fmt.Errorf("discord: %s: %w", w.what, ctx.Err()))
		}
	}
	a.log.Info("disconnected from Discord")
	return errors.Join(errs...)
}

// closeSession closes the gateway for good. Close alone is not enough:
// discordgo reconnects after an error unless told not to, and the flag is
// read under the session's lock.
func (a *Adapter) closeSession() {
	a.sess.Lock()
	a.sess.ShouldReconnectOnError = false
	a.sess.Unlock()
	if err := a.sess.Close(); err != nil {
		a.log.Warn("closing the gateway", "err", err)
	}
}

// onConnect closes a connection that a reconnect loop, already running
// when Stop came, opened afterwards.
func (a *Adapter) onConnect(*discordgo.Session, *discordgo.Connect) {
	a.mu.Lock()
	stopping := a.stopping
	a.mu.Unlock()
	if stopping {
		a.closeSession()
	}
}

// begin registers an event handler as running and gives it the handlers'
// context; false once Stop has begun.
func (a *Adapter) begin() (context.Context, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.running {
		return nil, false
	}
	a.inflight.Add(1)
	return a.base, true
}

// botID is the bot's own user ID, from READY.
func (a *Adapter) botID() string {
	st := a.sess.State
	st.RLock()
	defer st.RUnlock()
	if st.User == nil {
		return ""
	}
	return st.User.ID
}

// explainOpen turns the gateway's refusals into what to do about them.
func explainOpen(err error) error {
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		switch ce.Code {
		case 4004:
			return fmt.Errorf("Discord refused DISCORD_BOT_TOKEN (close 4004 %q): copy the token again from the Bot page of the Developer Portal: %w", ce.Text, err)
		case 4010, 4011:
			return fmt.Errorf("Discord refused the shard settings (close %d %q): check DISCORD_SHARD_ID and DISCORD_SHARD_COUNT: %w", ce.Code, ce.Text, err)
		case 4013, 4014:
			return fmt.Errorf("Discord refused the gateway intents (close %d %q): %w", ce.Code, ce.Text, err)
		}
	}
	return err
}

// rewriteRoot sends requests for Discord's site root to another root
// (DISCORD_API_URL): a Discord-compatible server, or a fake in tests.
// discordgo's endpoints are package variables; rewriting in the
// transport keeps them untouched, so sessions aimed at different servers
// can live in one process.
type rewriteRoot struct {
	to   *url.URL // ends with "/"
	next http.RoundTripper
}

func (rt rewriteRoot) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host != "discord.com" {
		return rt.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	u := *r.URL
	u.Scheme, u.Host = rt.to.Scheme, rt.to.Host
	u.Path = rt.to.Path + strings.TrimPrefix(r.URL.Path, "/")
	if r.URL.RawPath != "" {
		u.RawPath = rt.to.EscapedPath() + strings.TrimPrefix(r.URL.RawPath, "/")
	}
	r.URL, r.Host = &u, rt.to.Host
	return rt.next.RoundTrip(r)
}
