package actions_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskloom/taskloom/actions"
)

// connFlood opens up to 5,000 connections to the proxy and holds them,
// until 20 fail.
const connFlood = `python3 - <<'EOF'
import socket
held, errors = [], 0
for i in range(5000):
    try:
        held.append(socket.create_connection(("127.0.0.1", 3128), timeout=2))
    except OSError:
        errors += 1
        if errors >= 20:
            break
print("opened", len(held), "failed", errors)
EOF`

// headerFlood keeps 40 connections sending a header that never ends, 4
// KiB at a time, opening a new one for each the proxy closes, until 20
// fail to open (at most 2,000, for at most 30 s).
const headerFlood = `python3 - <<'EOF'
import socket, time
def opener():
    s = socket.create_connection(("127.0.0.1", 3128), timeout=1)
    s.sendall(b"GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nX: ")
    return s
conns, opened, errors, sent = [], 0, 0, 0
t0 = time.time()
while errors < 20 and opened < 2000 and time.time() - t0 < 30:
    while len(conns) < 40 and errors < 20:
        try:
            conns.append(opener())
            opened += 1
        except OSError:
            errors += 1
    for s in list(conns):
        try:
            s.send(b"a" * 4096)
            sent += 4096
        except OSError:
            conns.remove(s)
            s.close()
print("opened", opened, "sent", sent, "failed", errors)
EOF`

// monitor polls a stand-in for Taskloom's /healthz while a flood runs,
// and samples the process's open descriptors and heap.
type monitor struct {
	stop chan struct{}
	done sync.WaitGroup

	mu         sync.Mutex
	polls      int
	failures   []string
	slowest    time.Duration
	maxFDs     int
	maxHeap    uint64
	maxRSS     int64
	baseRSS    int64
	baseFDs    int
	baseHeap   uint64
	healthURL  string
	healthSeen int
}

func openFDs() int {
	entries, _ := os.ReadDir("/proc/self/fd")
	return len(entries)
}

// rss is the process's resident set size in KiB (VmRSS).
func rss() int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			return kb
		}
	}
	return 0
}

func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func startMonitor(url string) *monitor {
	runtime.GC()
	m := &monitor{stop: make(chan struct{}), healthURL: url, baseFDs: openFDs(), baseHeap: heapInUse(), baseRSS: rss()}
	m.maxFDs, m.maxHeap, m.maxRSS = m.baseFDs, m.baseHeap, m.baseRSS
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	// Descriptors come and go fast: they are counted every millisecond.
	m.done.Add(1)
	go func() {
		defer m.done.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-tick.C:
			}
			fds := openFDs()
			m.mu.Lock()
			m.maxFDs = max(m.maxFDs, fds)
			m.mu.Unlock()
		}
	}()
	m.done.Add(1)
	go func() {
		defer m.done.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-tick.C:
			}
			start := time.Now()
			resp, err := client.Get(m.healthURL)
			took := time.Since(start)
			fds, heap, res := openFDs(), heapInUse(), rss()
			m.mu.Lock()
			m.polls++
			if err != nil {
				m.failures = append(m.failures, err.Error())
			} else {
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					m.failures = append(m.failures, resp.Status)
				}
			}
			m.slowest = max(m.slowest, took)
			m.maxFDs, m.maxHeap, m.maxRSS = max(m.maxFDs, fds), max(m.maxHeap, heap), max(m.maxRSS, res)
			m.mu.Unlock()
		}
	}()
	return m
}

func (m *monitor) end() {
	close(m.stop)
	m.done.Wait()
}

// TestSandboxFloodingTheProxyIsCutOff: a command in a real network
// sandbox opens thousands of connections to the proxy, then sends
// headers that never end. Taskloom (here, this process) answers its
// health check throughout, its descriptors and heap stay bounded, the
// log gets a bounded number of lines, and each step says the sandbox was
// cut off — so that one approved command cannot take Taskloom down
// through its own proxy.
func TestSandboxFloodingTheProxyIsCutOff(t *testing.T) {
	needBwrap(t)
	// Not parallel: it measures the whole process's descriptors and heap.
	var logs logBuffer
	e := actions.NewEgress(actions.EgressOptions{Logger: logs.logger(), Timeout: 3 * time.Second,
		Limits: actions.EgressLimits{HeaderTimeout: time.Second}})
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	health := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") }))
	defer health.Close()
	k := newKitWith(t, &actions.Sandbox{Timeout: 60 * time.Second, Network: true, Egress: e})

	for _, c := range []struct {
		name, script, want string
	}{
		{"connections", connFlood, "The command was cut off from the network: it kept opening more than 64 connections at once to Taskloom's network proxy."},
		{"headers", headerFlood, "The command was cut off from the network: it sent 16 requests to Taskloom's network proxy whose header was over 16 KiB, never ended within 1s, or was not HTTP."},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := startMonitor(health.URL)
			start := time.Now()
			res, err := k.run("run_command", map[string]string{"command": c.script})
			took := time.Since(start)
			m.end()
			if err != nil {
				t.Fatal(err)
			}
			if res.Success || !strings.Contains(res.Error, c.want) {
				t.Errorf("the step: %v %q; want it to say %q\n%s", res.Success, res.Error, c.want, res.Text)
			}
			t.Logf("%s: the command took %s: %s; health: %d polls, %d failed, slowest %s; descriptors %d → at most %d; heap in use %.1f MiB → at most %.1f MiB; RSS %.1f MiB → at most %.1f MiB",
				c.name, took.Round(time.Millisecond), strings.TrimSpace(strings.SplitN(res.Text, "\n", 3)[1]), m.polls, len(m.failures), m.slowest.Round(time.Millisecond),
				m.baseFDs, m.maxFDs, float64(m.baseHeap)/(1<<20), float64(m.maxHeap)/(1<<20), float64(m.baseRSS)/1024, float64(m.maxRSS)/1024)
			if len(m.failures) > 0 || m.polls == 0 {
				t.Errorf("the health check failed %d times of %d during the flood: %v", len(m.failures), m.polls, m.failures[:min(3, len(m.failures))])
			}
			// 64 connections at once, each with at most one upstream, one
			// being refused, and the health check's own.
			if grew := m.maxFDs - m.baseFDs; grew > 2*actions.DefaultEgressConns+16 {
				t.Errorf("the process's descriptors grew by %d during the flood", grew)
			}
			if grew := int64(m.maxHeap) - int64(m.baseHeap); grew > 32<<20 {
				t.Errorf("the heap grew by %.1f MiB during the flood", float64(grew)/(1<<20))
			}
		})
	}
	// At most a burst each minute, a line counting the rest (at most one
	// per interval and one per sandbox run), and one cut-off per run.
	if lines := strings.Count(logs.String(), "\n"); lines > 2*(actions.DefaultEgressLogBurst+2) {
		t.Errorf("%d log lines for two floods:\n%s", lines, logs.String())
	}
	if n := logs.count("cut a sandbox off"); n != 2 {
		t.Errorf("%d cut-off lines, want 2:\n%s", n, logs.String())
	}
}

// TestSandboxNetworkUnderTheSmallestMemoryLimit: under the smallest
// memory limit accepted, a network sandbox still reaches the proxy — no
// process of Taskloom's has to live in the sandbox under its limits.
func TestSandboxNetworkUnderTheSmallestMemoryLimit(t *testing.T) {
	needBwrap(t)
	t.Parallel()
	e := actions.NewEgress(actions.EgressOptions{Timeout: 3 * time.Second})
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s := &actions.Sandbox{Timeout: 30 * time.Second, Network: true, Egress: e, Limits: actions.Limits{Memory: 16 << 20}}
	out := run(t, s, workDir(t), `curl -sS -m 5 http://10.0.0.1/; echo " curl=$?"`)
	if want := "Taskloom's egress proxy refused 10.0.0.1: 10.0.0.1 is not a public address: Private-Use (RFC 1918).\n curl=0"; !strings.Contains(out.Text, want) {
		t.Errorf("under 16 MiB: %q; want the proxy's answer %q", out.Text, want)
	}
}
