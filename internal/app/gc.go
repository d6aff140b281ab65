package app

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// GCPercent is the garbage collector's target for `taskloom serve` when
// GOGC is not set: the heap may grow to five times what is live (400%)
// before a collection, instead of Go's twice (100%). An idle replica
// keeps a few megabytes live, so it stays far under PRODUCT §11's 60 MB;
// a busy one allocates about 40 KB an iteration that lives only for the
// iteration, and collecting a quarter as often spends about a fifth less
// of the process's CPU an iteration (BenchmarkQueue at 16 workers).
const GCPercent = 400

// memoryLimitShare is the share of the container's memory limit that
// `taskloom serve` gives the Go runtime as its soft limit when GOMEMLIMIT
// is not set: near it the collector runs as often as it must, whatever
// GCPercent allows, so the larger target does not get the process killed.
// The rest is for what the runtime does not count (stacks of threads in
// C code, the kernel's page cache of the SQLite file).
const memoryLimitShare = 0.8

// GC is how serve tunes the garbage collector.
type GC struct {
	Percent int   // the GOGC target; 0 when GOGC is set and left alone
	Limit   int64 // the soft memory limit in bytes; 0 when none is set here
	// Why says, for the start-up log, where each came from.
	Why string
}

// GCFor decides the collector's settings from GOGC and GOMEMLIMIT (a set
// one is left to the runtime, which reads it itself) and the memory limit
// of the process's control group: the content of cgroup v2's memory.max
// or v1's memory.limit_in_bytes, "" when there is none to read.
func GCFor(getenv func(string) string, cgroupLimit string) GC {
	var g GC
	var why []string
	if getenv("GOGC") == "" {
		g.Percent = GCPercent
		why = append(why, fmt.Sprintf("GOGC=%d (GOGC is not set)", GCPercent))
	} else {
		why = append(why, "GOGC as set")
	}
	limit, ok := parseCgroupLimit(cgroupLimit)
	switch {
	case getenv("GOMEMLIMIT") != "":
		why = append(why, "GOMEMLIMIT as set")
	case ok:
		g.Limit = int64(float64(limit) * memoryLimitShare)
		why = append(why, fmt.Sprintf("GOMEMLIMIT=%dMiB (%.0f%% of the container's %dMiB)", g.Limit>>20, memoryLimitShare*100, limit>>20))
	default:
		why = append(why, "no memory limit (no container limit found)")
	}
	g.Why = strings.Join(why, ", ")
	return g
}

// parseCgroupLimit reads a control group's memory limit: bytes, or "max"
// (v2) or a number near 2^63 (v1) for none.
func parseCgroupLimit(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n >= math.MaxInt64/2 {
		return 0, false
	}
	return n, true
}

// Apply sets the collector's target and soft limit, and returns what puts
// back the ones before.
func (g GC) Apply() (restore func()) {
	var undo []func()
	if g.Percent > 0 {
		before := debug.SetGCPercent(g.Percent)
		undo = append(undo, func() { debug.SetGCPercent(before) })
	}
	if g.Limit > 0 {
		before := debug.SetMemoryLimit(g.Limit)
		undo = append(undo, func() { debug.SetMemoryLimit(before) })
	}
	return func() {
		for _, u := range undo {
			u()
		}
	}
}

// CgroupMemoryLimit reads this process's control group memory limit
// (cgroup v2, then v1), "" when neither file can be read.
func CgroupMemoryLimit() string {
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if b, err := os.ReadFile(f); err == nil {
			return string(b)
		}
	}
	return ""
}
