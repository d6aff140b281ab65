package discordfake

import (
	"net/http"
	"strings"
	"sync"
	"time"
)

// Limits are the rate limits the fake enforces once EnforceLimits is
// called, by the wall clock as Discord does: Global requests in any
// second per bot (interaction callbacks, authorised by their token, are
// exempt), and PerChannel messages created in a channel per
// ChannelWindow, counted from the first of them as Discord's buckets are.
type Limits struct {
	Global        int
	PerChannel    int
	ChannelWindow time.Duration
}

// PublishedLimits are Discord's published limits: 50 requests a second
// per bot, 5 messages per 5 seconds per channel.
var PublishedLimits = Limits{Global: 50, PerChannel: 5, ChannelWindow: 5 * time.Second}

// limiter enforces Limits.
type limiter struct {
	mu        sync.Mutex
	lim       Limits
	recent    []time.Time // the bot's requests in the last second, oldest first
	buckets   map[string]*bucket
	throttled int
	global    int // of throttled, the global ones
}

// bucket is one channel's message bucket.
type bucket struct {
	reset     time.Time
	remaining int
}

// EnforceLimits makes the fake answer requests beyond l with 429, as
// Discord does: a global one (X-RateLimit-Global, scope "global") beyond
// l.Global a second, a channel's (scope "user") beyond l.PerChannel
// messages in its window. Answers to message creation carry the channel
// bucket's real X-RateLimit-Remaining and -Reset-After, which discordgo
// reads. Throttled counts the 429s.
func (s *Server) EnforceLimits(l Limits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits = &limiter{lim: l, buckets: map[string]*bucket{}}
}

// Throttled is how many requests the enforced limits answered with 429,
// and how many of those were global.
func (s *Server) Throttled() (all, global int) {
	s.mu.Lock()
	lm := s.limits
	s.mu.Unlock()
	if lm == nil {
		return 0, 0
	}
	lm.mu.Lock()
	defer lm.mu.Unlock()
	return lm.throttled, lm.global
}

// admit counts c against the limits: nil when it may go (with the
// channel bucket's state for its headers, when it creates a message), or
// the 429 to answer.
func (lm *limiter) admit(c *Call, now time.Time) (*fault, *bucketState) {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	if !strings.HasPrefix(c.Authorization, "Bot ") {
		return nil, nil
	}
	i := 0
	for i < len(lm.recent) && now.Sub(lm.recent[i]) >= time.Second {
		i++
	}
	lm.recent = lm.recent[i:]
	if lm.lim.Global > 0 && len(lm.recent) >= lm.lim.Global {
		lm.throttled++
		lm.global++
		return &fault{status: http.StatusTooManyRequests, retryAfter: lm.recent[0].Add(time.Second).Sub(now), global: true}, nil
	}
	var state *bucketState
	if channel, ok := createsMessage(c); ok && lm.lim.PerChannel > 0 {
		b := lm.buckets[channel]
		if b == nil || !now.Before(b.reset) {
			b = &bucket{reset: now.Add(lm.lim.ChannelWindow), remaining: lm.lim.PerChannel}
			lm.buckets[channel] = b
		}
		if b.remaining == 0 {
			lm.throttled++
			return &fault{status: http.StatusTooManyRequests, retryAfter: b.reset.Sub(now)}, nil
		}
		b.remaining--
		state = &bucketState{limit: lm.lim.PerChannel, remaining: b.remaining, resetAfter: b.reset.Sub(now)}
	}
	lm.recent = append(lm.recent, now)
	return nil, state
}

// bucketState is what a message creation's rate limit headers say.
type bucketState struct {
	limit, remaining int
	resetAfter       time.Duration
}

// createsMessage reports whether c creates a message, and in which
// channel.
func createsMessage(c *Call) (string, bool) {
	if c.Method != http.MethodPost {
		return "", false
	}
	rest, ok := strings.CutPrefix(c.Path, "/channels/")
	if !ok {
		return "", false
	}
	channel, tail, _ := strings.Cut(rest, "/")
	return channel, tail == "messages"
}
