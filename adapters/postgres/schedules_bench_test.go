package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
)

// BenchmarkFireSchedule measures one firing — the claim of a due
// schedule, its latest runs read, its run created with its event, its
// next time and its event written, in one transaction — beside the
// baseline of creating the same task alone (CreateTask), with 1,000 due
// schedules of 20 requestors.
//
//	go test -run XXX -bench FireSchedule -benchtime 1000x ./adapters/postgres/
func BenchmarkFireSchedule(b *testing.B) {
	ctx := context.Background()
	open := func(b *testing.B) *Store {
		s, err := Open(ctx, testkit.PostgresURL(b))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		if err := s.Migrate(ctx); err != nil {
			b.Fatal(err)
		}
		return s
	}
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	b.Run("baseline=CreateTask", func(b *testing.B) {
		s := open(b)
		b.ResetTimer()
		for i := range b.N {
			if _, err := s.CreateTask(ctx, domain.NewTask{Goal: "Summarise the alerts", RequestorID: fmt.Sprint("u", i%20),
				RoomID: "discord:1", WorkspaceID: "g", MaxActive: 1 << 20, Now: t0}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("FireSchedule", func(b *testing.B) {
		s := open(b)
		for i := range max(b.N, 1000) {
			if _, err := s.CreateSchedule(ctx, domain.NewSchedule{Cron: "@hourly", Goal: "Summarise the alerts",
				RequestorID: fmt.Sprint("u", i%20), Room: "discord:1", WorkspaceID: "g", Overlap: domain.OverlapAllow,
				MaxPerRequestor: 1 << 20, Now: t0}); err != nil {
				b.Fatal(err)
			}
		}
		now := t0.Add(time.Hour)
		b.ResetTimer()
		for range b.N {
			f, err := s.FireSchedule(ctx, domain.FireSchedule{Now: now, MaxActive: 1 << 20})
			if err != nil || f.Task.Number == 0 {
				b.Fatalf("FireSchedule = %+v, %v", f, err)
			}
		}
	})
}
