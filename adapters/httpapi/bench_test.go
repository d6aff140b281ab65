package httpapi_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
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
			f := newFixtureAt(b, func(tb testing.TB) plugin.Store { return teststore.PostgresAt(tb, url) }, t0)
			n := f.create("Read a lot").Number
			fillSteps(b, url, n, 1, steps)
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

// fillSteps writes steps from..to of task n on the PostgreSQL database at
// url, each with a result of 1 MiB, in one statement.
func fillSteps(b *testing.B, url string, n int64, from, to int) {
	b.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `INSERT INTO task_steps (task_number, iteration, action, params, result, success, progress, time)
SELECT $1, g, 'read_file', '{"path":"a.txt"}', repeat('x', 1048576), true, g % 100, now() FROM generate_series($2::int, $3::int) g`, n, from, to)
	if err != nil {
		b.Fatal(err)
	}
}
