package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// nextClaimer is s as a domain.NextClaimer: every store of the suite is
// one.
func nextClaimer(t *testing.T, s domain.Store) domain.NextClaimer {
	t.Helper()
	nc, ok := s.(domain.NextClaimer)
	if !ok {
		t.Fatalf("%T is not a domain.NextClaimer", s)
	}
	return nc
}

// iterateAndClaim commits an iteration of claimed at now, with progress
// and verdict v, claiming w1's next task at claimAt.
func iterateAndClaim(t *testing.T, nc domain.NextClaimer, claimed domain.Task, now time.Time, progress int, v domain.Verdict, claimAt time.Time) (after, next domain.Task, err error) {
	t.Helper()
	o := outcome(claimed, now, progress, v)
	return nc.UpdateTaskAndClaim(t.Context(), claimed.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Iterated(cur, o)
	}, domain.Claim{Owner: "w1", Now: claimAt, Lease: time.Hour})
}

// testUpdateAndClaim: a worker's commit claims its next task, the one
// ClaimTask would have claimed right after the commit, and both are
// written as ClaimTask and UpdateTask write them.
func testUpdateAndClaim(t *testing.T, s domain.Store) {
	nc := nextClaimer(t, s)
	a := create(t, s, newTask("Ahead A"))
	b := create(t, s, newTask("Ahead B"))
	c := create(t, s, newTask("Ahead C"))
	claimedA := claim(t, s, "w1", at(time.Second), time.Hour)
	after, next, err := iterateAndClaim(t, nc, claimedA, at(10*time.Second), 10, domain.VerdictContinue, at(11*time.Second))
	if err != nil {
		t.Fatalf("UpdateTaskAndClaim: %v", err)
	}
	if after.Number != a.Number || after.LeaseOwner != "" || after.Iteration != 1 || !after.LastProcessedAt.Equal(at(10*time.Second)) {
		t.Errorf("after = #%d, owner %q, iteration %d, processed %v; want #%d given back after its first iteration at %v",
			after.Number, after.LeaseOwner, after.Iteration, after.LastProcessedAt, a.Number, at(10*time.Second))
	}
	sameTask(t, "the task committed", get(t, s, a.Number), after)
	want := b
	want.Status = domain.StatusRunning
	want.LeaseOwner = "w1"
	want.LeaseExpiresAt = at(11*time.Second + time.Hour)
	want.Fence = 1
	want.StartedAt = at(11 * time.Second)
	want.EventSeq = 2
	sameTask(t, "the task claimed with the commit", next, want)
	sameTask(t, "the stored task claimed with the commit", get(t, s, b.Number), want)
	evs := events(t, s, b.Number)
	if got := eventTypes(evs); !slices.Equal(got, []string{domain.EventCreated, domain.EventClaimed}) {
		t.Fatalf("events of #%d = %v, want created, claimed", b.Number, got)
	}
	if ev := evs[1]; ev.Fence != 1 || ev.Actor != "w1" || !ev.Time.Equal(at(11*time.Second)) {
		t.Errorf("claimed event = %+v", ev)
	}

	// C goes to another worker; w1's next commit takes A again, served
	// longest ago of the tasks free.
	if got := claim(t, s, "w2", at(12*time.Second), time.Hour); got.Number != c.Number {
		t.Fatalf("w2 claimed #%d, want #%d", got.Number, c.Number)
	}
	_, next, err = iterateAndClaim(t, nc, next, at(20*time.Second), 20, domain.VerdictContinue, at(21*time.Second))
	if err != nil {
		t.Fatalf("second UpdateTaskAndClaim: %v", err)
	}
	if next.Number != a.Number || next.Fence != 2 || next.LeaseOwner != "w1" {
		t.Errorf("second claim = #%d at fence %d by %q, want #%d at fence 2 by w1", next.Number, next.Fence, next.LeaseOwner, a.Number)
	}
	// The task it claimed is written as it was claimed: its next commit
	// goes through.
	iterate(t, s, next, at(30*time.Second), 30, domain.VerdictContinue)
	check(t, s, a.Number, b.Number, c.Number)
}

// testUpdateAndClaimFails: a mutation refused claims nothing — neither its
// own error nor a lost lease leaves the next task leased.
func testUpdateAndClaimFails(t *testing.T, s domain.Store) {
	nc := nextClaimer(t, s)
	a := create(t, s, newTask("Refused A"))
	b := create(t, s, newTask("Refused B"))
	claimedA := claim(t, s, "w1", at(time.Second), time.Hour)
	refused := errors.New("refused")
	stale := outcome(claimedA, at(10*time.Second), 10, domain.VerdictContinue)
	stale.Fence++
	for _, c := range []struct {
		name string
		fn   domain.MutateFunc
		want error
	}{
		{"its own error", func(domain.Task) (domain.Mutation, error) { return domain.Mutation{}, refused }, refused},
		{"a stale fence", func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, stale) }, domain.ErrStaleFence},
	} {
		after, next, err := nc.UpdateTaskAndClaim(t.Context(), a.Number, c.fn, domain.Claim{Owner: "w1", Now: at(11 * time.Second), Lease: time.Hour})
		if !errors.Is(err, c.want) || after.Number != 0 || next.Number != 0 {
			t.Errorf("%s: UpdateTaskAndClaim = #%d, #%d, %v; want nothing and %v", c.name, after.Number, next.Number, err, c.want)
		}
		sameTask(t, c.name+": the task not committed", get(t, s, a.Number), claimedA)
		sameTask(t, c.name+": the task not claimed", get(t, s, b.Number), b)
	}
	// Nor does a claim that is invalid: the commit is not made.
	if _, _, err := nc.UpdateTaskAndClaim(t.Context(), a.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Iterated(cur, outcome(claimedA, at(10*time.Second), 10, domain.VerdictContinue))
	}, domain.Claim{Now: at(11 * time.Second), Lease: time.Hour}); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("a claim without an owner: %v, want ErrInvalid", err)
	}
	sameTask(t, "an invalid claim: the task not committed", get(t, s, a.Number), claimedA)
	if got := claim(t, s, "w2", at(12*time.Second), time.Hour); got.Number != b.Number {
		t.Errorf("after the refusals, the queue's head is #%d, want #%d", got.Number, b.Number)
	}
	check(t, s, a.Number, b.Number)
}

// testUpdateAndClaimEmpty: the commit claims from the queue as it stands
// when the transaction begins, where the task committed is still the
// worker's: with no other task ready it claims nothing, commits all the
// same, and the task it gave back is the next claim's.
func testUpdateAndClaimEmpty(t *testing.T, s domain.Store) {
	nc := nextClaimer(t, s)
	a := create(t, s, newTask("Alone"))
	claimed := claim(t, s, "w1", at(time.Second), time.Hour)
	after, next, err := iterateAndClaim(t, nc, claimed, at(10*time.Second), 10, domain.VerdictContinue, at(11*time.Second))
	if err != nil || after.Iteration != 1 || after.LeaseOwner != "" || next.Number != 0 {
		t.Fatalf("UpdateTaskAndClaim = #%d iteration %d owner %q, #%d, %v; want the task committed and given back, nothing claimed",
			after.Number, after.Iteration, after.LeaseOwner, next.Number, err)
	}
	sameTask(t, "the task given back", get(t, s, a.Number), after)
	again := claim(t, s, "w1", at(12*time.Second), time.Hour)
	if again.Number != a.Number || again.Fence != 2 {
		t.Fatalf("the next claim took #%d at fence %d, want #%d at fence 2", again.Number, again.Fence, a.Number)
	}
	after, next, err = iterateAndClaim(t, nc, again, at(20*time.Second), 100, domain.VerdictDone, at(21*time.Second))
	if err != nil || after.Status != domain.StatusCompleted || next.Number != 0 {
		t.Fatalf("UpdateTaskAndClaim = #%d %s, #%d, %v; want the task completed and nothing claimed", after.Number, after.Status, next.Number, err)
	}
	check(t, s, a.Number)
}

// testClaimsAheadTakeTurns is testClaimsTakeTurns with workers that claim
// their next task with each commit.
func testClaimsAheadTakeTurns(t *testing.T, s domain.Store) {
	if bad, claims := TakeTurns(t, s, 24, 8, 60, true); bad > 0 {
		t.Errorf("%d of %d claims were out of turn", bad, claims)
	}
}
