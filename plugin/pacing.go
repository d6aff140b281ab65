package plugin

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Limits are the rate limits a platform publishes for a bot's requests,
// which the notification service keeps to instead of learning them from
// 429s (docs/PERFORMANCE.md, "Fan-out"). Each limit is a sliding window:
// at most N requests in any span of Window. A zero N is no limit.
type Limits struct {
	// Global bounds the bot's requests across all rooms (Discord: 50 a
	// second per bot; Slack: a workspace-wide limit of some hundreds of
	// messages a minute).
	Global Window
	// Spread sends the global window's requests Span/N apart once it is
	// half full, rather than in bursts of N, for a platform that counts its global limit
	// over a window of its own (Discord's second): a burst booked one
	// span after another reaches it with no slack, and a busy machine
	// that delays one burst more than the next crowds them into it.
	Spread bool
	// Room bounds the messages posted in one room (Discord: 5 in 5 s per
	// channel; Slack: about 1 a second per channel).
	Room Window
	// Bucket names what a room's messages count in for Room: the
	// platform's channel (a Discord thread is a channel of its own; a
	// Slack thread counts with its channel). Nil counts each room apart.
	Bucket func(room string) string
	// Bot names whose limits these are, the same in every replica sending
	// as that bot and never its token (BotKey makes one from it): the
	// replicas that share a database and a Bot share its limits
	// (docs/deploy.md, "What replicas share"). Empty paces each process alone.
	Bot string
}

// BotKey names a bot by its token without giving the token away: a
// digest of it, for Limits.Bot.
func BotKey(token string) string {
	sum := sha256.Sum256([]byte("taskloom pace\x00" + token))
	return hex.EncodeToString(sum[:12])
}

// Window is "at most N in any span of Span".
type Window struct {
	N    int
	Span time.Duration
}

// Limited is a Platform that publishes its rate limits.
type Limited interface {
	Limits() Limits
}
