package testkit

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Gate stands between a client and a server on loopback: while shut it
// takes each connection and closes it at once, as a network that is down
// does; once opened it forwards connections to the server. It lives as
// long as the test, and closes the connections it forwards at the end
// (a client's idle keep-alive would hold them).
type Gate struct {
	ln     net.Listener
	target string
	open   atomic.Bool
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

// NewGate starts a shut gate to target (host:port).
func NewGate(t testing.TB, target string) *Gate {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &Gate{ln: ln, target: target}
	g.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !g.open.Load() {
				c.Close()
				continue
			}
			g.wg.Go(func() { g.forward(c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		g.mu.Lock()
		for _, c := range g.conns {
			c.Close()
		}
		g.mu.Unlock()
		g.wg.Wait()
	})
	return g
}

// Addr is the gate's host:port.
func (g *Gate) Addr() string { return g.ln.Addr().String() }

// Open lets connections through from now on.
func (g *Gate) Open() { g.open.Store(true) }

func (g *Gate) forward(c net.Conn) {
	defer c.Close()
	up, err := net.Dial("tcp", g.target)
	if err != nil {
		return
	}
	defer up.Close()
	g.mu.Lock()
	g.conns = append(g.conns, c, up)
	g.mu.Unlock()
	go func() { _, _ = io.Copy(up, c); up.Close() }()
	_, _ = io.Copy(c, up)
}
