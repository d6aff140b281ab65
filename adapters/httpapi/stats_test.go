package httpapi_test

import (
	"slices"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/httpapi"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// statsScene: #1 created at t0, #2 ten minutes later and iterated twice,
// #1 canceled at half past; the clock then stands at t0+1h.
func statsScene(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t, teststore.SQLite)
	f.create("Write the plan")
	f.clk.Advance(10 * time.Minute)
	f.create("Compare the queues")
	f.model.Decide("list_files", nil, 10, "continue").Decide("list_files", nil, 20, "continue")
	f.step() // #2, never served, goes first
	f.step() // then #1
	f.clk.Set(t0.Add(30 * time.Minute))
	if _, err := f.tasks.Cancel(f.ctx, 1, "u1"); err != nil {
		t.Fatal(err)
	}
	f.clk.Set(t0.Add(time.Hour))
	return f
}

// statsPoints reads the points of a GET /api/stats answer: depth and
// iterations per minute, -1 for null.
func statsPoints(t *testing.T, r response) (depth, its []int) {
	t.Helper()
	if r.code != 200 {
		t.Fatalf("stats = %d %s", r.code, r.raw)
	}
	for _, p := range r.body["points"].([]any) {
		p := p.(map[string]any)
		d, i := -1, -1
		if v, ok := p["queue_depth"].(float64); ok {
			d = int(v)
		}
		if v, ok := p["iterations"].(float64); ok {
			i = int(v)
		}
		depth, its = append(depth, d), append(its, i)
	}
	return depth, its
}

// TestStatsWorkQueueDepthBackFromEvents: GET /api/stats gives a point a
// minute over the last hour, the queue depth at each minute's end worked
// back from the events, and each minute's iterations.
func TestStatsWorkQueueDepthBackFromEvents(t *testing.T) {
	f := statsScene(t)
	r := f.do("GET", "/api/stats", nil)
	depth, its := statsPoints(t, r)
	if len(depth) != 60 {
		t.Fatalf("stats has %d points, want 60: %s", len(depth), r.raw)
	}
	if r.body["queue_depth"].(float64) != 1 || r.body["since"] != nil || r.body["from"] != "2026-05-06T07:00:00Z" {
		t.Fatalf("stats = %s", r.raw)
	}
	want := func(minute, d, i int) {
		t.Helper()
		if depth[minute] != d || its[minute] != i {
			t.Errorf("minute %d: depth %d, %d iterations; want %d and %d", minute, depth[minute], its[minute], d, i)
		}
	}
	want(0, 1, 0)  // #1 created
	want(9, 1, 0)  // nothing happens
	want(10, 2, 2) // #2 created, two iterations
	want(29, 2, 0)
	want(30, 1, 0) // #1 canceled
	want(59, 1, 0)

	// The last ten minutes: the events before them are not counted.
	depth, its = statsPoints(t, f.do("GET", "/api/stats?window=10m", nil))
	if len(depth) != 10 || slices.ContainsFunc(depth, func(d int) bool { return d != 1 }) || slices.Max(its) != 0 {
		t.Fatalf("window=10m: depth %v, iterations %v; want ten minutes at 1 and 0", depth, its)
	}
	for _, bad := range []string{"5m", "7h", "90s", "soon", "-1h"} {
		if r := f.do("GET", "/api/stats?window="+bad, nil); r.code != 400 {
			t.Errorf("window=%s = %d %s; want 400", bad, r.code, r.raw)
		}
	}
}

// TestStatsReadABoundedNumberOfEvents: a window with more events than one
// answer reads has numbers only from the first event read; the minutes
// before it are null, and since says so.
func TestStatsReadABoundedNumberOfEvents(t *testing.T) {
	f := statsScene(t)
	httpapi.SetMaxStatsEvents(t, 1) // the cancel alone
	r := f.do("GET", "/api/stats", nil)
	depth, its := statsPoints(t, r)
	if r.body["since"] != "2026-05-06T07:30:00Z" {
		t.Fatalf("since = %v; want the cancel's time: %s", r.body["since"], r.raw)
	}
	if depth[29] != -1 || its[29] != -1 || depth[30] != 1 || its[30] != 0 || depth[59] != 1 {
		t.Fatalf("depth %v, iterations %v; want null before minute 30 and 1 from it", depth, its)
	}
}

// TestStatsMinutesAreTheClocks: the points are whole minutes of the clock,
// the last the minute before the current one, so reading the chart again
// within a minute draws the same chart (its peak does not move with each
// reload), and what happens in the current minute counts from the next.
func TestStatsMinutesAreTheClocks(t *testing.T) {
	f := statsScene(t)
	depth, its := statsPoints(t, f.do("GET", "/api/stats", nil))
	f.clk.Advance(20 * time.Second)
	f.create("Created in the current minute")
	f.model.Decide("list_files", nil, 10, "continue")
	f.step()
	f.clk.Advance(20 * time.Second)
	r := f.do("GET", "/api/stats", nil)
	again, itsAgain := statsPoints(t, r)
	if r.body["from"] != "2026-05-06T07:00:00Z" || r.body["to"] != "2026-05-06T08:00:00Z" || r.body["queue_depth"].(float64) != 2 {
		t.Fatalf("40 s into the minute, stats = %s", r.raw)
	}
	if !slices.Equal(depth, again) || !slices.Equal(its, itsAgain) {
		t.Fatalf("40 s later in the same minute the points moved:\ndepth %v\nthen  %v\niterations %v\nthen       %v", depth, again, its, itsAgain)
	}
	f.clk.Advance(30 * time.Second) // the next minute: the task and its iteration count
	depth, its = statsPoints(t, f.do("GET", "/api/stats", nil))
	if depth[59] != 2 || its[59] != 1 || depth[58] != 1 {
		t.Fatalf("a minute on: depth %v, iterations %v; want the new task and its iteration in the last minute", depth, its)
	}
}
