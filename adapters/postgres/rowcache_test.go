package postgres

import (
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
)

// TestMutationStartsFromTheClaimedRow: the mutation of a task the store
// claimed starts from the claimed row, without reading it again.
func TestMutationStartsFromTheClaimedRow(t *testing.T) {
	ctx := t.Context()
	s := open(t)
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := s.CreateTask(ctx, domain.NewTask{Goal: "one", Now: now}); err != nil {
		t.Fatal(err)
	}
	claimed, err := s.ClaimTask(ctx, domain.Claim{Owner: "w1", Now: now, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.claimed.take(claimed.Number); !ok {
		t.Fatal("the claim left no row for the mutation to start from")
	}
	s.claimed.put(claimed)
	var got domain.Task
	if _, err := s.UpdateTask(ctx, claimed.Number, func(cur domain.Task) (domain.Mutation, error) {
		got = cur
		return domain.Released(cur, "w1", claimed.Fence, now.Add(time.Second))
	}); err != nil {
		t.Fatal(err)
	}
	if got != claimed {
		t.Errorf("the mutation started from %+v, want the claimed row %+v", got, claimed)
	}
	if _, ok := s.claimed.take(claimed.Number); ok {
		t.Error("the written row is still kept: the next mutation would start from a row that is gone")
	}
}

// TestMutationOfAChangedClaimedRow: when another replica changed a task
// after this one claimed it, the mutation does not start from the claimed
// row: it is computed again from the current one, and nothing the other
// replica wrote is lost.
func TestMutationOfAChangedClaimedRow(t *testing.T) {
	ctx := t.Context()
	url := testkit.PostgresURL(t)
	a, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if err := a.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := a.CreateTask(ctx, domain.NewTask{Goal: "one", Now: now}); err != nil {
		t.Fatal(err)
	}
	claimed, err := a.ClaimTask(ctx, domain.Claim{Owner: "w1", Now: now, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	// Replica b pauses the task while a's iteration runs.
	paused, err := b.UpdateTask(ctx, claimed.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Paused(cur, "someone", now.Add(time.Second))
	})
	if err != nil {
		t.Fatal(err)
	}
	var seen []domain.Task
	after, err := a.UpdateTask(ctx, claimed.Number, func(cur domain.Task) (domain.Mutation, error) {
		seen = append(seen, cur)
		return domain.Iterated(cur, domain.Outcome{Owner: "w1", Fence: claimed.Fence, Now: now.Add(2 * time.Second),
			Progress: 10, Verdict: domain.VerdictContinue, Step: domain.Step{Action: "noop", Success: true}})
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0] != claimed || seen[1] != paused {
		t.Errorf("the mutation was computed from %d rows; want the claimed one, then the current one", len(seen))
	}
	if after.Status != domain.StatusPaused || after.EventSeq != paused.EventSeq+1 {
		t.Errorf("after the iteration the task is %s with event %d; want it still paused, with event %d", after.Status, after.EventSeq, paused.EventSeq+1)
	}
	evs, err := a.TaskEvents(ctx, claimed.Number, 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for i, e := range evs {
		types = append(types, e.Type)
		if e.Sequence != int64(i+1) {
			t.Errorf("event %d has sequence %d", i+1, e.Sequence)
		}
	}
	if len(evs) != 4 || evs[2].Type != domain.EventPaused || evs[3].Type != domain.EventIterated {
		t.Errorf("events %v; want created, claimed, paused, iterated", types)
	}
}

// TestClaimedRowWrittenTwice: a mutation of a claimed task that waits on
// subtasks which have all ended resumes it in the same transaction, a
// second write of the row the first one started from the claim.
func TestClaimedRowWrittenTwice(t *testing.T) {
	ctx := t.Context()
	s := open(t)
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	parent, err := s.CreateTask(ctx, domain.NewTask{Goal: "parent", Now: now, MaxIterations: 10, MaxStaleIterations: 10})
	if err != nil {
		t.Fatal(err)
	}
	child, err := s.CreateTask(ctx, domain.NewTask{Goal: "child", Now: now, ParentNumber: parent.Number})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateTask(ctx, child.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Canceled(cur, "u1", "not needed", now.Add(time.Second))
	}); err != nil {
		t.Fatal(err)
	}
	c, err := s.ClaimTask(ctx, domain.Claim{Owner: "w1", Now: now.Add(time.Minute), Lease: time.Minute})
	if err != nil || c.Number != parent.Number {
		t.Fatalf("claimed #%d, %v; want the parent", c.Number, err)
	}
	_, err = s.UpdateTask(ctx, c.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Iterated(cur, domain.Outcome{Owner: "w1", Fence: c.Fence, Now: now.Add(time.Minute + time.Second),
			Progress: 10, Verdict: domain.VerdictContinue, Wait: domain.WaitSubtasks, Step: domain.Step{Action: "create_subtask", Success: true}})
	})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := s.GetTask(ctx, parent.Number)
	if err != nil {
		t.Fatal(err)
	}
	if stored.WaitingOn == domain.WaitSubtasks || stored.EventSeq != 5 {
		t.Errorf("stored parent: waiting on %q at event %d; want it resumed, at event 5", stored.WaitingOn, stored.EventSeq)
	}
}
