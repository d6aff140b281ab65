package postgres

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/storetest"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/plugin"
)

// TestSlowFailingClaimIsNotPassedOver: a claim that meets a row changed
// since its snapshot gives it up without holding its lock, however long it
// takes to fail, so the other claims of that moment do not pass over the
// row. The turn check here sleeps 20 ms before it fails, as a descheduled
// claimer would: a claim that locked the row before failing (READ
// COMMITTED) would hold it that long, and the other workers would take the
// tasks after it, out of turn (storetest.Ledger).
func TestSlowFailingClaimIsNotPassedOver(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, testkit.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `
CREATE OR REPLACE FUNCTION taskloom_in_turn(ok BOOLEAN) RETURNS BOOLEAN
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF NOT ok THEN
        PERFORM pg_sleep(0.02);
        RAISE EXCEPTION 'out of turn, slowly' USING ERRCODE = 'TLTRN';
    END IF;
    RETURN TRUE;
END
$$`); err != nil {
		t.Fatal(err)
	}
	const tasks, workers, each = 12, 6, 40
	var initial []int64
	for i := range tasks {
		n, err := s.CreateTask(ctx, plugin.NewTask{Goal: fmt.Sprint("turn ", i), Now: time.Now(), MaxIterations: 1000, MaxStaleIterations: 1000})
		if err != nil {
			t.Fatal(err)
		}
		initial = append(initial, n.Number)
	}
	var led storetest.Ledger
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		owner := fmt.Sprint("worker-", w)
		wg.Go(func() {
			for i := range each {
				began := time.Now()
				c, err := s.ClaimTask(ctx, plugin.Claim{Owner: owner, Now: time.Now(), Lease: time.Hour})
				if err != nil {
					t.Errorf("%s: claim: %v", owner, err)
					return
				}
				led.Claimed(c.Number, c.Fence, c.LastProcessedAt, began, time.Now())
				after, err := s.UpdateTask(ctx, c.Number, func(cur plugin.Task) (plugin.Mutation, error) {
					return plugin.Iterated(cur, plugin.Outcome{Owner: owner, Fence: c.Fence, Now: time.Now(),
						Progress: i % 100, Verdict: plugin.VerdictContinue, Step: plugin.Step{Action: "noop", Success: true}})
				})
				if err != nil {
					t.Errorf("%s: iterate #%d: %v", owner, c.Number, err)
					return
				}
				led.Released(after.Number, after.Fence, after.LastProcessedAt, time.Now())
			}
		})
	}
	wg.Wait()
	if bad, claims := led.OutOfTurn(initial, start); bad > 0 {
		t.Errorf("%d of %d claims were out of turn", bad, claims)
	}
}
