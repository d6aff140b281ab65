package notify_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// claimSizes is a store that records how many rows each room claim took.
type claimSizes struct {
	domain.Store
	mu    sync.Mutex
	sizes []int
}

func (s *claimSizes) ClaimRoom(ctx context.Context, c domain.RoomClaim) (string, []domain.Notification, error) {
	room, rows, err := s.Store.ClaimRoom(ctx, c)
	if len(rows) > 0 {
		s.mu.Lock()
		s.sizes = append(s.sizes, len(rows))
		s.mu.Unlock()
	}
	return room, rows, err
}

// TestBacklogGoesOutInBoundedMessages: a room's backlog after an outage
// of its platform goes out in several messages, each of at most a claim's
// worth of rows (domain.RoomClaimRows), with every error shown once:
// nothing lost, nothing twice.
func TestBacklogGoesOutInBoundedMessages(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		st := &claimSizes{Store: open(t)}
		f := newFixture(t, st, "a")
		f.out.failAll = errors.New("connection refused") // the outage
		// Tasks × rounds failed iterations, each a progress, an action and
		// an error row ("disk full at p%", p different for each).
		const tasks, rounds, rows = 15, 4, 3 * 15 * 4
		for i := 1; i <= tasks; i++ {
			f.create("chat:C1", fmt.Sprintf("Task %d", i))
		}
		for k := range rounds {
			for i := 1; i <= tasks; i++ {
				f.iterate(int64(i), 10+k*tasks+i, domain.VerdictContinue, false)
				f.clk.Advance(time.Second)
			}
		}
		f.flush() // fails: the rows stay, each in the message a send began
		if len(f.out.messages()) != 0 {
			t.Fatal("sent during the outage")
		}
		f.out.mu.Lock()
		f.out.failAll = nil
		f.out.mu.Unlock()
		st.mu.Lock()
		st.sizes = nil
		st.mu.Unlock()
		f.clk.Advance(10 * time.Minute) // past every backoff
		sent := f.flush()

		msgs := f.out.messages()
		if want := (rows + domain.RoomClaimRows - 1) / domain.RoomClaimRows; sent != len(msgs) || sent < want {
			t.Fatalf("%d rows went out in %d messages (flush counted %d), want at least %d", rows, len(msgs), sent, want)
		}
		st.mu.Lock()
		sizes := append([]int(nil), st.sizes...)
		st.mu.Unlock()
		total := 0
		for _, n := range sizes {
			if n > domain.RoomClaimRows {
				t.Errorf("a claim took %d rows, over %d", n, domain.RoomClaimRows)
			}
			total += n
		}
		if total != rows || len(sizes) != len(msgs) {
			t.Errorf("claims %v: %d rows in %d claims, want %d rows in one claim a message", sizes, total, len(sizes), rows)
		}
		for p := 11; p <= 10+tasks*rounds; p++ {
			if c := countLine(msgs, fmt.Sprintf("disk full at %d%%", p)); c != 1 {
				t.Errorf("the error at %d%% is shown %d times", p, c)
			}
		}
		if pending, _ := f.store.Pending(f.ctx); pending != 0 {
			t.Errorf("%d rows still pending", pending)
		}
		if f.flush() != 0 {
			t.Error("a flush after the backlog sent again")
		}
	})
}

// countLine counts the lines of msgs that end in s.
func countLine(msgs []string, s string) int {
	n := 0
	for _, m := range msgs {
		for _, line := range strings.Split(m, "\n") {
			if strings.HasSuffix(strings.TrimSpace(line), s) {
				n++
			}
		}
	}
	return n
}
