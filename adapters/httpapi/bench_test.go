package httpapi_test

import (
	"fmt"
	"testing"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// BenchmarkGetTask measures GET /api/tasks/{n} on PostgreSQL for a task
// of 10, 100 and 1,000 steps, each with a result of 1 MiB: the bytes and
// allocations of one answer do not grow with the steps.
//
//	go test -run XXX -bench GetTask -benchmem ./adapters/httpapi/
func BenchmarkGetTask(b *testing.B) {
	for _, steps := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("steps=%d", steps), func(b *testing.B) {
			url := testkit.PostgresURL(b)
			f := newFixtureAt(b, func(tb testing.TB) domain.Store { return teststore.PostgresAt(tb, url) }, t0)
			n := f.create("Read a lot").Number
			testkit.FillSteps(b, url, n, 1, steps)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if r := f.do("GET", fmt.Sprintf("/api/tasks/%d", n), nil); r.code != 200 {
					b.Fatalf("GET: %d", r.code)
				}
			}
		})
	}
}
