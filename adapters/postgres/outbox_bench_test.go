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

	"github.com/jackc/pgx/v5"

	"github.com/taskloom/taskloom/adapters/sqlstore"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
)

// BenchmarkRoomClaim measures one room claim of the notification outbox,
// and the claim with what a sender does after it (the first row marked
// sent, the rest given back due at once), with 50,000 pending rows over
// 1,000 rooms, while other goroutines keep enqueueing rows through the
// store as iterating tasks do (250 rows a second, each in its own
// transaction, into random rooms, plus one for each row marked sent, so
// that the outbox keeps growing). claim=heads is the store's claim (the
// walk of the rooms' heads); claim=old is the claim as it was before them
// (sqlOldPickRooms, then the room's lock, the check that no claim holds
// it, and the claim, in one transaction), on the same data under the same
// writes. It reports the p50 and p99 of the claim alone, of the claim
// with its mark-sent and give-back, and of the enqueues made meanwhile.
//
//	go test -run XXX -bench RoomClaim -benchtime 1000x ./adapters/postgres/
func BenchmarkRoomClaim(b *testing.B) {
	for _, mode := range []string{"heads", "old"} {
		b.Run("claim="+mode, func(b *testing.B) { benchRoomClaim(b, mode == "old") })
	}
}

func benchRoomClaim(b *testing.B, old bool) {
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
	// The backlog: rows of the last 50,000 seconds, a fifth of them
	// terminal, in one statement (the heads' triggers run on it as on
	// any insert).
	now := time.Now()
	if _, err := s.pool.Exec(ctx, `INSERT INTO notifications (room, task_number, category, payload, created_at, next_attempt_at)
SELECT 'discord:' || (g % $2), g, CASE WHEN g % 5 = 0 THEN 'terminal' ELSE 'progress' END, '{"progress":1}',
       $1::timestamptz - make_interval(secs => $3 - g), $1::timestamptz - make_interval(secs => $3 - g)
FROM generate_series(1, $3) g`, now, rooms, rows); err != nil {
		b.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, "ANALYZE"); err != nil {
		b.Fatal(err)
	}
	categories := []string{domain.NotifyProgress, domain.NotifyProgress, domain.NotifyProgress, domain.NotifyAction, domain.NotifyTerminal}
	var seq atomic.Int64
	enqueue := func(r *rand.Rand, at time.Time) error {
		_, err := s.Enqueue(ctx, domain.Notification{Room: fmt.Sprintf("discord:%d", r.IntN(rooms)), TaskNumber: seq.Add(1) % 5000,
			Category: categories[r.IntN(len(categories))], CreatedAt: at, Payload: json.RawMessage(`{"progress":1}`)})
		return err
	}

	// Tasks iterate meanwhile: writers enqueue perSec rows a second, and
	// one more for each row marked sent.
	var (
		wg       sync.WaitGroup
		errs     = make(chan error, 1)
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
	claim := s.ClaimRoom
	if old {
		claim = s.oldClaimRoom
	}
	var claims, rounds []time.Duration
	b.ResetTimer()
	for range b.N {
		t := time.Now()
		room, ns, err := claim(ctx, domain.RoomClaim{Owner: "bench", Now: time.Now(), Lease: time.Minute})
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
		claims, rounds = append(claims, claimed), append(rounds, time.Since(t))
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
	b.ReportMetric(float64(pending), "pending-at-end")
}

func ids(ns []domain.Notification) []int64 {
	out := make([]int64, len(ns))
	for i, n := range ns {
		out[i] = n.ID
	}
	return out
}

// sqlOldPickRooms is the pick of the room claim before the rooms' heads
// (migration 0024): the rooms with a ready row, grouped from every
// pending row. BenchmarkRoomClaim measures it beside the walk.
var sqlOldPickRooms = `
SELECT n.room FROM notifications n
WHERE ` + notificationReady + `
  AND NOT EXISTS (SELECT 1 FROM notifications h
    WHERE h.room = n.room AND h.claimed_by <> '' AND h.claim_expires_at > $1)
  AND NOT ` + sqlstore.RoomWaits("$1", "n.room") + `
GROUP BY n.room
ORDER BY min(n.created_at) NULLS FIRST, min(n.id)
LIMIT 8`

// oldClaimRoom is the room claim before the rooms' heads, for
// BenchmarkRoomClaim: the pick, then for each room its advisory lock,
// the check that no claim holds it, and the claim, in one transaction.
func (s *Store) oldClaimRoom(ctx context.Context, rc domain.RoomClaim) (string, []domain.Notification, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return "", nil, err
	}
	defer tx.Rollback(ctx)
	now, until := rc.Now.UTC(), rc.Now.Add(rc.Lease).UTC()
	rows, err := tx.Query(ctx, sqlOldPickRooms, now)
	if err != nil {
		return "", nil, err
	}
	rooms, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", nil, err
	}
	for _, room := range rooms {
		var locked, held bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(hashtextextended('taskloom.outbox.room:' || $1, 0))`,
			room).Scan(&locked); err != nil || !locked {
			if err != nil {
				return "", nil, err
			}
			continue
		}
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM notifications h
  WHERE h.room = $2 AND h.claimed_by <> '' AND h.claim_expires_at > $1)`, now, room).Scan(&held); err != nil {
			return "", nil, err
		}
		if held {
			continue
		}
		rows, err := tx.Query(ctx, `UPDATE notifications SET claimed_by = $3, claim_expires_at = $4
WHERE id IN (`+sqlstore.ClaimRoomIDs(notificationReady, "$1", "$2", "$5")+`)
RETURNING `+notificationCols, now, room, rc.Owner, until, domain.RoomClaimRows)
		if err != nil {
			return "", nil, err
		}
		ns, err := sqlstore.Collect(rows, sqlstore.ScanNotification)
		if err != nil {
			return "", nil, err
		}
		if len(ns) > 0 {
			return room, ns, tx.Commit(ctx)
		}
	}
	return "", nil, tx.Commit(ctx)
}
