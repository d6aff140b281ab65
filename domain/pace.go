package domain

import (
	"context"
	"time"
)

// PaceShares is a Store through which the replicas that send as one bot
// share the rate limits the platform sets that bot (docs/deploy.md,
// "What replicas share"): each replica beats every second, the members
// of the second before split the bot's global limit between them, and a
// room's window of recent messages is kept where every replica books in
// it. adapters/postgres implements it; a store without it (SQLite: one
// process) leaves each process's pacer alone.
type PaceShares interface {
	// PaceBeat records that m.Replica, sending as m.Bot on m.Platform, is
	// alive at m.At and asked for m.Demand requests before epoch m.Epoch
	// (over the bot's global window, at least a beat period). A
	// replica's first beat of an epoch records its demand for that
	// epoch, the epoch before's kept as PrevEpoch and PrevDemand; a
	// later beat of the same epoch changes only At. It
	// returns the members of that bot seen after m.At-ttl, m among them,
	// ordered by replica. Members not seen for much longer than ttl are
	// deleted, and so are room windows long over.
	PaceBeat(ctx context.Context, m PaceMember, ttl time.Duration) ([]PaceMember, error)
	// PaceLeave deletes a member: a replica that stops gives its share
	// back at once.
	PaceLeave(ctx context.Context, platform, bot, replica string) error
	// PaceRoom books one request in a room's window (bucket) of bot at
	// at, when fewer than n were booked there in (at-span, at], and
	// reports ok; otherwise it books nothing and returns when the window
	// has room. It keeps only the latest n bookings of a window.
	PaceRoom(ctx context.Context, platform, bot, bucket string, at time.Time, n int, span time.Duration) (free time.Time, ok bool, err error)
}

// PaceMember is one replica sending as one bot on one platform, as its
// last beat left it.
type PaceMember struct {
	Platform string
	// Bot names the bot whose limits are shared: an ID the platform
	// gives it, or a digest of its token, never the token.
	Bot     string
	Replica string
	// At is when the replica last beat, on the clock the replicas share.
	At time.Time
	// Epoch is the epoch (a count of beat periods) of the replica's
	// latest beat, and Demand how many requests it said it asked for
	// then; PrevEpoch and PrevDemand are those of the beat before.
	Epoch      int64
	Demand     int
	PrevEpoch  int64
	PrevDemand int
}
