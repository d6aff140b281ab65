package app

import (
	"runtime/debug"
	"testing"
)

func TestGCFor(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name    string
		env     map[string]string
		cgroup  string
		percent int
		limit   int64
	}{
		{"nothing set, no container limit", nil, "", GCPercent, 0},
		{"cgroup v2 without a limit", nil, "max\n", GCPercent, 0},
		{"cgroup v2 limit", nil, "536870912\n", GCPercent, 512 * mib * 8 / 10},
		{"cgroup v1 without a limit", nil, "9223372036854771712\n", GCPercent, 0},
		{"cgroup v1 limit", nil, "268435456", GCPercent, 256 * mib * 8 / 10},
		{"unreadable limit", nil, "lots", GCPercent, 0},
		{"GOGC set", map[string]string{"GOGC": "50"}, "536870912", 0, 512 * mib * 8 / 10},
		{"GOGC off", map[string]string{"GOGC": "off"}, "", 0, 0},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "1GiB"}, "536870912", GCPercent, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := GCFor(func(k string) string { return tc.env[k] }, tc.cgroup)
			if g.Percent != tc.percent || g.Limit != tc.limit {
				t.Errorf("GCFor = percent %d, limit %d (%s); want %d, %d", g.Percent, g.Limit, g.Why, tc.percent, tc.limit)
			}
			if g.Why == "" {
				t.Error("no reason for the log")
			}
		})
	}
}

func TestGCApplyAndRestore(t *testing.T) {
	percent := debug.SetGCPercent(100)
	debug.SetGCPercent(percent)
	limit := debug.SetMemoryLimit(-1)

	restore := GC{Percent: 321, Limit: 3 << 30}.Apply()
	if got := debug.SetGCPercent(321); got != 321 {
		t.Errorf("GC percent after Apply = %d, want 321", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 3<<30 {
		t.Errorf("memory limit after Apply = %d, want %d", got, int64(3<<30))
	}
	restore()
	if got := debug.SetGCPercent(percent); got != percent {
		t.Errorf("GC percent after restore = %d, want %d", got, percent)
	}
	if got := debug.SetMemoryLimit(-1); got != limit {
		t.Errorf("memory limit after restore = %d, want %d", got, limit)
	}

	// Settings left to the environment are not touched.
	GC{}.Apply()()
	if got := debug.SetGCPercent(percent); got != percent {
		t.Errorf("GC percent after an empty Apply = %d, want %d", got, percent)
	}
}
