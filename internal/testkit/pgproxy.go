package testkit

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// PostgresProxy stands between clients and a PostgreSQL server, passing
// the protocol through unchanged, and can lose the answer to a commit:
// the server has committed, the client never hears so — what a client
// sees when its connection breaks, or the server restarts, between the
// commit and its reply. It can also lose a statement on its way: the
// connection breaks before the server has it, so nothing of its
// transaction commits, and the client cannot tell the two apart.
type PostgresProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	armed int    // answers still to lose
	match string // in the text of a statement of the transaction
	lost  int
	// drops statements still to lose on their way, those whose text
	// contains dropMatch; dropped counts them.
	drops     int
	dropMatch string
	dropped   int
	conns     map[net.Conn]struct{}
	// down: the server is unreachable (SetDown).
	down bool
	wg   sync.WaitGroup
}

// ProxyPostgres starts a proxy in front of the server of dbURL, stopped
// when t ends, and returns it with dbURL pointed at it (without TLS, so
// the proxy can read what the server says).
func ProxyPostgres(t testing.TB, dbURL string) (*PostgresProxy, string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("proxy: %q is not a URL: %v", dbURL, err)
	}
	target := u.Host
	if u.Port() == "" {
		target = net.JoinHostPort(u.Hostname(), "5432")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &PostgresProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	q := u.Query()
	q.Set("sslmode", "disable")
	u.Host, u.RawQuery = ln.Addr().String(), q.Encode()
	return p, u.String()
}

// LoseAnswers makes the proxy lose the answers of the next n
// transactions that commit after running a statement whose text contains
// statement: it passes on what the server said before the commit's
// answer — COMMIT's CommandComplete, or for a pipeline committed at its
// Sync the ReadyForQuery that ends it — then closes both sides of that
// connection.
func (p *PostgresProxy) LoseAnswers(n int, statement string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed, p.match = n, statement
}

// LoseRequests makes the proxy lose the next n statements whose text
// contains statement on their way to the server: it passes on what the
// client sent before such a statement, then closes both sides of that
// connection, so the statement never runs and its transaction, never
// committed, is rolled back.
func (p *PostgresProxy) LoseRequests(n int, statement string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drops, p.dropMatch = n, statement
}

// SetDown makes the server unreachable through the proxy, or reachable
// again: while down, the proxy closes every connection it holds and each
// new one at once, as when PostgreSQL restarts (clients see their
// connections break, then fail to connect).
func (p *PostgresProxy) SetDown(down bool) {
	p.mu.Lock()
	p.down = down
	var open []net.Conn
	if down {
		for c := range p.conns {
			open = append(open, c)
		}
	}
	p.mu.Unlock()
	for _, c := range open {
		c.Close()
	}
}

// Dropped is how many statements the proxy has lost on their way.
func (p *PostgresProxy) Dropped() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// Lost is how many answers the proxy has lost.
func (p *PostgresProxy) Lost() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lost
}

func (p *PostgresProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			client.Close()
			continue
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		if !p.track(client, server) {
			return
		}
		c := &proxied{}
		p.wg.Add(2)
		go func() {
			defer p.wg.Done()
			p.requests(c, client, server)
			server.Close()
		}()
		go func() {
			defer p.wg.Done()
			p.answers(c, client, server)
			client.Close()
			server.Close()
			p.untrack(client, server)
		}()
	}
}

// track registers a pair of connections; false when the proxy is closed.
func (p *PostgresProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *PostgresProxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		delete(p.conns, c)
	}
}

// proxied is what the proxy knows of one connection.
type proxied struct {
	mu         sync.Mutex
	statements map[string]string // prepared statement name → its text
	marked     bool              // the transaction ran a matching statement
}

// messages calls fn for each whole protocol message (type byte, then
// length) at the start of buf, stopping early when fn says so, and
// returns how many bytes those messages took. Past the start-up message,
// both directions frame every message so.
func messages(buf []byte, fn func(typ byte, body []byte) bool) int {
	off := 0
	for len(buf)-off >= 5 {
		size := 1 + int(binary.BigEndian.Uint32(buf[off+1:off+5]))
		if size < 5 || len(buf)-off < size {
			break
		}
		if !fn(buf[off], buf[off+5:off+size]) {
			break
		}
		off += size
	}
	return off
}

// cstring splits the NUL-terminated string at the start of b from the rest.
func cstring(b []byte) (string, []byte) {
	s, rest, _ := bytes.Cut(b, []byte{0})
	return string(s), rest
}

// requests passes the client's messages on, marking the connection's
// transaction when it runs a statement that matches.
func (p *PostgresProxy) requests(c *proxied, client, server net.Conn) {
	// The start-up message has no type byte: pass it on as it is.
	var head [4]byte
	if _, err := io.ReadFull(client, head[:]); err != nil {
		return
	}
	startup := make([]byte, binary.BigEndian.Uint32(head[:]))
	copy(startup, head[:])
	if _, err := io.ReadFull(client, startup[4:]); err != nil {
		return
	}
	if _, err := server.Write(startup); err != nil {
		return
	}
	var buf []byte
	chunk := make([]byte, 32<<10)
	for {
		n, err := client.Read(chunk)
		buf = append(buf, chunk[:n]...)
		drop := false
		off := messages(buf, func(typ byte, body []byte) bool {
			drop = c.see(p, typ, body)
			return !drop
		})
		// Marked before the server can answer: forward after.
		if off > 0 {
			if _, werr := server.Write(buf[:off]); werr != nil {
				return
			}
			buf = append(buf[:0], buf[off:]...)
		}
		if err != nil || drop {
			return // the caller closes the server's side, then the client's
		}
	}
}

// see notes a client message: a statement prepared, or run. It reports
// whether the message is to be lost on its way (LoseRequests).
func (c *proxied) see(p *PostgresProxy, typ byte, body []byte) bool {
	var text string
	switch typ {
	case 'P': // Parse: name, query
		name, rest := cstring(body)
		q, _ := cstring(rest)
		c.mu.Lock()
		if c.statements == nil {
			c.statements = map[string]string{}
		}
		c.statements[name] = q
		c.mu.Unlock()
		return false
	case 'B': // Bind: portal, statement
		_, rest := cstring(body)
		name, _ := cstring(rest)
		c.mu.Lock()
		text = c.statements[name]
		c.mu.Unlock()
	case 'Q': // a simple query
		text, _ = cstring(body)
	default:
		return false
	}
	p.mu.Lock()
	drop := p.drops > 0 && strings.Contains(text, p.dropMatch)
	if drop {
		p.drops--
		p.dropped++
	}
	hit := !drop && p.armed > 0 && strings.Contains(text, p.match)
	p.mu.Unlock()
	if hit {
		c.mu.Lock()
		c.marked = true
		c.mu.Unlock()
	}
	return drop
}

// commitComplete is the body of the CommandComplete that answers a
// COMMIT which committed.
var commitComplete = []byte("COMMIT\x00")

// rollbackComplete answers a ROLLBACK, or a COMMIT of a failed
// transaction.
var rollbackComplete = []byte("ROLLBACK\x00")

// answers passes the server's messages on to the client whole, until
// either side closes or the answer to a marked transaction's commit is to
// be lost.
func (p *PostgresProxy) answers(c *proxied, client, server net.Conn) {
	var buf []byte
	chunk := make([]byte, 32<<10)
	for {
		n, err := server.Read(chunk)
		buf = append(buf, chunk[:n]...)
		lose := false
		off := messages(buf, func(typ byte, body []byte) bool {
			switch {
			case typ == 'C' && bytes.Equal(body, commitComplete),
				typ == 'Z' && len(body) == 1 && body[0] == 'I': // ReadyForQuery, idle: committed at Sync
				lose = c.commits() && p.loseOne()
			case typ == 'E', // ErrorResponse: the transaction fails
				typ == 'C' && bytes.Equal(body, rollbackComplete):
				c.commits()
			}
			return !lose
		})
		if lose {
			_, _ = client.Write(buf[:off])
			return
		}
		if off > 0 {
			if _, werr := client.Write(buf[:off]); werr != nil {
				return
			}
			buf = append(buf[:0], buf[off:]...)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				_, _ = client.Write(buf)
			}
			return
		}
	}
}

// commits ends the connection's transaction, reporting whether it was
// marked.
func (c *proxied) commits() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.marked
	c.marked = false
	return m
}

// loseOne reports whether an answer is to be lost, counting it.
func (p *PostgresProxy) loseOne() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.armed == 0 {
		return false
	}
	p.armed--
	p.lost++
	return true
}

func (p *PostgresProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}
