package domain

import (
	"fmt"
	"time"
)

// Claim is a worker's request for the next task.
type Claim struct {
	Owner string
	Now   time.Time
	Lease time.Duration
	// StoreClock measures the lease on the store's clock, which every
	// replica shares, instead of Now (docs/security.md).
	StoreClock bool
}

// Claimed applies a claim to a task the queue handed out: a new lease, the
// fence token incremented, status running. Stores run the same change as one
// SQL statement and record it with ClaimedEvent.
func Claimed(t Task, c Claim) (Mutation, error) {
	if !t.Status.Claimable() {
		return Mutation{}, &TaskError{Op: "claim", Number: t.Number, Status: t.Status, Err: ErrInvalidState}
	}
	if t.HasLease(c.Now) {
		return Mutation{}, &TaskError{Op: "claim", Number: t.Number, Err: fmt.Errorf("%w: leased by %s", ErrInvalidState, t.LeaseOwner)}
	}
	after := t
	after.Status = StatusRunning
	after.LeaseOwner = c.Owner
	after.LeaseExpiresAt = UTC(c.Now.Add(c.Lease))
	after.Fence++
	if after.StartedAt.IsZero() {
		after.StartedAt = UTC(c.Now)
	}
	return Change(t, after, EventClaimed, c.Owner, c.Now, nil)
}
