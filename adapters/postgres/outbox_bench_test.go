package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
)

// BenchmarkRoomClaim measures one room claim of the notification outbox,
// and the claim with what a sender does after it (the first row marked
// sent, the rest given back due at once), with 50,000 pending rows over
// 1,000 rooms, while other goroutines keep enqueueing rows as iterating
// tasks do (250 rows a second, each in its own transaction, into random
// rooms, plus as many as the claims mark sent, so that the outbox stays
// at its size). It reports the p50 and p99 of the claim alone, of the
// claim with its mark-sent and give-back, and of the enqueues made
// meanwhile.
//
//	go test -run XXX -bench RoomClaim -benchtime 2000x ./adapters/postgres/
func BenchmarkRoomClaim(b *testing.B) {
	const (
		rooms   = 1_000
		rows    = 50_000
		perSec  = 250
		writers = 4
	)
	ctx := context.Background()
	s, err := Open(ctx, testkit.PostgresURL(b))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	room := func(r *rand.Rand) string { return fmt.Sprintf("discord:%d", r.IntN(rooms)) }
	categories := []string{domain.NotifyProgress, domain.NotifyProgress, domain.NotifyProgress, domain.NotifyAction, domain.NotifyTerminal}
	var seq atomic.Int64
	enqueue := func(r *rand.Rand, at time.Time) error {
		_, err := s.Enqueue(ctx, domain.Notification{Room: room(r), TaskNumber: seq.Add(1) % 5000,
			Category: categories[r.IntN(len(categories))], CreatedAt: at, Payload: json.RawMessage(`{"progress":1}`)})
		return err
	}
	// The backlog: rows of the last hour, through Enqueue, as tasks
	// write them.
	start := time.Now().Add(-time.Hour)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for i := w; i < rows; i += 8 {
				if err := enqueue(r, start.Add(time.Duration(i)*time.Hour/rows)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	if _, err := s.pool.Exec(ctx, "ANALYZE"); err != nil {
		b.Fatal(err)
	}

	// Tasks iterate meanwhile: writers enqueue perSec rows a second, and
	// one more for each row marked sent.
	var (
		stop     = make(chan struct{})
		owed     atomic.Int64
		enqMu    sync.Mutex
		enqTimes []time.Duration
	)
	for w := range writers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(100+w), 2))
			tick := time.NewTicker(time.Second * writers / perSec)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				n := 1
				if owed.Add(-1) >= 0 {
					n++
				} else {
					owed.Add(1)
				}
				for range n {
					t := time.Now()
					if err := enqueue(r, t); err != nil {
						select {
						case errs <- err:
						default:
						}
						return
					}
					enqMu.Lock()
					enqTimes = append(enqTimes, time.Since(t))
					enqMu.Unlock()
				}
			}
		})
	}

	claims := make([]time.Duration, 0, b.N)
	rounds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t := time.Now()
		room, ns, err := s.ClaimRoom(ctx, domain.RoomClaim{Owner: "bench", Now: time.Now(), Lease: time.Minute})
		claimed := time.Since(t)
		if err != nil {
			b.Fatal(err)
		}
		if room == "" {
			b.Fatal("no room was claimed")
		}
		if err := s.MarkSent(ctx, "bench", []int64{ns[0].ID}, nil); err != nil {
			b.Fatal(err)
		}
		owed.Add(1)
		if rest := ns[1:]; len(rest) > 0 {
			if err := s.GiveBack(ctx, "bench", ids(rest), time.Now()); err != nil {
				b.Fatal(err)
			}
		}
		claims = append(claims, claimed)
		rounds = append(rounds, time.Since(t))
	}
	b.StopTimer()
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	var pending int
	if err := s.pool.QueryRow(ctx, sqlPending).Scan(&pending); err != nil {
		b.Fatal(err)
	}
	q := func(d []time.Duration, p float64) float64 {
		if len(d) == 0 {
			return 0
		}
		d = slices.Clone(d)
		slices.Sort(d)
		return float64(d[int(p*float64(len(d)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(q(claims, 0.5), "claim-p50-ms")
	b.ReportMetric(q(claims, 0.99), "claim-p99-ms")
	b.ReportMetric(q(rounds, 0.5), "round-p50-ms")
	b.ReportMetric(q(rounds, 0.99), "round-p99-ms")
	b.ReportMetric(q(enqTimes, 0.5), "enqueue-p50-ms")
	b.ReportMetric(q(enqTimes, 0.99), "enqueue-p99-ms")
	b.ReportMetric(float64(len(enqTimes)), "enqueues")
	b.ReportMetric(float64(pending), "pending-at-end")
}

func ids(ns []domain.Notification) []int64 {
	out := make([]int64, len(ns))
	for i, n := range ns {
		out[i] = n.ID
	}
	return out
}
