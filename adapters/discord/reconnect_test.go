package discord_test

import (
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/discord"
)

// gate forwards TCP connections to target once opened; before, it takes
// each connection and closes it at once, as a network that is down does.
type gate struct {
	ln     net.Listener
	target string
	open   atomic.Bool
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn // closed at cleanup: a client's idle keep-alive would hold it
}

func newGate(t *testing.T, target string) *gate {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{ln: ln, target: target}
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

func (g *gate) forward(c net.Conn) {
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

// TestDiscordDownAtStartIsRetried: Discord cannot be reached when the
// service starts; start-up goes on, and the adapter connects once it can,
// on its own backoff (the service's clock), and then answers mentions.
func TestDiscordDownAtStartIsRetried(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	u, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	g := newGate(t, u.Host)
	b := newUnstarted(t, srv, func(o *discord.Options) { o.APIURL = "http://" + g.ln.Addr().String() + "/" })
	if err := b.core.Runtime.Start(b.ctx); err != nil {
		t.Fatalf("start-up with Discord down: %v; want it to go on", err)
	}
	if err := b.core.Tasks.Stop(b.ctx); err != nil {
		t.Fatal(err)
	}
	if n := srv.Connected(); n != 0 {
		t.Fatalf("%d gateway sessions while Discord is down", n)
	}
	g.open.Store(true)
	deadline := time.Now().Add(20 * time.Second)
	for srv.Connected() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the adapter did not connect once Discord could be reached")
		}
		b.clk.Advance(time.Second) // its backoff runs on the service's clock
		time.Sleep(10 * time.Millisecond)
	}
	srv.MessageCreate(channelID, guildID, alice, b.mention("create task Build auth"))
	mustContain(t, "reply", b.messages(channelID, 1)[0].Content, `Created task #1 "Build auth"`)
}
