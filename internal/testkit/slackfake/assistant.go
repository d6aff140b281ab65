package slackfake

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"time"
)

// AppEvent is an Events API event callback that is not a message:
// app_home_opened, assistant_thread_started.
type AppEvent struct {
	TeamID    string
	APIAppID  string
	EventID   string
	EventTime time.Time
	Type      string
	User      string
	// Channel and ThreadTS name the assistant thread an
	// assistant_thread_started event is about; Channel is the direct-
	// message channel an app_home_opened event is about.
	Channel  string
	ThreadTS string

	inner     map[string]any
	botUserID string
}

var _ Payload = AppEvent{}

func (AppEvent) envelopeType() string { return EnvelopeEvents }
func (AppEvent) path() string         { return "/slack/events" }

// JSON is the event callback as Slack sends it.
func (e AppEvent) JSON() ([]byte, error) {
	return callbackJSON(e.TeamID, e.APIAppID, e.EventID, e.EventTime, e.botUserID, e.inner)
}

func (e AppEvent) httpBody() (string, []byte, error) {
	b, err := e.JSON()
	return "application/json", b, err
}

func (e AppEvent) socketPayload() (json.RawMessage, error) { return e.JSON() }

// AppHomeOpened is user opening the app's Home tab (tab "home") or its
// Messages tab ("messages"). Like Slack, it carries the Home tab's view
// when one was published for the user.
func (s *Server) AppHomeOpened(user, tab string) AppEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.userLocked(user)
	ts := s.tsLocked()
	inner := map[string]any{"type": "app_home_opened", "user": user, "channel": s.IMChannel(user), "tab": tab, "event_ts": ts}
	if v, found := s.views[s.homes[user]]; found && tab == "home" {
		inner["view"] = s.wireView(v, map[string]any{})
	}
	return AppEvent{
		TeamID: s.cfg.teamID, APIAppID: s.cfg.appID, EventID: fmt.Sprintf("Ev%08d", s.nextLocked()), EventTime: s.cfg.now(),
		Type: "app_home_opened", User: user, Channel: s.IMChannel(user), inner: inner, botUserID: s.cfg.bot.ID,
	}
}

// assistantThread is a thread of the app's AI assistant container.
type assistantThread struct {
	user, channel, ts string
	title             string
	prompts           []Prompt
	status            string
	statusSet         time.Time
	// statusMark is how many messages there were when the status was set:
	// a post in the thread after it clears the status.
	statusMark int
}

// Prompt is a suggested prompt of an assistant thread.
type Prompt struct {
	Title   string `json:"title"`
	Message string `json:"message"`
}

func threadKey(channel, ts string) string { return channel + ":" + ts }

// AssistantThreadStarted is user opening a new thread in the app's
// assistant container while viewing contextChannel ("" for none): Slack
// starts the thread in the user's direct-message channel with the app and
// sends assistant_thread_started. The event's Channel and ThreadTS name the
// thread, where the user's messages then arrive as message.im events
// (DirectMessage(...).InThread(ThreadTS)).
func (s *Server) AssistantThreadStarted(user, contextChannel string) AppEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.userLocked(user)
	channel, ts := s.IMChannel(user), s.tsLocked()
	s.threads[threadKey(channel, ts)] = &assistantThread{user: user, channel: channel, ts: ts}
	ctx := map[string]any{}
	if contextChannel != "" {
		ctx = map[string]any{"channel_id": contextChannel, "team_id": s.cfg.teamID, "enterprise_id": ""}
	}
	inner := map[string]any{
		"type": "assistant_thread_started", "event_ts": s.tsLocked(),
		"assistant_thread": map[string]any{"user_id": user, "context": ctx, "channel_id": channel, "thread_ts": ts},
	}
	return AppEvent{
		TeamID: s.cfg.teamID, APIAppID: s.cfg.appID, EventID: fmt.Sprintf("Ev%08d", s.nextLocked()), EventTime: s.cfg.now(),
		Type: "assistant_thread_started", User: user, Channel: channel, ThreadTS: ts, inner: inner, botUserID: s.cfg.bot.ID,
	}
}

// setSuggestedPromptsLocked answers assistant.threads.setSuggestedPrompts:
// an assistant thread the fake started (channel_not_found,
// invalid_thread_ts), and one to four prompts, each with a title and a
// message (invalid_arguments).
func (s *Server) setSuggestedPromptsLocked(p url.Values) apiResult {
	th, res := s.assistantThreadLocked(p)
	if res.err != "" {
		return res
	}
	var prompts []Prompt
	if err := json.Unmarshal([]byte(p.Get("prompts")), &prompts); err != nil {
		return invalid("prompts must be a JSON array: %v", err)
	}
	if len(prompts) == 0 || len(prompts) > MaxSuggestedPrompts {
		return invalid("%d prompts; 1 to %d", len(prompts), MaxSuggestedPrompts)
	}
	for i, pr := range prompts {
		if pr.Title == "" || pr.Message == "" {
			return invalid("prompt %d needs a title and a message", i)
		}
	}
	th.title, th.prompts = p.Get("title"), prompts
	return ok(nil)
}

// setStatusLocked answers assistant.threads.setStatus: an empty status
// clears it. Slack takes the status in any thread the app may post in;
// the fake keeps it for assistant threads it started and channel threads
// alike.
func (s *Server) setStatusLocked(p url.Values) apiResult {
	channel, ts := p.Get("channel_id"), p.Get("thread_ts")
	switch {
	case channel == "":
		return fail("channel_not_found")
	case ts == "":
		return fail("invalid_thread_ts")
	case !p.Has("status"):
		return invalid("missing required field: status")
	}
	th, found := s.threads[threadKey(channel, ts)]
	if !found {
		th = &assistantThread{channel: channel, ts: ts}
		s.threads[threadKey(channel, ts)] = th
	}
	th.status, th.statusSet, th.statusMark = p.Get("status"), s.cfg.now(), len(s.messages)
	return ok(nil)
}

func (s *Server) assistantThreadLocked(p url.Values) (*assistantThread, apiResult) {
	channel, ts := p.Get("channel_id"), p.Get("thread_ts")
	if channel == "" {
		return nil, fail("channel_not_found")
	}
	th, found := s.threads[threadKey(channel, ts)]
	if !found || th.user == "" {
		return nil, fail("invalid_thread_ts")
	}
	return th, apiResult{}
}

// AssistantStatus is the status an assistant thread shows now: the last
// one set, unless it was cleared, the app has posted in the thread since
// (which ends it, as on Slack), or StatusTimeout has passed without a post.
func (s *Server) AssistantStatus(channel, threadTS string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statusLocked(channel, threadTS)
}

// WaitAssistantStatus waits until an assistant thread shows status ("" for
// none), as AssistantStatus tells it.
func (s *Server) WaitAssistantStatus(ctx context.Context, channel, threadTS, status string) error {
	var got string
	err := s.wait(ctx, func() bool {
		got = s.statusLocked(channel, threadTS)
		return got == status
	})
	if err != nil {
		return fmt.Errorf("waiting for the status %q of thread %s (it shows %q): %w", status, threadTS, got, err)
	}
	return nil
}

func (s *Server) statusLocked(channel, threadTS string) string {
	th, found := s.threads[threadKey(channel, threadTS)]
	if !found || th.status == "" {
		return ""
	}
	if s.cfg.now().Sub(th.statusSet) >= StatusTimeout {
		return ""
	}
	if slices.ContainsFunc(s.messages[th.statusMark:], func(m *Message) bool {
		return m.Kind == KindPost && m.Channel == channel && m.ThreadTS == threadTS
	}) {
		return ""
	}
	return th.status
}

// SuggestedPrompts returns the title and prompts last set for an assistant
// thread.
func (s *Server) SuggestedPrompts(channel, threadTS string) (string, []Prompt) {
	s.mu.Lock()
	defer s.mu.Unlock()
	th, found := s.threads[threadKey(channel, threadTS)]
	if !found {
		return "", nil
	}
	return th.title, slices.Clone(th.prompts)
}
