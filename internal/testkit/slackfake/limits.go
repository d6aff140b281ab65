package slackfake

import (
	"net/http"
	"net/url"
	"time"
)

// Limits are the limits on chat.postMessage the fake enforces once
// EnforceLimits is called, by the wall clock: at most PerChannel messages
// in any ChannelWindow in one channel (its threads included), and, when
// Workspace is set, at most that many in any WorkspaceWindow across the
// workspace.
type Limits struct {
	PerChannel      int
	ChannelWindow   time.Duration
	Workspace       int
	WorkspaceWindow time.Duration
}

// PublishedLimits are what Slack publishes for chat.postMessage: "one
// message per second per channel", with "short bursts" allowed, read as
// at most 4 in any 4 seconds. Slack's workspace-wide limit has no
// published figure, so none is enforced by default.
var PublishedLimits = Limits{PerChannel: 4, ChannelWindow: 4 * time.Second}

// limiter enforces Limits: the times of recent messages, oldest first.
type limiter struct {
	lim       Limits
	channels  map[string][]time.Time
	workspace []time.Time
	throttled int
}

// EnforceLimits makes chat.postMessage beyond l answer 429 with
// Retry-After and {"ok":false,"error":"ratelimited"}, as Slack does.
// Throttled counts those answers.
func (s *Server) EnforceLimits(l Limits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits = &limiter{lim: l, channels: map[string][]time.Time{}}
}

// Throttled is how many calls the enforced limits answered with 429.
func (s *Server) Throttled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limits == nil {
		return 0
	}
	return s.limits.throttled
}

// limitLocked counts a call against the limits, with s.mu held: ok, or
// the 429 to answer.
func (s *Server) limitLocked(method string, p url.Values, now time.Time) (fault, bool) {
	lm := s.limits
	if lm == nil || method != "chat.postMessage" {
		return fault{}, false
	}
	channel := p.Get("channel")
	recent := within(lm.channels[channel], now, lm.lim.ChannelWindow)
	lm.workspace = within(lm.workspace, now, lm.lim.WorkspaceWindow)
	var wait time.Duration
	if lm.lim.PerChannel > 0 && len(recent) >= lm.lim.PerChannel {
		wait = recent[0].Add(lm.lim.ChannelWindow).Sub(now)
	}
	if lm.lim.Workspace > 0 && len(lm.workspace) >= lm.lim.Workspace {
		wait = max(wait, lm.workspace[0].Add(lm.lim.WorkspaceWindow).Sub(now))
	}
	if wait > 0 {
		lm.channels[channel] = recent
		lm.throttled++
		return fault{status: http.StatusTooManyRequests, errCode: "ratelimited", retryAfter: wait}, true
	}
	lm.channels[channel] = append(recent, now)
	lm.workspace = append(lm.workspace, now)
	return fault{}, false
}

// within drops the times older than window before now.
func within(times []time.Time, now time.Time, window time.Duration) []time.Time {
	i := 0
	for i < len(times) && now.Sub(times[i]) >= window {
		i++
	}
	return times[i:]
}
