package postgres

import (
	"fmt"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
)

// BenchmarkPace: what sharing a bot's pace costs the database — one beat
// (a replica, every second per platform) and one room booking (every
// message), over rooms spread like a fan-out's.
//
//	go test -run XXX -bench Pace ./adapters/postgres/
func BenchmarkPace(b *testing.B) {
	s, err := Open(b.Context(), testkit.PostgresURL(b))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(b.Context()); err != nil {
		b.Fatal(err)
	}
	t0 := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	b.Run("now", func(b *testing.B) { // a bare round trip, to compare
		for range b.N {
			if _, err := s.Now(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("beat", func(b *testing.B) {
		for i := range b.N {
			m := domain.PaceMember{Platform: "discord", Bot: "b", Replica: fmt.Sprintf("r%d", i%3), At: t0.Add(time.Duration(i) * time.Second / 3), Epoch: int64(i / 3)}
			if _, err := s.PaceBeat(b.Context(), m, 3*time.Second); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("room", func(b *testing.B) {
		for i := range b.N {
			at := t0.Add(time.Duration(i) * 22 * time.Millisecond) // 45 a second
			if _, _, err := s.PaceRoom(b.Context(), "discord", "b", fmt.Sprintf("c%d", i%1000), at, 5, 5500*time.Millisecond); err != nil {
				b.Fatal(err)
			}
		}
	})
}
