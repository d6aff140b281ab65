package actions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/taskloom/taskloom/internal/clock"
)

// EgressLimits bound what the egress proxy gives one sandbox, and all of
// them together, so that nothing in a sandbox can take Taskloom's own
// descriptors or memory through it. A zero field takes its default.
type EgressLimits struct {
	// Conns is how many connections one sandbox may have open to the
	// proxy at once; one more is answered 503 and closed.
	Conns int
	// TotalConns is how many connections the proxy holds at once across
	// all sandboxes; past it, a sandbox's new connections wait in its
	// own listener's queue, in the sandbox's network namespace. The
	// default (egressTotalFor) leaves at least half of the process's open
	// file limit to the rest of Taskloom.
	TotalConns int
	// HeaderBytes bounds a request's header (Go's server allows 4 KiB
	// more for its read buffer).
	HeaderBytes int
	// HeaderTimeout is how long a request's header may take to arrive.
	HeaderTimeout time.Duration
	// IdleTimeout ends a kept-alive connection that sends no new request,
	// and a tunnel (CONNECT) with no traffic either way, after this long.
	IdleTimeout time.Duration
	// CutOffRefused: a sandbox refused this many times for having Conns
	// connections open already is cut off.
	CutOffRefused int
	// CutOffBad: a sandbox that opened this many connections that sent
	// something but never one whole request (a header too long, never
	// finished, or not HTTP) is cut off.
	CutOffBad int
	// CutOffWindow is the time within which CutOffRefused or CutOffBad
	// must be reached; the counts start again after it, so that a server
	// living for days is not cut off for rare mishaps that add up.
	CutOffWindow time.Duration
	// LogBurst refusals are logged each LogEvery; the others are counted
	// and said in one line.
	LogBurst int
	LogEvery time.Duration
}

// The egress proxy's default limits (EgressLimits).
const (
	DefaultEgressConns         = 64
	DefaultEgressMaxTotalConns = 1024
	DefaultEgressHeaderBytes   = 16 << 10
	DefaultEgressHeaderTimeout = 10 * time.Second
	DefaultEgressIdleTimeout   = 60 * time.Second
	DefaultEgressCutOffRefused = 64
	DefaultEgressCutOffBad     = 16
	DefaultEgressCutOffWindow  = time.Minute
	DefaultEgressLogBurst      = 10
	DefaultEgressLogEvery      = time.Minute

	// maxUpstreamHeader bounds the header of an answer the proxy reads
	// from the outside for a plain http:// request.
	maxUpstreamHeader = 64 << 10
	// fdsPerConn is what one connection of a sandbox's costs the
	// process: the sandbox's end and one upstream.
	fdsPerConn = 2
	// handoverTimeout bounds the sandbox helper's handing over of its
	// listener.
	handoverTimeout = 10 * time.Second
	// tunnelBuffer is the copy buffer of each direction of a tunnel.
	tunnelBuffer = 16 << 10
)

func (l EgressLimits) withDefaults(nofile uint64) EgressLimits {
	set := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	setD := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	set(&l.Conns, DefaultEgressConns)
	set(&l.TotalConns, egressTotalFor(nofile))
	set(&l.HeaderBytes, DefaultEgressHeaderBytes)
	setD(&l.HeaderTimeout, DefaultEgressHeaderTimeout)
	setD(&l.IdleTimeout, DefaultEgressIdleTimeout)
	set(&l.CutOffRefused, DefaultEgressCutOffRefused)
	set(&l.CutOffBad, DefaultEgressCutOffBad)
	setD(&l.CutOffWindow, DefaultEgressCutOffWindow)
	set(&l.LogBurst, DefaultEgressLogBurst)
	setD(&l.LogEvery, DefaultEgressLogEvery)
	return l
}

// egressTotalFor is the default TotalConns for an open file limit of
// nofile: the proxy's connections may take at most half of the
// descriptors, leaving the rest to the API, the database and the
// platforms, and never more than DefaultEgressMaxTotalConns of them.
func egressTotalFor(nofile uint64) int {
	return int(max(1, min(nofile/2/fdsPerConn, DefaultEgressMaxTotalConns)))
}

// openFileLimit is the process's RLIMIT_NOFILE (Go raises the soft limit
// to the hard one at start-up).
func openFileLimit() uint64 {
	var l unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &l); err != nil || l.Cur == unix.RLIM_INFINITY {
		return 1 << 20
	}
	return l.Cur
}

// EgressDoor is one sandbox's way to the proxy. Its Unix socket
// (SocketPath) is bound into that sandbox only; the sandbox's helper
// connects to it once, before the command starts, and hands over a
// socket listening on the sandbox's loopback. From then on the door is
// shut, and the proxy accepts the sandbox's connections on that socket,
// within EgressLimits. A sandbox that floods the proxy is cut off: its
// listener and all its connections are closed and CutOff says why.
type EgressDoor struct {
	e    *Egress
	name string
	sock string
	door *net.UnixListener
	life context.Context
	end  context.CancelFunc

	mu      sync.Mutex
	ln      net.Listener // the sandbox's, once handed over
	conns   map[*doorConn]struct{}
	open    int       // connections admitted and not yet closed
	since   time.Time // when the counts below started
	refused int
	bad     int
	cut     string
	closed  bool
}

// Open makes a door for one sandbox, named name in the log.
func (e *Egress) Open(name string) (*EgressDoor, error) {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return nil, errors.New("egress proxy: closed")
	}
	dir, err := stagingDir()
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	sock := filepath.Join(dir, fmt.Sprintf("egress-%d-%s.sock", os.Getpid(), hex.EncodeToString(b[:])))
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	// The sandbox's user connects to it; the staging directory keeps
	// other users from finding it.
	if err := os.Chmod(sock, 0o666); err != nil {
		ln.Close()
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	d := &EgressDoor{e: e, name: name, sock: sock, door: ln, conns: map[*doorConn]struct{}{}}
	d.life, d.end = context.WithCancel(e.life)
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		d.shut()
		return nil, errors.New("egress proxy: closed")
	}
	e.doors[d] = struct{}{}
	e.mu.Unlock()
	go d.receive()
	return d, nil
}

// SocketPath is the door's Unix socket on the host.
func (d *EgressDoor) SocketPath() string { return d.sock }

// CutOff says why the sandbox was cut off from the proxy ("it kept
// opening …"), or "" when it was not. A nil door was never cut off.
func (d *EgressDoor) CutOff() string {
	if d == nil {
		return ""
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cut
}

// Close shuts the door and ends the sandbox's connections and tunnels.
// Closing it again does nothing.
func (d *EgressDoor) Close() error {
	if d == nil {
		return nil
	}
	d.shut()
	d.e.mu.Lock()
	delete(d.e.doors, d)
	d.e.mu.Unlock()
	d.e.refusal.flush()
	return nil
}

// shut closes the door, the sandbox's listener and every connection.
func (d *EgressDoor) shut() {
	d.end()
	d.mu.Lock()
	d.closed = true
	ln := d.ln
	conns := make([]*doorConn, 0, len(d.conns))
	for c := range d.conns {
		conns = append(conns, c)
	}
	d.mu.Unlock()
	d.door.Close() // removes the socket too
	if ln != nil {
		ln.Close()
	}
	for _, c := range conns {
		c.Close()
	}
}

// cutOff cuts the sandbox off for reason, once.
func (d *EgressDoor) cutOff(reason string) {
	d.mu.Lock()
	if d.cut != "" || d.closed {
		d.mu.Unlock()
		return
	}
	d.cut = reason
	d.mu.Unlock()
	d.e.log.Warn("egress proxy cut a sandbox off", "sandbox", d.name, "why", reason)
	d.shut()
}

// receive takes the listener the sandbox's helper hands over, shuts the
// door and serves the sandbox's connections.
func (d *EgressDoor) receive() {
	c, err := d.door.AcceptUnix()
	if err != nil {
		return // closed before the sandbox came
	}
	d.door.Close() // one handover per sandbox
	ln, err := takeListener(c)
	if err != nil {
		c.Close()
		d.e.refusal.log("handover", "egress proxy refused what a sandbox's helper handed over", "sandbox", d.name, "err", err)
		return
	}
	_, _ = c.Write([]byte{handedOver})
	c.Close()
	l := d.e.limits
	srv := &http.Server{
		Handler:           http.HandlerFunc(d.handle),
		ReadHeaderTimeout: l.HeaderTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.HeaderBytes,
		ErrorLog:          slog.NewLogLogger(d.e.log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return context.WithValue(context.Background(), doorKey{}, d) },
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, doorConnKey{}, c)
		},
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		ln.Close()
		return
	}
	d.ln = ln
	d.mu.Unlock()
	_ = srv.Serve(&doorListener{Listener: ln, d: d})
}

// handedOver is the byte the proxy answers a handover with.
const handedOver = 1

// takeListener reads the one descriptor the sandbox's helper sends on c
// and makes it a listener, when it is a listening TCP socket.
func takeListener(c *net.UnixConn) (net.Listener, error) {
	_ = c.SetDeadline(time.Now().Add(handoverTimeout))
	var b [1]byte
	oob := make([]byte, unix.CmsgSpace(4*4))
	_, oobn, _, _, err := c.ReadMsgUnix(b[:], oob)
	if err != nil {
		return nil, fmt.Errorf("read the handover: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return nil, fmt.Errorf("read the handover: %w", err)
	}
	var fds []int
	for _, m := range msgs {
		if got, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, got...)
		}
	}
	if len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("it handed over %d descriptors, not one", len(fds))
	}
	fd := fds[0]
	if err := listeningTCP(fd); err != nil {
		unix.Close(fd)
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "sandbox listener")
	defer f.Close()
	return net.FileListener(f)
}

// listeningTCP says why fd is not a listening IPv4 TCP socket, or nil.
func listeningTCP(fd int) error {
	for _, o := range []struct {
		opt  int
		want int
		what string
	}{
		{unix.SO_DOMAIN, unix.AF_INET, "an IPv4 socket"},
		{unix.SO_TYPE, unix.SOCK_STREAM, "a stream socket"},
		{unix.SO_ACCEPTCONN, 1, "listening"},
	} {
		if v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, o.opt); err != nil || v != o.want {
			return fmt.Errorf("what it handed over is not %s", o.what)
		}
	}
	return nil
}

type (
	doorKey     struct{}
	doorConnKey struct{}
)

// doorOf is the door a request came through, or nil.
func doorOf(ctx context.Context) *EgressDoor {
	d, _ := ctx.Value(doorKey{}).(*EgressDoor)
	return d
}

// doorName names the sandbox a request came from, for the log ("-" for
// a request that came through no door).
func doorName(ctx context.Context) string {
	if d := doorOf(ctx); d != nil {
		return d.name
	}
	return "-"
}

// handle serves one request of the sandbox's.
func (d *EgressDoor) handle(w http.ResponseWriter, r *http.Request) {
	if c, ok := r.Context().Value(doorConnKey{}).(*doorConn); ok {
		c.served.Store(true)
	}
	d.e.ServeHTTP(w, r)
}

// doorListener accepts the sandbox's connections within the limits.
type doorListener struct {
	net.Listener
	d *EgressDoor
}

func (l *doorListener) Accept() (net.Conn, error) {
	d := l.d
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if !d.admit() {
			d.refuseTooMany(c)
			continue
		}
		// A slot of the proxy's total. While it waits, this sandbox holds
		// one descriptor more and accepts nothing; the rest wait in its
		// own listener's queue.
		select {
		case d.e.slots <- struct{}{}:
		case <-d.life.Done():
			c.Close()
			d.mu.Lock()
			d.open--
			d.mu.Unlock()
			return nil, net.ErrClosed
		}
		dc := &doorConn{Conn: c, d: d}
		d.mu.Lock()
		closed := d.closed
		if !closed {
			d.conns[dc] = struct{}{}
		}
		d.mu.Unlock()
		if closed {
			dc.Close()
			return nil, net.ErrClosed
		}
		return dc, nil
	}
}

// admit counts a new connection in, unless the sandbox has Conns open.
func (d *EgressDoor) admit() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.open >= d.e.limits.Conns {
		return false
	}
	d.open++
	return true
}

// refuseTooMany answers a connection past the sandbox's cap with 503 and
// closes it, and cuts the sandbox off once that has happened
// CutOffRefused times.
func (d *EgressDoor) refuseTooMany(c net.Conn) {
	l := d.e.limits
	// Counted and logged before it is answered: a sandbox that reads the
	// answer and opens the next connection finds this refusal counted, at
	// its time.
	d.mu.Lock()
	d.windowLocked()
	d.refused++
	n := d.refused
	d.mu.Unlock()
	d.e.refusal.log("too many connections", "egress proxy refused a sandbox's connection: too many open at once", "sandbox", d.name, "open", l.Conns)
	body := fmt.Sprintf("Taskloom's egress proxy refused a connection: this sandbox has %d open already.\n", l.Conns)
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	c.Close()
	if n >= l.CutOffRefused {
		d.cutOff(fmt.Sprintf("it kept opening more than %d connections at once to Taskloom's network proxy", l.Conns))
	}
}

// windowLocked starts the counts of refusals and bad connections again
// when CutOffWindow has passed since they started.
func (d *EgressDoor) windowLocked() {
	now := d.e.clock.Now()
	if d.since.IsZero() || now.Sub(d.since) >= d.e.limits.CutOffWindow {
		d.since, d.refused, d.bad = now, 0, 0
	}
}

// closedConn counts a connection out, and counts it as bad when it sent
// something but never a whole request.
func (d *EgressDoor) closedConn(c *doorConn) {
	l := d.e.limits
	bad := !c.served.Load() && c.read.Load() > 0
	d.mu.Lock()
	delete(d.conns, c)
	d.open--
	if bad {
		d.windowLocked()
		d.bad++
	}
	n := d.bad
	d.mu.Unlock()
	<-d.e.slots
	if !bad {
		return
	}
	d.e.refusal.log("bad request", "egress proxy closed a sandbox's connection that sent no whole request", "sandbox", d.name, "read", c.read.Load())
	if n >= l.CutOffBad {
		// The threshold, not n: connections closing together may pass it
		// at once, and the step says the same however they raced.
		d.cutOff(fmt.Sprintf("it sent %d requests to Taskloom's network proxy whose header was over %s, never ended within %s, or was not HTTP",
			l.CutOffBad, FormatBytes(int64(l.HeaderBytes)), l.HeaderTimeout))
	}
}

// doorConn is a sandbox's connection: it counts what it read, and
// whether a request was served on it.
type doorConn struct {
	net.Conn
	d      *EgressDoor
	read   atomic.Int64
	served atomic.Bool
	once   sync.Once
}

func (c *doorConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

func (c *doorConn) CloseWrite() error {
	closeWrite(c.Conn)
	return nil
}

func (c *doorConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.d.closedConn(c) })
	return err
}

// idleWatch ends a tunnel once neither way has carried a byte for idle.
type idleWatch struct {
	idle time.Duration
	last atomic.Int64 // unix nanoseconds of the last traffic
}

func newIdleWatch(idle time.Duration) *idleWatch {
	w := &idleWatch{idle: idle}
	w.last.Store(time.Now().UnixNano())
	return w
}

func (w *idleWatch) wrap(c net.Conn) net.Conn { return &idleConn{Conn: c, w: w} }

// quietSince is when the tunnel went quiet.
func (w *idleWatch) quietSince() time.Time { return time.Unix(0, w.last.Load()) }

// idleConn is one end of a tunnel watched by an idleWatch. It hides the
// connection's ReadFrom and WriteTo, so that copies go through Read and
// Write, where the deadlines are set.
type idleConn struct {
	net.Conn
	w *idleWatch
}

func (c *idleConn) Read(p []byte) (int, error) {
	for {
		_ = c.Conn.SetReadDeadline(c.w.quietSince().Add(c.w.idle))
		n, err := c.Conn.Read(p)
		if n > 0 {
			c.w.last.Store(time.Now().UnixNano())
		}
		if n == 0 && errors.Is(err, os.ErrDeadlineExceeded) && time.Since(c.w.quietSince()) < c.w.idle {
			continue // the other way carried something meanwhile
		}
		return n, err
	}
}

func (c *idleConn) Write(p []byte) (int, error) {
	_ = c.Conn.SetWriteDeadline(time.Now().Add(c.w.idle))
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.w.last.Store(time.Now().UnixNano())
	}
	return n, err
}

func (c *idleConn) CloseWrite() error {
	closeWrite(c.Conn)
	return nil
}

var tunnelBuffers = sync.Pool{New: func() any { b := make([]byte, tunnelBuffer); return &b }}

// pipe copies a to b and b to a until both directions end, passing a
// half-close on.
func pipe(a, b net.Conn) {
	done := make(chan struct{})
	copyHalf := func(dst, src net.Conn) {
		buf := tunnelBuffers.Get().(*[]byte)
		defer tunnelBuffers.Put(buf)
		_, _ = io.CopyBuffer(dst, src, *buf)
		closeWrite(dst)
	}
	go func() {
		copyHalf(b, a)
		close(done)
	}()
	copyHalf(a, b)
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	} else {
		_ = c.Close()
	}
}

// refusalLog logs the proxy's refusals at a bounded rate: the first
// burst of each interval one by one, then, once the interval is over (at
// the next refusal, or when a door closes), one line counting the rest
// by kind.
type refusalLog struct {
	out   *slog.Logger
	clock clock.Clock
	burst int
	every time.Duration

	mu      sync.Mutex
	since   time.Time
	logged  int
	dropped map[string]int
}

func newRefusalLog(out *slog.Logger, c clock.Clock, burst int, every time.Duration) *refusalLog {
	return &refusalLog{out: out, clock: c, burst: burst, every: every, dropped: map[string]int{}}
}

func (r *refusalLog) log(kind, msg string, attrs ...any) {
	r.mu.Lock()
	now := r.clock.Now()
	if r.since.IsZero() || now.Sub(r.since) >= r.every {
		r.summaryLocked()
		r.since, r.logged = now, 0
	}
	if r.logged >= r.burst {
		r.dropped[kind]++
		r.mu.Unlock()
		return
	}
	r.logged++
	r.mu.Unlock()
	r.out.Info(msg, attrs...)
}

// flush says what was left unlogged so far.
func (r *refusalLog) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.summaryLocked()
}

func (r *refusalLog) summaryLocked() {
	total := 0
	attrs := []any{"over", r.every}
	for _, kind := range slices.Sorted(maps.Keys(r.dropped)) {
		total += r.dropped[kind]
		attrs = append(attrs, kind, r.dropped[kind])
	}
	if total == 0 {
		return
	}
	clear(r.dropped)
	r.out.Warn(fmt.Sprintf("egress proxy: %d more refusals not logged one by one", total), attrs...)
}
