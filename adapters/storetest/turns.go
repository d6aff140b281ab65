package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// Ledger records the claims and releases of a queue with the time of their
// calls, to count out-of-turn claims afterwards (docs/PERFORMANCE.md). It is safe
// for concurrent use; the zero Ledger is empty and ready.
type Ledger struct {
	mu       sync.Mutex
	claims   []claimRec
	releases []releaseRec
}

// claimRec is one claim: the task, the fence it took, its queue key before
// the claim (last_processed_at, zero when never processed), and when the
// call began and returned.
type claimRec struct {
	task, fence int64
	key         time.Time
	start, end  time.Time
}

// releaseRec is the commit that gave back the lease of fence and left task
// claimable with key; it returned at end.
type releaseRec struct {
	task, fence int64
	key         time.Time
	end         time.Time
}

// Claimed records a claim of task that took fence, with the task's
// last_processed_at before it (key, zero when never processed); the call
// began at start and returned at end.
func (l *Ledger) Claimed(task, fence int64, key, start, end time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.claims = append(l.claims, claimRec{task, fence, domain.UTC(key), start, end})
}

// Released records a commit, returned at end, that gave back the lease of
// fence and left task claimable with last_processed_at key.
func (l *Ledger) Released(task, fence int64, key, end time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.releases = append(l.releases, releaseRec{task, fence, domain.UTC(key), end})
}

// Reset empties the ledger.
func (l *Ledger) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.claims, l.releases = nil, nil
}

// before is the queue's order: never processed first, then oldest, then
// lowest number.
func before(ka time.Time, na int64, kb time.Time, nb int64) bool {
	switch {
	case ka.IsZero() != kb.IsZero():
		return ka.IsZero()
	case !ka.Equal(kb):
		return ka.Before(kb)
	}
	return na < nb
}

// OutOfTurn counts the claims that took a task while another one was
// claimable throughout the claim and came before it in the queue's order,
// and says how many claims there were. "Throughout": the other's release
// had returned before the claim began, and its next claim (the one with the
// next fence) began after the claim returned. The database then had it
// committed, unclaimed and locked by no claimer for the whole statement,
// so passing over it broke the order. initial are tasks never claimed
// before start, claimable from then on.
func (l *Ledger) OutOfTurn(initial []int64, start time.Time) (bad, claims int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	type span struct {
		task        int64
		key         time.Time
		from, until time.Time
	}
	type tf struct{ task, fence int64 }
	claimAt := map[tf]time.Time{}
	for _, c := range l.claims {
		claimAt[tf{c.task, c.fence}] = c.start
	}
	forever := start.Add(1000 * time.Hour)
	until := func(task, fence int64) time.Time {
		if t, ok := claimAt[tf{task, fence + 1}]; ok {
			return t
		}
		return forever
	}
	var spans []span
	for _, n := range initial {
		spans = append(spans, span{n, time.Time{}, start, until(n, 0)})
	}
	for _, r := range l.releases {
		spans = append(spans, span{r.task, r.key, r.end, until(r.task, r.fence)})
	}
	for _, c := range l.claims {
		for _, s := range spans {
			if s.task != c.task && !s.from.After(c.start) && !s.until.Before(c.end) && before(s.key, s.task, c.key, c.task) {
				bad++
				break
			}
		}
	}
	return bad, len(l.claims)
}

// testClaimsTakeTurns: workers claim and give back tasks as fast as they
// can; no claim may take a task while another, served longer ago, is
// claimable and passed over (Ledger.OutOfTurn).
func testClaimsTakeTurns(t *testing.T, s domain.Store) {
	if bad, claims := TakeTurns(t, s, 24, 8, 60, false); bad > 0 {
		t.Errorf("%d of %d claims were out of turn", bad, claims)
	}
}

// TakeTurns makes tasks tasks, and workers workers that each claim a task
// and give it back at once, each times, as fast as they can; with ahead,
// each commit claims the worker's next task (domain.NextClaimer). It
// returns how many claims were out of turn (Ledger.OutOfTurn), and how
// many there were.
func TakeTurns(t *testing.T, s domain.Store, tasks, workers, each int, ahead bool) (bad, claims int) {
	t.Helper()
	ctx := ctxTimeout(t, 2*time.Minute)
	var initial []int64
	for i := range tasks {
		in := newTask(fmt.Sprintf("Turn %d", i))
		in.MaxIterations = 1000
		in.MaxStaleIterations = 1000
		initial = append(initial, create(t, s, in).Number)
	}
	var led Ledger
	var tick atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		owner := fmt.Sprintf("worker-%d", w)
		wg.Go(func() {
			var c domain.Task // claimed with the last commit
			for range each {
				began := time.Now()
				if c.Number == 0 {
					var err error
					c, err = s.ClaimTask(ctx, domain.Claim{Owner: owner, Now: time.Now(), Lease: time.Hour})
					if errors.Is(err, domain.ErrNoTask) {
						continue
					}
					if err != nil {
						t.Errorf("%s: claim: %v", owner, err)
						return
					}
					led.Claimed(c.Number, c.Fence, c.LastProcessedAt, began, time.Now())
				}
				o := outcome(c, time.Now(), int(tick.Add(1)%100), domain.VerdictContinue)
				fn := func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, o) }
				began = time.Now()
				var after, next domain.Task
				var err error
				if ahead {
					after, next, err = nextClaimer(t, s).UpdateTaskAndClaim(context.WithoutCancel(ctx), c.Number, fn,
						domain.Claim{Owner: owner, Now: time.Now(), Lease: time.Hour})
				} else {
					after, err = s.UpdateTask(context.WithoutCancel(ctx), c.Number, fn)
				}
				if err != nil {
					t.Errorf("%s: iterate #%d: %v", owner, c.Number, err)
					return
				}
				end := time.Now()
				led.Released(after.Number, after.Fence, after.LastProcessedAt, end)
				if next.Number != 0 {
					led.Claimed(next.Number, next.Fence, next.LastProcessedAt, began, end)
				}
				c = next
			}
		})
	}
	wg.Wait()
	return led.OutOfTurn(initial, start)
}
