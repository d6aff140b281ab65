package discord_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/discord"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit/discordfake"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
)

// TestSendOnceNoncesEveryPart: each part of a notification's message
// carries the nonce "<key>.<part>" with enforce_nonce, so a second
// attempt at the same message creates nothing and gets the same messages
// back; Send, for other messages, carries none.
func TestSendOnceNoncesEveryPart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(t0)
	srv := newFake(t, discordfake.WithNow(clk.Now))
	rt := plugin.New(plugin.Options{Store: teststore.SQLite(t), Clock: clk, Logger: testLogger()})
	a, err := discord.New(discord.Options{Token: srv.Token(), APIURL: srv.URL(), Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	room := "discord:" + channelID
	text := strings.Repeat("a", 1500) + "\n" + strings.Repeat("b", 1500) // two parts

	first, err := a.SendOnce(ctx, room, plugin.Outgoing{Text: text}, "3-abc", time.Time{})
	if err != nil || len(first.IDs) != 2 {
		t.Fatalf("first attempt = %v, %v", first.IDs, err)
	}
	again, err := a.SendOnce(ctx, room, plugin.Outgoing{Text: text}, "3-abc", clk.Now())
	if err != nil || !slices.Equal(again.IDs, first.IDs) {
		t.Fatalf("second attempt = %v, %v; want the first attempt's messages %v", again.IDs, err, first.IDs)
	}
	if ms := srv.Messages(channelID); len(ms) != 2 || ms[0].Nonce != "3-abc.0" || ms[1].Nonce != "3-abc.1" {
		t.Fatalf("messages = %+v; want two, with nonces 3-abc.0 and 3-abc.1", ms)
	}
	for _, c := range srv.CallsTo("POST", "/channels/"+channelID+"/messages") {
		var body struct {
			Nonce        string `json:"nonce"`
			EnforceNonce bool   `json:"enforce_nonce"`
		}
		if err := c.Decode(&body); err != nil || !body.EnforceNonce || !strings.HasPrefix(body.Nonce, "3-abc.") {
			t.Errorf("request %s: nonce %q enforce %v (%v)", c.JSON, body.Nonce, body.EnforceNonce, err)
		}
	}

	if _, err := a.Send(ctx, room, plugin.Outgoing{Text: "not a notification"}); err != nil {
		t.Fatal(err)
	}
	if ms := srv.Messages(channelID); len(ms) != 3 || ms[2].Nonce != "" {
		t.Fatalf("Send's message = %+v; want it without a nonce", ms[len(ms)-1])
	}
}
