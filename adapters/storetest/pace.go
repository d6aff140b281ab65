package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// testPaceShares: a store that shares a bot's pace (domain.PaceShares)
// returns the members of that bot seen within the ttl, itself included,
// and no other bot's; a member silent past the ttl drops out, one that
// leaves at once; a room's window takes n bookings in any span, also from
// replicas booking at once, and says when it has room. A store without
// it (one process) has nothing to share.
func testPaceShares(t *testing.T, s domain.Store) {
	ps, ok := s.(domain.PaceShares)
	if !ok {
		t.Skipf("%T paces one process alone", s)
	}
	ctx := t.Context()
	const ttl = 3 * time.Second
	var last domain.PaceMember
	beat := func(replica string, d time.Duration, demand int) []string {
		t.Helper()
		got, err := ps.PaceBeat(ctx, domain.PaceMember{Platform: "discord", Bot: "b1", Replica: replica, At: at(d),
			Epoch: int64(d / time.Second), Demand: demand}, ttl)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, m := range got {
			names = append(names, m.Replica)
			if m.Replica == replica {
				last = m
				if !m.At.Equal(at(d)) || m.Epoch != int64(d/time.Second) {
					t.Errorf("%s's own beat came back as %+v", replica, m)
				}
			}
		}
		return names
	}
	same := func(what string, got []string, want ...string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: members %v; want %v", what, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: members %v; want %v", what, got, want)
			}
		}
	}
	same("the first beat", beat("r2", 0, 5), "r2")
	if _, err := ps.PaceBeat(ctx, domain.PaceMember{Platform: "discord", Bot: "b2", Replica: "r9", At: at(0)}, ttl); err != nil {
		t.Fatal(err)
	}
	same("a second replica", beat("r1", 500*time.Millisecond, 0), "r1", "r2")
	same("r2 within the ttl", beat("r3", 2900*time.Millisecond, 1), "r1", "r2", "r3")
	same("r2 past the ttl", beat("r1", 3100*time.Millisecond, 0), "r1", "r3")
	if err := ps.PaceLeave(ctx, "discord", "b1", "r3"); err != nil {
		t.Fatal(err)
	}
	same("after r3 left", beat("r1", 3200*time.Millisecond, 0), "r1")
	// An epoch's demand is its first beat's; the epoch before's is kept.
	beat("r1", 3300*time.Millisecond, 7)
	if last.Epoch != 3 || last.Demand != 0 || last.PrevEpoch != 0 {
		t.Errorf("a second beat in epoch 3 with demand 7: %+v; want the first's demand, 0", last)
	}
	beat("r1", 4100*time.Millisecond, 9)
	if last.Epoch != 4 || last.Demand != 9 || last.PrevEpoch != 3 || last.PrevDemand != 0 {
		t.Errorf("the first beat of epoch 4 with demand 9: %+v; want epoch 3's demand kept as the previous", last)
	}

	// A room's window: 2 in any 5 s.
	const n, span = 2, 5 * time.Second
	book := func(bucket string, d time.Duration) (time.Duration, bool) {
		t.Helper()
		free, ok, err := ps.PaceRoom(ctx, "discord", "b1", bucket, at(d), n, span)
		if err != nil {
			t.Fatal(err)
		}
		return free.Sub(t0), ok
	}
	steps := []struct {
		bucket string
		d      time.Duration
		free   time.Duration
		ok     bool
	}{
		{"c1", 0, 0, true},
		{"c1", time.Second, time.Second, true},
		{"c1", 2 * time.Second, 5 * time.Second, false}, // full until the first ages
		{"c2", 2 * time.Second, 2 * time.Second, true},  // another window
		{"c1", 5 * time.Second, 5 * time.Second, true},  // the first aged
		{"c1", 5500 * time.Millisecond, 6 * time.Second, false},
	}
	for i, st := range steps {
		if free, ok := book(st.bucket, st.d); free != st.free || ok != st.ok {
			t.Fatalf("step %d (%s at %s): %s, %v; want %s, %v", i, st.bucket, st.d, free, ok, st.free, st.ok)
		}
	}
	// Replicas booking at once in one window take its n places, no more.
	var wg sync.WaitGroup
	var mu sync.Mutex
	took := 0
	for range 8 {
		wg.Go(func() {
			_, ok, err := ps.PaceRoom(ctx, "discord", "b1", "c3", at(time.Minute), n, span)
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				took++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if took != n {
		t.Errorf("8 replicas booking at once in a window of %d took %d places", n, took)
	}
}
