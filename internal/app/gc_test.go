package app

import (
	"runtime/debug"
	"testing"
	"testing/fstest"
)

func TestGCFor(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name    string
		env     map[string]string
		cgroup  int64
		percent int
		limit   int64
	}{
		{"nothing set, no limit", nil, 0, GCPercent, 0},
		{"a control group's limit", nil, 512 * mib, GCPercent, 512 * mib * 8 / 10},
		{"GOGC set", map[string]string{"GOGC": "50"}, 512 * mib, 0, 512 * mib * 8 / 10},
		{"GOGC off", map[string]string{"GOGC": "off"}, 0, 0, 0},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "1GiB"}, 512 * mib, GCPercent, 0},
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

func TestCgroupMemoryLimit(t *testing.T) {
	const v1None = "9223372036854771712\n"
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	for _, tc := range []struct {
		name string
		fs   fstest.MapFS
		want int64
	}{
		{"no /proc/self/cgroup", fstest.MapFS{}, 0},
		{"v2, a container's own group", fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("536870912\n"),
		}, 512 << 20},
		{"v2 without a limit", fstest.MapFS{
			"proc/self/cgroup":         file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("max\n"),
		}, 0},
		{"v2, a systemd service in a slice with a lower limit", fstest.MapFS{
			"proc/self/cgroup": file("0::/work.slice/taskloom.service\n"),
			"sys/fs/cgroup/work.slice/taskloom.service/memory.max": file("1073741824\n"),
			"sys/fs/cgroup/work.slice/memory.max":                  file("268435456\n"),
			"sys/fs/cgroup/memory.max":                             file("max\n"),
		}, 256 << 20},
		{"v1 hybrid, a group without a limit", fstest.MapFS{
			"proc/self/cgroup": file("4:memory:/process_api/1f6a\n1:cpu:/\n0::/\n"),
			"sys/fs/cgroup/memory/process_api/1f6a/memory.limit_in_bytes": file(v1None),
			"sys/fs/cgroup/memory/memory.limit_in_bytes":                  file(v1None),
		}, 0},
		{"v1, a container whose group is the mount's root", fstest.MapFS{
			"proc/self/cgroup":                           file("5:cpuacct,memory:/docker/abc\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes": file("134217728"),
		}, 128 << 20},
		{"garbage", fstest.MapFS{
			"proc/self/cgroup":         file("0::/\nnonsense\n7:memory\n"),
			"sys/fs/cgroup/memory.max": file("lots"),
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CgroupMemoryLimit(tc.fs); got != tc.want {
				t.Errorf("CgroupMemoryLimit = %d, want %d", got, tc.want)
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
