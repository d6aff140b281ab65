package actions

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeCgroup lays out a cgroup v2 group with these controllers in a
// temporary folder, and the mountinfo line that mounts it.
func fakeCgroup(t *testing.T, controllers string) (mnt, mountinfo string) {
	t.Helper()
	mnt = t.TempDir()
	svc := filepath.Join(mnt, "system.slice", "taskloom.service")
	if err := os.MkdirAll(svc, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"cgroup.controllers": controllers, "cgroup.subtree_control": "", "cgroup.procs": "1234\n"} {
		if err := os.WriteFile(filepath.Join(svc, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return mnt, "25 1 0:22 / /proc rw - proc proc rw\n41 31 0:38 / " + mnt + " rw,relatime - cgroup2 cgroup2 rw\n"
}

// TestPrepareCgroups: with memory and pids delegated, Taskloom moves
// itself into a leaf and hands the controllers down to the groups it
// makes for sandboxes beside it; without them it changes nothing and
// says why, and the sandbox holds with its per-process limits.
func TestPrepareCgroups(t *testing.T) {
	mnt, mountinfo := fakeCgroup(t, "cpu io memory pids\n")
	svc := filepath.Join(mnt, "system.slice", "taskloom.service")
	base, err := prepareCgroups("0::/system.slice/taskloom.service\n", mountinfo, 4321)
	if err != nil || base != svc {
		t.Fatalf("prepareCgroups = %q, %v; want %s", base, err, svc)
	}
	if b, _ := os.ReadFile(filepath.Join(svc, cgroupLeaf, "cgroup.procs")); string(b) != "4321" {
		t.Errorf("the leaf's cgroup.procs: %q; want Taskloom's pid", b)
	}
	if b, _ := os.ReadFile(filepath.Join(svc, "cgroup.subtree_control")); string(b) != "+memory +pids" {
		t.Errorf("cgroup.subtree_control: %q", b)
	}
	// A second start finds itself in the leaf already.
	if again, err := prepareCgroups("0::/system.slice/taskloom.service/taskloom\n", mountinfo, 4321); err != nil || again != svc {
		t.Errorf("from the leaf: %q, %v; want %s", again, err, svc)
	}

	// One group a sandbox: its limits written, and what stopped it read
	// back from the kernel's counters.
	g, f, err := newSandboxCgroup(base, Limits{Memory: 64 << 20, Processes: 32})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	for file, want := range map[string]string{"memory.max": "67108864", "pids.max": "32", "memory.swap.max": "0"} {
		if b, _ := os.ReadFile(filepath.Join(g.dir, file)); string(b) != want {
			t.Errorf("%s: %q; want %q", file, b, want)
		}
	}
	if hit := g.limitHit(); hit != "" {
		t.Errorf("no events: %q", hit)
	}
	os.WriteFile(filepath.Join(g.dir, "pids.events"), []byte("max 3\n"), 0o644)
	if hit := g.limitHit(); hit != LimitProcesses {
		t.Errorf("pids.events max 3: %q", hit)
	}
	os.WriteFile(filepath.Join(g.dir, "memory.events"), []byte("low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\n"), 0o644)
	if hit := g.limitHit(); hit != LimitMemory {
		t.Errorf("memory.events oom_kill 1: %q", hit)
	}

	for _, c := range []struct{ self, controllers, want string }{
		{"1:name=systemd:/\n", "memory pids", "no cgroup v2 hierarchy"},
		{"0::/system.slice/taskloom.service\n", "cpu io", `not delegated to Taskloom's cgroup`},
		{"0::/system.slice/taskloom.service\n", "memory", `not delegated`},
	} {
		mnt, mountinfo := fakeCgroup(t, c.controllers)
		_, err := prepareCgroups(c.self, mountinfo, 4321)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q with %q: %v; want %q", c.self, c.controllers, err, c.want)
		}
		if _, serr := os.Stat(filepath.Join(mnt, "system.slice", "taskloom.service", cgroupLeaf)); serr == nil {
			t.Errorf("%q with %q: Taskloom moved itself all the same", c.self, c.controllers)
		}
	}
}
