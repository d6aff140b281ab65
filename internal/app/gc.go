package app

import (
	"fmt"
	"io/fs"
	"math"
	"path"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
)

// GCPercent is the garbage collector's target for `taskloom serve` when
// GOGC is not set: the heap may grow to five times what is live (400%)
// before a collection, instead of Go's twice (100%). An idle replica
// keeps a few megabytes live, so it stays far under docs/PERFORMANCE.md's 60 MB;
// a busy one allocates about 40 KB an iteration that lives only for the
// iteration, and collecting a quarter as often spends about a fifth less
// of the process's CPU an iteration (BenchmarkQueue at 16 workers).
const GCPercent = 400

// memoryLimitShare is the share of the control group's memory limit that
// `taskloom serve` gives the Go runtime as its soft limit when GOMEMLIMIT
// is not set: near it the collector runs as often as it must, whatever
// GCPercent allows, so the larger target does not get the process killed.
// The rest is for what the group is charged and the runtime does not
// count: the kernel's page cache of the files the process writes (the
// SQLite file and its log).
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
// of the process's control group in bytes (CgroupMemoryLimit; 0 for none).
func GCFor(getenv func(string) string, cgroupLimit int64) GC {
	var g GC
	var why []string
	if getenv("GOGC") == "" {
		g.Percent = GCPercent
		why = append(why, fmt.Sprintf("GOGC=%d (GOGC is not set)", GCPercent))
	} else {
		why = append(why, "GOGC as set")
	}
	switch {
	case getenv("GOMEMLIMIT") != "":
		why = append(why, "GOMEMLIMIT as set")
	case cgroupLimit > 0:
		g.Limit = int64(float64(cgroupLimit) * memoryLimitShare)
		why = append(why, fmt.Sprintf("GOMEMLIMIT=%dMiB (%.0f%% of the control group's %dMiB)", g.Limit>>20, memoryLimitShare*100, cgroupLimit>>20))
	default:
		why = append(why, "no memory limit (the control group sets none)")
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

// CgroupMemoryLimit is the memory limit of this process's control group,
// the least of its own and its ancestors' (a limit on a systemd slice or a
// container's group bounds every group in it), in bytes; 0 when none is set
// or can be read. It follows /proc/self/cgroup to cgroup v2's memory.max
// and v1's memory.limit_in_bytes; fsys is the root file system,
// os.DirFS("/").
func CgroupMemoryLimit(fsys fs.FS) int64 {
	data, err := fs.ReadFile(fsys, "proc/self/cgroup")
	if err != nil {
		return 0
	}
	var least int64
	// Each line is hierarchy-ID:controllers:path; v2's is 0::path.
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || !strings.HasPrefix(f[2], "/") {
			continue
		}
		var dir, file string
		switch {
		case f[0] == "0" && f[1] == "":
			dir, file = "sys/fs/cgroup", "memory.max"
		case slices.Contains(strings.Split(f[1], ","), "memory"):
			dir, file = "sys/fs/cgroup/memory", "memory.limit_in_bytes"
		default:
			continue
		}
		// Inside a container the group's path may not exist under the
		// mount, whose root is the container's own group: its ancestors'
		// files then stand for it.
		for p := path.Clean(f[2]); ; p = path.Dir(p) {
			if b, err := fs.ReadFile(fsys, path.Join(dir, p, file)); err == nil {
				if n, ok := parseCgroupLimit(string(b)); ok && (least == 0 || n < least) {
					least = n
				}
			}
			if p == "/" {
				break
			}
		}
	}
	return least
}
