package tasks

import (
	"math/rand/v2"
	"sync"
	"time"
)

// Model availability (docs/tasks.md).
const (
	// firstModelBackoff doubles with each transient failure in a row, up
	// to maxModelBackoff.
	firstModelBackoff = 2 * time.Second
	maxModelBackoff   = 5 * time.Minute
	// breakerThreshold transient failures in a row open the breaker.
	breakerThreshold = 3
	// holdProbe is how often a replica on hold tries the model again.
	holdProbe = 60 * time.Second
)

// breaker is a replica's view of the model: closed (claim freely), open
// after breakerThreshold transient failures in a row (claim nothing until
// the backoff ends, then one probe), or on hold after a permanent failure
// (claim nothing; one probe every holdProbe). A success closes it.
type breaker struct {
	mu        sync.Mutex
	failures  int       // transient failures in a row
	openUntil time.Time // no claim before, once failures reach the threshold
	probing   bool      // one probe is out: nobody else claims
	hold      string    // why the model refused; "" when not on hold
	holdUntil time.Time // next probe while on hold
	// jitter picks a wait in [d/2, d]; tests may fix it.
	jitter func(time.Duration) time.Duration
}

func newBreaker() *breaker {
	return &breaker{jitter: func(d time.Duration) time.Duration {
		return d/2 + rand.N(d/2+1)
	}}
}

// allow reports whether a worker may claim a task at now; if not, wait is
// how long until it may try again. A claim allowed while the breaker is
// open or on hold is the one probe.
func (b *breaker) allow(now time.Time) (ok bool, wait time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if gated, wait := b.gate(now); gated {
		return false, wait
	}
	if b.hold != "" || b.failures >= breakerThreshold {
		b.probing = true
	}
	return true, 0
}

// blocked reports, without taking the probe, whether a claim would be
// refused at now, and for how long.
func (b *breaker) blocked(now time.Time) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.gate(now)
}

// gate says, with b.mu held, whether claims are refused at now and for
// how long: on hold or open until the backoff ends, then while the one
// probe is out.
func (b *breaker) gate(now time.Time) (bool, time.Duration) {
	var until time.Time
	switch {
	case b.hold != "":
		until = b.holdUntil
	case b.failures >= breakerThreshold:
		until = b.openUntil
	default:
		return false, 0
	}
	if now.Before(until) {
		return true, until.Sub(now)
	}
	if b.probing {
		return true, firstModelBackoff
	}
	return false, 0
}

// abandon gives back a probe that made no model call (nothing was
// claimable, or the claim failed).
func (b *breaker) abandon() {
	b.mu.Lock()
	b.probing = false
	b.mu.Unlock()
}

// success closes the breaker. It reports the hold it lifted, if any.
func (b *breaker) success() (lifted string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	lifted = b.hold
	b.failures, b.probing, b.hold = 0, false, ""
	return lifted
}

// transient counts a transient failure at now and returns the backoff
// before the task that met it may be tried again.
func (b *breaker) transient(now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures++
	b.probing = false
	d := firstModelBackoff
	for i := 1; i < b.failures && d < maxModelBackoff; i++ {
		d *= 2
	}
	d = b.jitter(min(d, maxModelBackoff))
	if b.failures >= breakerThreshold {
		b.openUntil = now.Add(d)
	}
	return d
}

// permanent puts the replica on hold at now for reason. It reports
// whether the replica was not on hold before (say so once).
func (b *breaker) permanent(now time.Time, reason string) (first bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	first = b.hold == ""
	b.hold, b.holdUntil, b.probing = reason, now.Add(holdProbe), false
	return first
}

// state is what /readyz says of the model: "ok", "degraded" while
// transient failures last, or "on hold: <reason>".
func (b *breaker) state() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.hold != "":
		return "on hold: " + b.hold
	case b.failures > 0:
		return "degraded"
	}
	return "ok"
}
