package slackfake

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Payload is something Slack sends an app: an Events API event, a slash
// command or an interaction. Request sends it over HTTP, Deliver over
// Socket Mode.
type Payload interface {
	envelopeType() string
	path() string
	httpBody() (contentType string, body []byte, err error)
	socketPayload() (json.RawMessage, error)
}

// Event is an Events API event callback carrying a message event:
// app_mention, or message (message.im and the like).
type Event struct {
	TeamID      string
	APIAppID    string
	EventID     string
	EventTime   time.Time
	Type        string // "app_mention" or "message"
	User        string
	Text        string // as Slack writes it: &amp; &lt; &gt; escaped, <@U…> mentions
	Channel     string
	ChannelType string // "channel", "group", "im", "mpim"; "" for app_mention
	TS          string
	ThreadTS    string
	SubType     string // "message_changed", "bot_message", …
	BotID       string // set on bots' messages
	Edited      bool

	botUserID string // the app's bot user, in authorizations
}

var _ Payload = Event{}

func (Event) envelopeType() string { return EnvelopeEvents }
func (Event) path() string         { return "/slack/events" }

// callbackJSON wraps an inner event in the event callback Slack sends.
func callbackJSON(team, app, eventID string, at time.Time, botUserID string, inner map[string]any) ([]byte, error) {
	return json.Marshal(map[string]any{
		"token": "deprecated-verification-token", "team_id": team, "api_app_id": app,
		"event": inner, "type": "event_callback", "event_id": eventID, "event_time": at.Unix(),
		"authorizations":        []map[string]any{{"team_id": team, "user_id": botUserID, "is_bot": true}},
		"is_ext_shared_channel": false, "event_context": "4-" + eventID,
	})
}

// JSON is the event callback as Slack sends it.
func (e Event) JSON() ([]byte, error) {
	inner := map[string]any{
		"type": e.Type, "text": e.Text, "ts": e.TS, "channel": e.Channel, "event_ts": e.TS, "team": e.TeamID,
	}
	if e.User != "" {
		inner["user"] = e.User
	}
	if e.ChannelType != "" {
		inner["channel_type"] = e.ChannelType
	}
	if e.ThreadTS != "" {
		inner["thread_ts"] = e.ThreadTS
	}
	if e.SubType != "" {
		inner["subtype"] = e.SubType
	}
	if e.BotID != "" {
		inner["bot_id"] = e.BotID
	}
	if e.Edited {
		inner["edited"] = map[string]any{"user": e.User, "ts": e.TS}
	}
	if e.Type == "message" && e.SubType == "" && e.User != "" {
		inner["client_msg_id"] = "msg-" + e.EventID
	}
	return callbackJSON(e.TeamID, e.APIAppID, e.EventID, e.EventTime, e.botUserID, inner)
}

func (e Event) httpBody() (string, []byte, error) {
	b, err := e.JSON()
	return "application/json", b, err
}

func (e Event) socketPayload() (json.RawMessage, error) { return e.JSON() }

// InThread returns the event as posted in the thread of threadTS.
func (e Event) InThread(threadTS string) Event {
	e.ThreadTS = threadTS
	return e
}

// URLVerification is the challenge Slack sends when a request URL is set.
type URLVerification struct{ Challenge string }

var _ Payload = URLVerification{}

func (URLVerification) envelopeType() string { return EnvelopeEvents }
func (URLVerification) path() string         { return "/slack/events" }
func (u URLVerification) httpBody() (string, []byte, error) {
	b, err := json.Marshal(map[string]any{"token": "deprecated-verification-token", "challenge": u.Challenge, "type": "url_verification"})
	return "application/json", b, err
}
func (u URLVerification) socketPayload() (json.RawMessage, error) {
	return nil, fmt.Errorf("url_verification is not sent over Socket Mode")
}

// Command is a slash command invocation.
type Command struct {
	TeamID      string
	TeamDomain  string
	ChannelID   string
	ChannelName string
	UserID      string
	UserName    string
	Command     string // "/task"
	Text        string
	ResponseURL string
	TriggerID   string
	APIAppID    string
}

var _ Payload = Command{}

func (Command) envelopeType() string { return EnvelopeSlashCommand }
func (Command) path() string         { return "/slack/commands" }

func (c Command) fields() map[string]string {
	return map[string]string{
		"token": "deprecated-verification-token", "team_id": c.TeamID, "team_domain": c.TeamDomain,
		"channel_id": c.ChannelID, "channel_name": c.ChannelName, "user_id": c.UserID, "user_name": c.UserName,
		"command": c.Command, "text": c.Text, "response_url": c.ResponseURL, "trigger_id": c.TriggerID,
		"api_app_id": c.APIAppID, "is_enterprise_install": "false",
	}
}

// Form is the command as Slack posts it to a request URL.
func (c Command) Form() url.Values {
	v := url.Values{}
	for k, s := range c.fields() {
		v.Set(k, s)
	}
	return v
}

func (c Command) httpBody() (string, []byte, error) {
	return "application/x-www-form-urlencoded", []byte(c.Form().Encode()), nil
}

func (c Command) socketPayload() (json.RawMessage, error) { return json.Marshal(c.fields()) }

// Interaction is a block_actions interaction: a button pressed in a
// message, or, when ViewID is set, in a view (the Home tab).
type Interaction struct {
	TeamID      string
	UserID      string
	UserName    string
	ChannelID   string
	MessageTS   string
	ThreadTS    string
	IsEphemeral bool
	BlockID     string
	ActionID    string
	Value       string
	Label       string
	TriggerID   string
	ResponseURL string
	ActionTS    string
	APIAppID    string
	// ViewID is the view the button is in, for a press in the Home tab;
	// such a press has no channel, message or response URL.
	ViewID string

	botUserID string         // who posted the message
	view      map[string]any // the view as Slack sends it, with ViewID
}

var _ Payload = Interaction{}

func (Interaction) envelopeType() string { return EnvelopeInteractive }
func (Interaction) path() string         { return "/slack/interactions" }

// JSON is the interaction payload as Slack sends it.
func (in Interaction) JSON() ([]byte, error) {
	actions := []map[string]any{{
		"type": "button", "action_id": in.ActionID, "block_id": in.BlockID, "value": in.Value,
		"text": map[string]any{"type": "plain_text", "text": in.Label, "emoji": true}, "action_ts": in.ActionTS,
	}}
	if in.ViewID != "" {
		return json.Marshal(map[string]any{
			"type": "block_actions", "token": "deprecated-verification-token", "api_app_id": in.APIAppID,
			"user":      map[string]any{"id": in.UserID, "username": in.UserName, "name": in.UserName, "team_id": in.TeamID},
			"team":      map[string]any{"id": in.TeamID, "domain": "fake"},
			"container": map[string]any{"type": "view", "view_id": in.ViewID},
			"view":      in.view, "trigger_id": in.TriggerID, "actions": actions,
			"is_enterprise_install": false,
		})
	}
	container := map[string]any{"type": "message", "message_ts": in.MessageTS, "channel_id": in.ChannelID, "is_ephemeral": in.IsEphemeral}
	message := map[string]any{"type": "message", "ts": in.MessageTS, "user": in.botUserID}
	if in.ThreadTS != "" {
		container["thread_ts"] = in.ThreadTS
		message["thread_ts"] = in.ThreadTS
	}
	channelName := strings.ToLower(in.ChannelID)
	if strings.HasPrefix(in.ChannelID, "D") {
		channelName = "directmessage"
	}
	return json.Marshal(map[string]any{
		"type": "block_actions", "token": "deprecated-verification-token", "api_app_id": in.APIAppID,
		"user":       map[string]any{"id": in.UserID, "username": in.UserName, "name": in.UserName, "team_id": in.TeamID},
		"team":       map[string]any{"id": in.TeamID, "domain": "fake"},
		"channel":    map[string]any{"id": in.ChannelID, "name": channelName},
		"container":  container,
		"message":    message,
		"trigger_id": in.TriggerID, "response_url": in.ResponseURL,
		"actions": actions,
	})
}

func (in Interaction) httpBody() (string, []byte, error) {
	b, err := in.JSON()
	if err != nil {
		return "", nil, err
	}
	return "application/x-www-form-urlencoded", []byte(url.Values{"payload": {string(b)}}.Encode()), nil
}

func (in Interaction) socketPayload() (json.RawMessage, error) { return in.JSON() }

// AppMention is a message in channel that mentions the bot: text follows
// the mention, as Slack writes it.
func (s *Server) AppMention(channel, user, text string) Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.userLocked(user)
	ts := s.tsLocked()
	return Event{
		TeamID: s.cfg.teamID, APIAppID: s.cfg.appID, EventID: fmt.Sprintf("Ev%08d", s.nextLocked()), EventTime: s.cfg.now(),
		Type: "app_mention", User: user, Text: s.Mention() + " " + text, Channel: channel, TS: ts,
		botUserID: s.cfg.bot.ID,
	}
}

// DirectMessage is a message user sends the bot in their direct-message
// channel (a message.im event).
func (s *Server) DirectMessage(user, text string) Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.userLocked(user)
	ts := s.tsLocked()
	return Event{
		TeamID: s.cfg.teamID, APIAppID: s.cfg.appID, EventID: fmt.Sprintf("Ev%08d", s.nextLocked()), EventTime: s.cfg.now(),
		Type: "message", ChannelType: "im", User: user, Text: text, Channel: s.IMChannel(user), TS: ts,
		botUserID: s.cfg.bot.ID,
	}
}

// ChannelMessage is a message user posts in channel (a message.channels
// event); InThread makes it a reply in a thread.
func (s *Server) ChannelMessage(channel, user, text string) Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.userLocked(user)
	ts := s.tsLocked()
	return Event{
		TeamID: s.cfg.teamID, APIAppID: s.cfg.appID, EventID: fmt.Sprintf("Ev%08d", s.nextLocked()), EventTime: s.cfg.now(),
		Type: "message", ChannelType: "channel", User: user, Text: text, Channel: channel, TS: ts,
		botUserID: s.cfg.bot.ID,
	}
}

// SlashCommand is user typing "/task <text>" in channel. Its response URL
// is on this server.
func (s *Server) SlashCommand(channel, user, text string) Command {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.userLocked(user)
	name := strings.ToLower(channel)
	if strings.HasPrefix(channel, "D") {
		name = "directmessage"
	}
	return Command{
		TeamID: s.cfg.teamID, TeamDomain: "fake", ChannelID: channel, ChannelName: name,
		UserID: user, UserName: u.Name, Command: "/task", Text: text,
		ResponseURL: s.newResponseURLLocked(channel, user, ""),
		TriggerID:   s.triggerLocked(user), APIAppID: s.cfg.appID,
	}
}

// ButtonPress is user pressing the button of msg with actionID and value.
func (s *Server) ButtonPress(user string, msg Message, actionID, value string) (Interaction, error) {
	for _, b := range msg.Buttons() {
		if b.ActionID != actionID || b.Value != value {
			continue
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		u := s.userLocked(user)
		return Interaction{
			TeamID: s.cfg.teamID, UserID: user, UserName: u.Name, ChannelID: msg.Channel,
			MessageTS: msg.TS, ThreadTS: msg.ThreadTS, IsEphemeral: !msg.Visible(),
			BlockID: b.BlockID, ActionID: actionID, Value: value, Label: b.Label,
			TriggerID:   s.triggerLocked(user),
			ResponseURL: s.newResponseURLLocked(msg.Channel, user, msg.ThreadTS),
			ActionTS:    s.tsLocked(), APIAppID: s.cfg.appID, botUserID: s.cfg.bot.ID,
		}, nil
	}
	return Interaction{}, fmt.Errorf("no button %s with value %q in message %q", actionID, value, msg.Text)
}

// RequestOption changes how Request signs and labels a request.
type RequestOption func(*requestConfig)

type requestConfig struct {
	at          time.Time
	secret      string
	unsigned    bool
	retry       int
	retryReason string
	signature   string
}

// SignedAt signs with the timestamp t instead of now.
func SignedAt(t time.Time) RequestOption { return func(c *requestConfig) { c.at = t } }

// SignedWith signs with another secret: a forged request.
func SignedWith(secret string) RequestOption { return func(c *requestConfig) { c.secret = secret } }

// Signature sends sig as X-Slack-Signature instead of the right one.
func Signature(sig string) RequestOption { return func(c *requestConfig) { c.signature = sig } }

// Unsigned sends no signature headers.
func Unsigned() RequestOption { return func(c *requestConfig) { c.unsigned = true } }

// Retry marks the request as Slack's n-th retry of the same event
// (X-Slack-Retry-Num, X-Slack-Retry-Reason, e.g. "http_timeout").
func Retry(n int, reason string) RequestOption {
	return func(c *requestConfig) { c.retry, c.retryReason = n, reason }
}

// Request is the signed HTTP request Slack sends to the app's request URL
// for p: base (e.g. "http://taskloom.test" or an httptest server's URL)
// followed by /slack/events, /slack/commands or /slack/interactions.
func (s *Server) Request(ctx context.Context, base string, p Payload, opts ...RequestOption) (*http.Request, error) {
	c := requestConfig{at: s.cfg.now(), secret: s.cfg.signingSecret}
	for _, o := range opts {
		o(&c)
	}
	ct, body, err := p.httpBody()
	if err != nil {
		return nil, fmt.Errorf("build %s request: %w", p.path(), err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+p.path(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build %s request: %w", p.path(), err)
	}
	req.Header.Set("Content-Type", ct)
	req.Header.Set("User-Agent", "Slackbot 1.0 (+https://api.slack.com/robots)")
	if !c.unsigned {
		ts := strconv.FormatInt(c.at.Unix(), 10)
		sig := c.signature
		if sig == "" {
			sig = Sign(c.secret, ts, body)
		}
		req.Header.Set("X-Slack-Request-Timestamp", ts)
		req.Header.Set("X-Slack-Signature", sig)
	}
	if c.retry > 0 {
		req.Header.Set("X-Slack-Retry-Num", strconv.Itoa(c.retry))
		req.Header.Set("X-Slack-Retry-Reason", c.retryReason)
	}
	return req, nil
}

// Sign is Slack's v0 request signature: "v0=" and the hex HMAC-SHA256, keyed
// with the signing secret, of "v0:<timestamp>:<body>".
func Sign(secret, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%s:", timestamp)
	mac.Write(body)
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}
