package postgres

import (
	"testing"

	"github.com/taskloom/taskloom/adapters/storetest"
	"github.com/taskloom/taskloom/internal/testkit"
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
	for _, ahead := range []bool{false, true} {
		if bad, claims := storetest.TakeTurns(t, s, 12, 6, 40, ahead); bad > 0 {
			t.Errorf("claims ahead %v: %d of %d claims were out of turn", ahead, bad, claims)
		}
	}
}
