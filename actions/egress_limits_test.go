package actions_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/internal/clock"
)

// logBuffer collects what a logger writes, safely across goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// count is how many lines hold s.
func (b *logBuffer) count(s string) int {
	n := 0
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// openTestDoor opens a door of e and hands it a listener on the test's
// loopback, as a sandbox's helper does with the sandbox's: the proxy's
// limits are then tested on that address without a sandbox.
func openTestDoor(t *testing.T, e *actions.Egress) (*actions.EgressDoor, string) {
	t.Helper()
	door, err := e.Open("test sandbox")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { door.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close() // the proxy has its own descriptor of the socket now
	if err := actions.HandOver(door.SocketPath(), ln.(*net.TCPListener)); err != nil {
		t.Fatal(err)
	}
	return door, ln.Addr().String()
}

// waitFor waits until cond holds, for at most 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// readConn reads what c sends until it closes, for at most 5 s.
func readConn(c net.Conn) string {
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, _ := io.ReadAll(c)
	return string(b)
}

// TestEgressCapsConnectionsPerSandbox: a sandbox may hold a few
// connections to the proxy at once; one more is refused with a sentence
// saying why, and a sandbox that keeps trying within a minute is cut off
// — its listener and its connections closed, its step told — so that no
// command can take Taskloom's descriptors through the proxy. Refusals a
// minute apart do not add up (an MCP server lives for days). The
// refusals' log is paced.
func TestEgressCapsConnectionsPerSandbox(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	clk := clock.NewFake(time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC))
	e := actions.NewEgress(actions.EgressOptions{Logger: logs.logger(), Clock: clk,
		Limits: actions.EgressLimits{Conns: 4, CutOffRefused: 3, CutOffWindow: time.Minute, LogBurst: 2, LogEvery: time.Minute}})
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	door, addr := openTestDoor(t, e)
	var held []net.Conn
	for range 4 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	for i := 1; i <= 5; i++ {
		if cut := door.CutOff(); cut != "" {
			t.Fatalf("cut off after %d refusals, two of them a minute before: %s", i-1, cut)
		}
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", 4+i, err)
		}
		got := readConn(c)
		c.Close()
		if !strings.HasPrefix(got, "HTTP/1.1 503") || !strings.Contains(got, "this sandbox has 4 open already") {
			t.Errorf("connection %d past the cap: %q; want 503 saying why", 4+i, got)
		}
		if i == 2 {
			clk.Advance(time.Minute)
		}
	}
	for i, c := range held {
		if got := readConn(c); got != "" {
			t.Errorf("held connection %d got %q", i, got)
		}
	}
	if got, want := door.CutOff(), "it kept opening more than 4 connections at once to Taskloom's network proxy"; got != want {
		t.Errorf("CutOff = %q, want %q", got, want)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Error("a sandbox cut off still reaches the proxy")
	}
	door.Close()
	if n := logs.count("refused a sandbox's connection: too many"); n != 4 {
		t.Errorf("%d refusals logged one by one, want the burst of 2 in each of two minutes:\n%s", n, logs.String())
	}
	if n := logs.count("1 more refusals not logged"); n != 1 {
		t.Errorf("no line counting the refusal left out:\n%s", logs.String())
	}
	if n := logs.count("cut a sandbox off"); n != 1 {
		t.Errorf("%d lines saying the sandbox was cut off, want 1:\n%s", n, logs.String())
	}
}

// TestEgressHeaderLimits: a header over the limit is refused (431), one
// that never ends is dropped at the header timeout, and a sandbox whose
// connections keep sending no whole request is cut off; connections that
// were served do not count against it.
func TestEgressHeaderLimits(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	e := actions.NewEgress(actions.EgressOptions{Logger: logs.logger(),
		Limits: actions.EgressLimits{HeaderBytes: 1024, HeaderTimeout: 300 * time.Millisecond, CutOffBad: 3}})
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	door, addr := openTestDoor(t, e)
	send := func(what string, closeAfter bool) (string, time.Duration) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		go func() {
			_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			_, _ = io.WriteString(c, what)
		}()
		start := time.Now()
		r := bufio.NewReader(c)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		status, _ := r.ReadString('\n')
		if closeAfter {
			_, _ = io.Copy(io.Discard, r)
		}
		return strings.TrimSpace(status), time.Since(start)
	}
	// Served: an origin-form request is answered by the proxy itself.
	for range 4 {
		if status, _ := send("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", true); !strings.HasPrefix(status, "HTTP/1.1 400") {
			t.Fatalf("a whole request: %q", status)
		}
	}
	if status, _ := send("GET http://public.example/ HTTP/1.1\r\nHost: public.example\r\nX: "+strings.Repeat("a", 64<<10), true); !strings.HasPrefix(status, "HTTP/1.1 431") {
		t.Errorf("a 64 KiB header: %q, want 431", status)
	}
	if status, took := send("GET http://public.example/ HTTP/1.1\r\nX: a", true); status != "" || took < 250*time.Millisecond || took > 3*time.Second {
		t.Errorf("a header that never ends: %q after %s; want the connection closed at about 300ms", status, took)
	}
	if cut := door.CutOff(); cut != "" {
		t.Errorf("cut off after two bad connections: %s", cut)
	}
	send("\x16\x03\x01 not HTTP\r\n\r\n", true)
	waitFor(t, "the cut-off", func() bool { return door.CutOff() != "" })
	if got, want := door.CutOff(), "it sent 3 requests to Taskloom's network proxy whose header was over 1 KiB, never ended within 300ms, or was not HTTP"; got != want {
		t.Errorf("CutOff = %q, want %q", got, want)
	}
}

// TestEgressTunnelIdleTimeout: a tunnel lives while either way carries
// something, however long the other way is quiet (a download), and ends
// once both are quiet for the idle timeout, so that a sandbox cannot
// hold the proxy's descriptors with tunnels that carry nothing.
func TestEgressTunnelIdleTimeout(t *testing.T) {
	t.Parallel()
	// The far end streams a byte each 100ms, 8 times, after "go", then
	// stays silent; it stops as soon as its client goes away, as servers
	// do.
	far, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer far.Close()
	go func() {
		for {
			c, err := far.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				gone := make(chan struct{})
				go func() {
					r := bufio.NewReader(c)
					_, _ = r.ReadString('\n')
					_, _ = io.Copy(io.Discard, r)
					close(gone)
				}()
				for range 8 {
					select {
					case <-gone:
						return
					case <-time.After(100 * time.Millisecond):
					}
					if _, err := c.Write([]byte("x")); err != nil {
						return
					}
				}
				<-gone
			}()
		}
	}()
	dialer := &testDialer{t: t, public: far.Addr().String()}
	e := actions.NewEgress(actions.EgressOptions{Resolver: fakeResolver{"public.example": {netip.MustParseAddr(publicStandIn)}},
		Dial: dialer.Dial, Limits: actions.EgressLimits{IdleTimeout: 350 * time.Millisecond}})
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	_, addr := openTestDoor(t, e)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT public.example:443 HTTP/1.1\r\nHost: public.example:443\r\n\r\ngo\n")
	r := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	status, _ := r.ReadString('\n')
	if !strings.HasPrefix(status, "HTTP/1.1 200") {
		t.Fatalf("CONNECT: %q", status)
	}
	_, _ = r.ReadString('\n') // the blank line
	var got []byte
	var last time.Time
	for {
		b, err := r.ReadByte()
		if err != nil {
			break
		}
		got, last = append(got, b), time.Now()
	}
	if string(got) != "xxxxxxxx" {
		t.Errorf("the tunnel carried %q in 800ms of one-way traffic; want all 8 bytes", got)
	}
	if quiet := time.Since(last); quiet < 300*time.Millisecond || quiet > 3*time.Second {
		t.Errorf("the tunnel ended %s after its last byte; want about the idle timeout of 350ms", quiet)
	}
}

// TestEgressTotalConnections: across sandboxes the proxy holds at most
// TotalConns connections; the next waits in its sandbox's queue, not in
// Taskloom, and is served once one ends.
func TestEgressTotalConnections(t *testing.T) {
	t.Parallel()
	e := actions.NewEgress(actions.EgressOptions{Limits: actions.EgressLimits{TotalConns: 2}})
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	_, addr1 := openTestDoor(t, e)
	_, addr2 := openTestDoor(t, e)
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr1)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	// Known to hold its slot: the proxy answered on it.
	fmt.Fprintf(held[1], "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if s, _ := bufio.NewReader(held[1]).ReadString('\n'); !strings.HasPrefix(s, "HTTP/1.1 400") {
		t.Fatalf("a held connection: %q", s)
	}
	waiting, err := net.Dial("tcp", addr2)
	if err != nil {
		t.Fatal(err)
	}
	defer waiting.Close()
	fmt.Fprintf(waiting, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	_ = waiting.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if b, err := bufio.NewReader(waiting).ReadString('\n'); err == nil {
		t.Fatalf("a third connection was served past the total of 2: %q", b)
	}
	held[0].Close()
	if got := readConn(waiting); !strings.HasPrefix(got, "HTTP/1.1 400") {
		t.Errorf("the waiting connection, once a slot is free: %q", got)
	}
}

// TestEgressRefusalLogIsPaced: a sandbox making thousands of refused
// requests gets a few log lines and one counting the rest per interval,
// not a line each, so that the log stays readable and cheap.
func TestEgressRefusalLogIsPaced(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	clk := clock.NewFake(time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC))
	e := actions.NewEgress(actions.EgressOptions{Logger: logs.logger(), Clock: clk,
		Resolver: fakeResolver{"private.example": {netip.MustParseAddr("10.1.2.3")}},
		Limits:   actions.EgressLimits{LogBurst: 5, LogEvery: time.Minute}})
	defer e.Close()
	proxy := httptest.NewServer(e)
	defer proxy.Close()
	proxyURL, _ := url.Parse(proxy.URL)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}
	get := func() {
		resp, err := client.Get("http://private.example/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("status %d, want 403", resp.StatusCode)
		}
	}
	for range 200 {
		get()
	}
	if n := logs.count("egress proxy refused"); n != 5 {
		t.Errorf("%d refusals logged in the first minute, want 5", n)
	}
	clk.Advance(time.Minute)
	get()
	if n := logs.count("egress proxy refused"); n != 6 {
		t.Errorf("%d refusals logged after a minute, want 6", n)
	}
	if n := logs.count("195 more refusals not logged one by one"); n != 1 || logs.count("address=195") != 1 {
		t.Errorf("no line counting the 195 refusals left out:\n%s", logs.String())
	}
}

// TestEgressTotalFromOpenFileLimit: by default the proxy's connections
// (two descriptors each) take at most half of the process's descriptors.
func TestEgressTotalFromOpenFileLimit(t *testing.T) {
	for _, c := range []struct {
		nofile uint64
		want   int
	}{{1024, 256}, {4096, 1024}, {1 << 20, 1024}, {16, 4}, {1, 1}} {
		if got := actions.EgressTotalFor(c.nofile); got != c.want {
			t.Errorf("EgressTotalFor(%d) = %d, want %d", c.nofile, got, c.want)
		}
	}
}
