package httpapi

import "testing"

// SetMaxStatsEvents makes GET /api/stats read at most n events until the
// test ends.
func SetMaxStatsEvents(t testing.TB, n int64) {
	old := maxStatsEvents
	maxStatsEvents = n
	t.Cleanup(func() { maxStatsEvents = old })
}
