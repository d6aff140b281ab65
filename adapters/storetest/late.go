package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// A worker's iteration may outlast its lease. Its commit is then late,
// and the stores agree on one rule for it: the fence decides, not the
// clock. When nobody claimed the task meanwhile (its fence and owner are
// still the worker's), the result is taken, with UpdateTask and with
// UpdateTaskAndClaim alike; when another worker claimed it (the fence
// moved on), the result is refused as stale and nothing is written or
// claimed.

// lateCommit commits an iteration of claimed at now, with UpdateTask or,
// when withClaim, with UpdateTaskAndClaim claiming w1's next task at now.
func lateCommit(t *testing.T, s domain.Store, claimed domain.Task, now time.Time, withClaim bool) (after, next domain.Task, err error) {
	t.Helper()
	o := outcome(claimed, now, 30, domain.VerdictContinue)
	fn := func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, o) }
	if withClaim {
		return nextClaimer(t, s).UpdateTaskAndClaim(t.Context(), claimed.Number, fn, domain.Claim{Owner: claimed.LeaseOwner, Now: now, Lease: time.Minute})
	}
	after, err = s.UpdateTask(t.Context(), claimed.Number, fn)
	return after, domain.Task{}, err
}

// testLateCommitUncontested: a commit made after its lease ended, with no
// other claim of the task since, is taken; with a claim of the worker's
// next task, that claim takes another task (or none), never the one being
// committed.
func testLateCommitUncontested(t *testing.T, s domain.Store) {
	for _, c := range []struct {
		name      string
		withClaim bool
		other     bool // another task is ready for the claim
	}{
		{"UpdateTask", false, false},
		{"UpdateTaskAndClaim with another task ready", true, true},
		{"UpdateTaskAndClaim alone", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := create(t, s, newTask("Late "+c.name))
			claimed := claim(t, s, "w1", at(time.Second), time.Minute)
			if claimed.Number != a.Number {
				t.Fatalf("claimed #%d, want #%d", claimed.Number, a.Number)
			}
			var b domain.Task
			if c.other {
				b = create(t, s, newTask("Ready "+c.name))
			}
			late := at(5 * time.Minute) // four minutes past the lease
			after, next, err := lateCommit(t, s, claimed, late, c.withClaim)
			if err != nil {
				t.Fatalf("late, uncontested commit: %v; want it taken", err)
			}
			if after.Number != a.Number || after.Iteration != 1 || after.Progress != 30 || after.LeaseOwner != "" || after.Fence != claimed.Fence {
				t.Errorf("after = #%d iteration %d progress %d owner %q fence %d; want #%d committed at fence %d and given back",
					after.Number, after.Iteration, after.Progress, after.LeaseOwner, after.Fence, a.Number, claimed.Fence)
			}
			committed := get(t, s, a.Number)
			switch {
			case c.other:
				sameTask(t, "the task committed", committed, after)
				if next.Number != b.Number || next.LeaseOwner != "w1" {
					t.Errorf("claimed with the commit: #%d by %q; want #%d by w1", next.Number, next.LeaseOwner, b.Number)
				}
			case next.Number == 0:
				sameTask(t, "the task committed", committed, after)
			default:
				// A store that claims after its commit may hand the
				// worker the task it gave back, the only one ready, in
				// a claim of its own: a new fence, never the old one.
				if next.Number != a.Number || next.Fence != claimed.Fence+1 || next.LeaseOwner != "w1" || committed.Iteration != 1 {
					t.Errorf("claimed with the commit: #%d at fence %d by %q; want nothing, or #%d claimed afresh at fence %d by w1",
						next.Number, next.Fence, next.LeaseOwner, a.Number, claimed.Fence+1)
				}
			}
			for _, e := range events(t, s, a.Number) {
				if e.Type == domain.EventResultRejected {
					t.Errorf("task #%d has a result_rejected event", a.Number)
				}
			}
			switch {
			case c.other:
				iterate(t, s, next, at(6*time.Minute), 10, domain.VerdictDone)
				check(t, s, b.Number)
				fallthrough
			case next.Number == 0:
				// The task is back in the queue, served after every other.
				if got := claim(t, s, "w2", at(7*time.Minute), time.Minute); got.Number != a.Number || got.Fence != claimed.Fence+1 {
					t.Errorf("next claim: #%d at fence %d; want #%d at fence %d", got.Number, got.Fence, a.Number, claimed.Fence+1)
				}
			}
			check(t, s, a.Number)
			// Leave the queue empty for the next case.
			update(t, s, a.Number, func(cur domain.Task) (domain.Mutation, error) {
				return domain.Canceled(cur, "test", "", at(8*time.Minute))
			})
		})
	}
}

// testLateCommitContested: a commit made after its lease ended, once
// another worker has claimed the task, is refused as stale, writes
// nothing and claims nothing; the other worker's commit is taken.
func testLateCommitContested(t *testing.T, s domain.Store) {
	for _, withClaim := range []bool{false, true} {
		name := "UpdateTask"
		if withClaim {
			name = "UpdateTaskAndClaim"
		}
		t.Run(name, func(t *testing.T) {
			a := create(t, s, newTask("Contested "+name))
			first := claim(t, s, "w1", at(time.Second), time.Minute)
			second := claim(t, s, "w2", at(2*time.Minute), time.Hour)
			if first.Number != a.Number || second.Number != a.Number || second.Fence != first.Fence+1 {
				t.Fatalf("claims: #%d, then #%d at fence %d; want #%d twice, the second at fence %d",
					first.Number, second.Number, second.Fence, a.Number, first.Fence+1)
			}
			b := create(t, s, newTask("Ready "+name))
			before := get(t, s, a.Number)
			after, next, err := lateCommit(t, s, first, at(3*time.Minute), withClaim)
			if !errors.Is(err, domain.ErrStaleFence) || after.Number != 0 || next.Number != 0 {
				t.Fatalf("late, contested commit = #%d, #%d, %v; want nothing and ErrStaleFence", after.Number, next.Number, err)
			}
			sameTask(t, "the task after the refused commit", get(t, s, a.Number), before)
			sameTask(t, "the task the refused commit did not claim", get(t, s, b.Number), b)
			if done := iterate(t, s, second, at(4*time.Minute), 40, domain.VerdictDone); done.Iteration != 1 || done.Status != domain.StatusCompleted {
				t.Errorf("w2's commit: iteration %d, %s; want its result taken", done.Iteration, done.Status)
			}
			b = claim(t, s, "w3", at(5*time.Minute), time.Minute)
			iterate(t, s, b, at(6*time.Minute), 100, domain.VerdictDone)
			check(t, s, a.Number, b.Number)
		})
	}
}
