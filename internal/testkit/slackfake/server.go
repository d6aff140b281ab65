package slackfake

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Defaults for the workspace and app the fake plays.
const (
	DefaultTeamID        = "T0FAKETEAM"
	DefaultTeamName      = "Fake Workspace"
	DefaultBotUserID     = "U0FAKEBOT"
	DefaultBotID         = "B0FAKEBOT"
	DefaultBotName       = "taskloom"
	DefaultAppID         = "A0FAKEAPP"
	DefaultBotToken      = "xoxb-fake-bot-token"
	DefaultAppToken      = "xapp-1-fake-app-token"
	DefaultSigningSecret = "fake-signing-secret"
	// DefaultPingInterval is how often Socket Mode connections are pinged;
	// slack-go reconnects when it hears no ping for 30 seconds.
	DefaultPingInterval = 10 * time.Second
)

// Slack's limits the fake enforces.
const (
	MaxTextLength       = 40000 // a message's text
	MaxSectionText      = 3000  // the text of a section block
	MaxBlocks           = 50    // blocks in one message
	MaxActionElements   = 25    // elements in one actions block
	MaxButtonText       = 75    // a button's label
	MaxButtonValue      = 2000  // a button's value
	MaxIDLength         = 255   // block_id and action_id
	MaxMarkdownText     = 12000 // the markdown blocks of one message, in all
	MaxHeaderText       = 150   // a header block's text
	MaxContextElements  = 10    // elements in one context block
	MaxLabelText        = 2000  // an input block's label
	MaxInputLength      = 3000  // a plain_text_input's min_length and max_length
	MaxSelectOptions    = 100   // options of a static_select
	MaxOptionText       = 75    // an option's text
	MaxOptionValue      = 150   // an option's value
	MaxViewBlocks       = 100   // blocks in a modal or a Home tab
	MaxViewTitle        = 24    // a modal's title, submit and close texts
	MaxPrivateMetadata  = 3000  // a view's private_metadata
	MaxSuggestedPrompts = 4     // prompts of one assistant thread
	TriggerLifetime     = 3 * time.Second
	// StatusTimeout is how long an assistant thread's status stays when
	// the app posts nothing in the thread.
	StatusTimeout       = 2 * time.Minute
	maxBody             = 1 << 20
	responseURLMaxUses  = 5
	responseURLPrefix   = "/response/"
	socketPath          = "/link/"
	apiPrefix           = "/api/"
	defaultResponseType = "ephemeral"
)

// User is a workspace member as users.info describes them.
type User struct {
	ID    string
	Name  string
	Admin bool // a workspace admin (is_admin)
	Owner bool // a workspace owner (is_owner; owners are admins too)
	Bot   bool
}

// Option configures a Server.
type Option func(*config)

type config struct {
	teamID, teamName   string
	bot                User
	botID, appID       string
	botToken, appToken string
	signingSecret      string
	pingInterval       time.Duration
	now                func() time.Time
	users              []User
	noHomeTab          bool
}

// WithTeam sets the workspace's ID and name.
func WithTeam(id, name string) Option { return func(c *config) { c.teamID, c.teamName = id, name } }

// WithBot sets the bot user's ID and name and the bot's ID (bot_id).
func WithBot(userID, name, botID string) Option {
	return func(c *config) { c.bot.ID, c.bot.Name, c.botID = userID, name, botID }
}

// WithTokens sets the bot token (xoxb-) and the app-level token (xapp-)
// the fake accepts.
func WithTokens(bot, app string) Option { return func(c *config) { c.botToken, c.appToken = bot, app } }

// WithSigningSecret sets the secret Request signs with.
func WithSigningSecret(s string) Option { return func(c *config) { c.signingSecret = s } }

// WithUser adds a workspace member. Users the builders name that were not
// added become ordinary members on first use.
func WithUser(u User) Option { return func(c *config) { c.users = append(c.users, u) } }

// WithPingInterval sets how often Socket Mode connections are pinged.
func WithPingInterval(d time.Duration) Option { return func(c *config) { c.pingInterval = d } }

// WithNow sets the clock Request signs with and the builders stamp
// payloads with, e.g. a fake clock's Now; the wall clock by default.
func WithNow(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithoutHomeTab is an app whose Home tab is not enabled: views.publish
// answers not_enabled.
func WithoutHomeTab() Option { return func(c *config) { c.noHomeTab = true } }

// Server is a fake Slack. It is safe for concurrent use.
type Server struct {
	t   testing.TB
	cfg config
	hs  *httptest.Server
	wg  sync.WaitGroup

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change a Wait* watches
	closed  bool
	seq     int64
	tsBase  int64
	lastTS  int64 // the latest message timestamp handed out, in microseconds

	users        map[string]User
	calls        []Call
	messages     []*Message
	faults       map[string][]fault
	limits       *limiter // nil until EnforceLimits
	responseURLs map[string]*responseURL
	tickets      map[string]bool
	conns        []*socketConn
	connects     int
	envelopes    map[string]Envelope
	sent         map[string]time.Time // when each envelope was sent, on the fake's clock
	retried      map[string]bool      // envelopes RedeliverUnacked redelivered
	acks         []Ack
	triggers     map[string]*trigger
	views        map[string]*View
	homes        map[string]string // user → their Home tab's view ID
	threads      map[string]*assistantThread
}

type fault struct {
	status     int
	errCode    string
	retryAfter time.Duration
	after      bool // the call is carried out before the error is answered
	// until, when set, makes the fault answer every call before it (the
	// fake's clock) rather than one.
	until time.Time
	// stall holds the call this long on the wall clock, or until the
	// client gives up, before the rest of the fault.
	stall time.Duration
}

type responseURL struct {
	channel, user, threadTS string
	uses                    int
}

// New starts a fake Slack and closes it when the test ends.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	cfg := config{
		teamID: DefaultTeamID, teamName: DefaultTeamName,
		bot:   User{ID: DefaultBotUserID, Name: DefaultBotName, Bot: true},
		botID: DefaultBotID, appID: DefaultAppID,
		botToken: DefaultBotToken, appToken: DefaultAppToken,
		signingSecret: DefaultSigningSecret,
		pingInterval:  DefaultPingInterval,
		now:           time.Now,
	}
	for _, o := range opts {
		o(&cfg)
	}
	cfg.bot.Bot = true
	s := &Server{
		t: t, cfg: cfg,
		changed:      make(chan struct{}),
		tsBase:       cfg.now().Unix(),
		users:        map[string]User{cfg.bot.ID: cfg.bot},
		faults:       map[string][]fault{},
		responseURLs: map[string]*responseURL{},
		tickets:      map[string]bool{},
		envelopes:    map[string]Envelope{},
		sent:         map[string]time.Time{},
		retried:      map[string]bool{},
		triggers:     map[string]*trigger{},
		views:        map[string]*View{},
		homes:        map[string]string{},
		threads:      map[string]*assistantThread{},
	}
	for _, u := range cfg.users {
		s.users[u.ID] = u
	}
	mux := http.NewServeMux()
	mux.HandleFunc(apiPrefix, s.serveAPI)
	mux.HandleFunc(responseURLPrefix, s.serveResponseURL)
	mux.HandleFunc(socketPath, s.serveSocket)
	s.hs = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// Close ends every Socket Mode connection and stops the server. It is
// called when the test ends; calling it earlier is fine.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	conns := slices.Clone(s.conns)
	s.notifyLocked()
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	s.wg.Wait()
	s.hs.Close()
}

// URL is the server's root.
func (s *Server) URL() string { return s.hs.URL }

// APIURL is the Web API base, as slack.OptionAPIURL and SLACK_API_URL take
// it ("https://slack.com/api/" on Slack).
func (s *Server) APIURL() string { return s.hs.URL + apiPrefix }

// TeamID is the workspace's ID.
func (s *Server) TeamID() string { return s.cfg.teamID }

// BotUserID is the bot user's ID, the one app mentions name.
func (s *Server) BotUserID() string { return s.cfg.bot.ID }

// BotID is the bot's bot_id, which its own messages carry.
func (s *Server) BotID() string { return s.cfg.botID }

// BotToken is the bot token (xoxb-) the Web API accepts.
func (s *Server) BotToken() string { return s.cfg.botToken }

// AppToken is the app-level token (xapp-) apps.connections.open accepts.
func (s *Server) AppToken() string { return s.cfg.appToken }

// SigningSecret is the secret requests are signed with.
func (s *Server) SigningSecret() string { return s.cfg.signingSecret }

// Mention is how Slack writes a mention of the bot in message text.
func (s *Server) Mention() string { return "<@" + s.cfg.bot.ID + ">" }

// IMChannel is the ID of the direct-message channel between the bot and
// user.
func (s *Server) IMChannel(user string) string {
	return "D" + strings.TrimPrefix(strings.TrimPrefix(user, "U"), "W")
}

// SetUser adds or replaces a workspace member.
func (s *Server) SetUser(u User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[u.ID] = u
}

// userLocked returns a member, making an ordinary one up on first use.
func (s *Server) userLocked(id string) User {
	u, ok := s.users[id]
	if !ok {
		u = User{ID: id, Name: strings.ToLower(id)}
		s.users[id] = u
	}
	return u
}

// RateLimitNext makes the next call to method (e.g. "chat.postMessage")
// answer 429 with Retry-After, as Slack does.
func (s *Server) RateLimitNext(method string, retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[method] = append(s.faults[method], fault{status: http.StatusTooManyRequests, errCode: "ratelimited", retryAfter: retryAfter})
}

// FailNext makes the next call to method answer {"ok":false,"error":code}.
func (s *Server) FailNext(method, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[method] = append(s.faults[method], fault{status: http.StatusOK, errCode: code})
}

// ServerErrorNext makes the next n calls to method answer HTTP 500 with
// {"ok":false,"error":"internal_error"}, as Slack does when it fails on
// its side; nothing of the call is done.
func (s *Server) ServerErrorNext(method string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults[method] = append(s.faults[method], fault{status: http.StatusInternalServerError, errCode: "internal_error"})
	}
}

// ServerErrorAfterNext is ServerErrorNext for calls that are carried out
// all the same (a message is posted) before the 500 is answered, as when
// the error comes from between the client and an API that did its work.
func (s *Server) ServerErrorAfterNext(method string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults[method] = append(s.faults[method], fault{status: http.StatusInternalServerError, errCode: "internal_error", after: true})
	}
}

// FailUntil makes every call to method answer HTTP status with
// {"ok":false,"error":code} until the fake's clock (WithNow) reaches
// until: Slack failing for a while (a 500 "internal_error", a 503
// "service_unavailable"), then recovering.
func (s *Server) FailUntil(method string, until time.Time, status int, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[method] = append(s.faults[method], fault{status: status, errCode: code, until: until})
}

// StallNext makes the next n calls to method hang, as Slack does when it
// stops answering: each is held for d on the wall clock, or until the
// client gives up (its timeout), then carried out when carriedOut (the
// client that gave up cannot tell it was) and answered HTTP 504 with
// {"ok":false,"error":"request_timeout"}.
func (s *Server) StallNext(method string, n int, d time.Duration, carriedOut bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults[method] = append(s.faults[method], fault{status: http.StatusGatewayTimeout, errCode: "request_timeout", stall: d, after: carriedOut})
	}
}

// Call is one Web API call as the fake saw it.
type Call struct {
	Method string
	Token  string
	Params url.Values // form fields, or a JSON body's top-level fields
	Status int        // the HTTP status answered
	Error  string     // the "error" answered, "" when ok
	Time   time.Time
}

// Calls returns every Web API call so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// CallsTo returns the calls to one method.
func (s *Server) CallsTo(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.callsToLocked(method)
}

func (s *Server) callsToLocked(method string) []Call {
	var out []Call
	for _, c := range s.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// WaitCalls waits until method has been called at least n times.
func (s *Server) WaitCalls(ctx context.Context, method string, n int) ([]Call, error) {
	var out []Call
	err := s.wait(ctx, func() bool {
		out = s.callsToLocked(method)
		return len(out) >= n
	})
	if err != nil {
		return out, fmt.Errorf("waiting for %d calls to %s (have %d): %w", n, method, len(out), err)
	}
	return out, nil
}

// Messages returns the messages the app has posted, in order: posts,
// ephemeral messages and response-URL messages.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.messagesLocked(nil)
}

func (s *Server) messagesLocked(match func(Message) bool) []Message {
	var out []Message
	for _, m := range s.messages {
		if match == nil || match(*m) {
			out = append(out, m.clone())
		}
	}
	return out
}

// WaitMessages waits until at least n messages match and returns those
// that do.
func (s *Server) WaitMessages(ctx context.Context, n int, match func(Message) bool) ([]Message, error) {
	var out []Message
	err := s.wait(ctx, func() bool {
		out = s.messagesLocked(match)
		return len(out) >= n
	})
	if err != nil {
		return out, fmt.Errorf("waiting for %d matching messages (have %d): %w", n, len(out), err)
	}
	return out, nil
}

// wait blocks until cond, called with s.mu held, is true, or ctx ends, or
// the server closes.
func (s *Server) wait(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		if cond() {
			s.mu.Unlock()
			return nil
		}
		if s.closed {
			s.mu.Unlock()
			return fmt.Errorf("slackfake: server closed")
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// nextLocked returns a fresh sequence number.
func (s *Server) nextLocked() int64 {
	s.seq++
	return s.seq
}

// tsLocked returns a fresh message timestamp, Slack's "seconds.micros"
// message ID: as in Slack, the time the message was posted (on WithNow's
// clock), to the microsecond, and increasing — a microsecond after the
// last one when the clock has not moved.
func (s *Server) tsLocked() string {
	s.nextLocked()
	n := max(s.cfg.now().UnixMicro(), s.lastTS+1)
	s.lastTS = n
	return fmt.Sprintf("%d.%06d", n/1_000_000, n%1_000_000)
}

// TS returns a fresh message timestamp, for a message a test makes up.
func (s *Server) TS() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tsLocked()
}

func (s *Server) newResponseURLLocked(channel, user, threadTS string) string {
	id := fmt.Sprintf("%s/%d", s.cfg.teamID, s.nextLocked())
	s.responseURLs[id] = &responseURL{channel: channel, user: user, threadTS: threadTS}
	return s.hs.URL + responseURLPrefix + id
}
