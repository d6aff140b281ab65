package postgres

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/adapters/storetest"
	"github.com/taskloom/taskloom/internal/testkit"
)

func migratedStore(tb testing.TB) *Store {
	tb.Helper()
	s, err := Open(context.Background(), testkit.PostgresURL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	if err := s.Migrate(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestRecallAt5 holds recall's quality on the generated facts of
// storetest.RecallAt5 (docs/PERFORMANCE.md, "Recall").
func TestRecallAt5(t *testing.T) {
	if got := storetest.RecallAt5(t, migratedStore(t)); got < 0.85 {
		t.Errorf("recall@5 = %.3f; want at least 0.85", got)
	}
}

// BenchmarkRecall measures recall@5 on 1,000 facts, and Recall's latency
// on 100,000 passages beside a LIKE scan of them.
//
//	go test -run XXX -bench Recall -benchtime 500x ./adapters/postgres/
func BenchmarkRecall(b *testing.B) {
	b.Run("at5", func(b *testing.B) {
		for b.Loop() {
			b.ReportMetric(storetest.RecallAt5(b, migratedStore(b)), "recall@5")
		}
	})
	b.Run("passages=100000", func(b *testing.B) {
		s := migratedStore(b)
		storetest.BenchRecallPassages(b, s, 100_000, func(ctx context.Context, terms []string) (int, error) {
			return likeScan(ctx, s, terms)
		})
	})
}

// likeScan ranks every passage by how many of terms it contains, with
// LIKE: retrieval without a full-text index.
func likeScan(ctx context.Context, s *Store, terms []string) (int, error) {
	if len(terms) == 0 {
		return 0, nil
	}
	var score []string
	args := make([]any, len(terms))
	for i, t := range terms {
		score = append(score, "(text LIKE $"+strconv.Itoa(i+1)+")::int")
		args[i] = "%" + t + "%"
	}
	q := `SELECT count(*) FROM (SELECT id FROM passages WHERE ` + strings.Join(score, " + ") + ` > 0
ORDER BY ` + strings.Join(score, " + ") + ` DESC LIMIT 5) AS best`
	var n int
	err := s.pool.QueryRow(ctx, q, args...).Scan(&n)
	return n, err
}
