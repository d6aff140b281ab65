package discord_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/discord"
	"github.com/taskloom/taskloom/internal/testkit"
)

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
	g := testkit.NewGate(t, u.Host)
	b := newUnstarted(t, srv, func(o *discord.Options) { o.APIURL = "http://" + g.Addr() + "/" })
	if err := b.core.Runtime.Start(b.ctx); err != nil {
		t.Fatalf("start-up with Discord down: %v; want it to go on", err)
	}
	if err := b.core.Tasks.Stop(b.ctx); err != nil {
		t.Fatal(err)
	}
	if n := srv.Connected(); n != 0 {
		t.Fatalf("%d gateway sessions while Discord is down", n)
	}
	g.Open()
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
