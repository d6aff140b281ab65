package discord_test

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/discord"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit/discordfake"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
)

// sender is an adapter of a runtime on clk that sends to srv, not
// started: notifications need no gateway.
func sender(t *testing.T, srv *discordfake.Server, clk *clock.Fake) *discord.Adapter {
	t.Helper()
	rt := plugin.New(plugin.Options{Store: teststore.SQLite(t), Clock: clk, Logger: testLogger()})
	a, err := discord.New(discord.Options{Token: srv.Token(), APIURL: srv.URL(), Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestSendOnceNoncesEveryPart: each part of a notification's message
// carries the nonce "<key>.<part>" with enforce_nonce, so a second
// attempt at the same message creates nothing and gets the same messages
// back; Send, for other messages, carries none.
func TestSendOnceNoncesEveryPart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(t0)
	srv := newFake(t, discordfake.WithNow(clk.Now))
	a := sender(t, srv, clk)
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

// TestSendOnceAfterTheNonceWindowLooksInTheHistory: an attempt at a
// three-part message posted its first part and its replica died. Another
// replica tries again after Discord has forgotten the nonce: it finds the
// part in the channel's history (the bot's, with that text, since the
// attempt began) and posts only the other two. A message with the first
// part's text that the bot posted an hour before the attempt is not taken
// for it.
func TestSendOnceAfterTheNonceWindowLooksInTheHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(t0)
	srv := newFake(t, discordfake.WithNow(clk.Now))
	a, b := sender(t, srv, clk), sender(t, srv, clk) // two replicas
	room := "discord:" + channelID
	first, second, third := strings.Repeat("a", 1500), strings.Repeat("b", 1500), strings.Repeat("c", 1500)

	old, err := a.Send(ctx, room, plugin.Outgoing{Text: first})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	began := clk.Now()
	posted, err := a.SendOnce(ctx, room, plugin.Outgoing{Text: first}, "7-abc", time.Time{}) // the attempt's first part, nonce 7-abc.0
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(discordfake.DefaultNonceWindow + time.Minute)

	got, err := b.SendOnce(ctx, room, plugin.Outgoing{Text: first + "\n" + second + "\n" + third}, "7-abc", began)
	if err != nil {
		t.Fatal(err)
	}
	ms := srv.Messages(channelID)
	if len(ms) != 4 || len(got.IDs) != 3 || got.IDs[0] != posted.IDs[0] || got.IDs[0] == old.IDs[0] {
		t.Fatalf("the retry's messages = %v, %d in the channel; want the attempt's first part (%s, not the older %s) and two new ones",
			got.IDs, len(ms), posted.IDs[0], old.IDs[0])
	}
	if ms[2].Content != second || ms[3].Content != third || ms[2].ID != got.IDs[1] || ms[3].ID != got.IDs[2] {
		t.Fatalf("the parts posted = %q…, %q…; want the second and the third", ms[2].Content[:1], ms[3].Content[:1])
	}
}

// TestSendOnceHistoryUnreadable: when the look in the history fails
// (here a 500), nothing is posted blind — the send fails, for the outbox
// to try again.
func TestSendOnceHistoryUnreadable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(t0)
	srv := newFake(t, discordfake.WithNow(clk.Now))
	a := sender(t, srv, clk)
	began := clk.Now()
	clk.Advance(10 * time.Minute)
	srv.FailNext("GET", "/channels/"+channelID+"/messages", 1, http.StatusInternalServerError)
	if _, err := a.SendOnce(ctx, "discord:"+channelID, plugin.Outgoing{Text: "#3 Build auth: 40% → 60%"}, "9-abc", began); err == nil {
		t.Fatal("SendOnce succeeded though the history could not be read")
	}
	if ms := srv.Messages(channelID); len(ms) != 0 {
		t.Fatalf("%d messages posted; want none before the history is read", len(ms))
	}
	if _, err := a.SendOnce(ctx, "discord:"+channelID, plugin.Outgoing{Text: "#3 Build auth: 40% → 60%"}, "9-abc", began); err != nil {
		t.Fatal(err)
	}
	if ms := srv.Messages(channelID); len(ms) != 1 {
		t.Fatalf("%d messages after the retry; want 1", len(ms))
	}
}

// TestRefusedMessagesAreUndeliverable: a message Discord refuses as such
// (a 400 or another 4xx) would be refused again on every attempt, since
// every attempt sends its first rendering; it is given up at once instead
// of holding its room's later messages for a day. A revoked token (401),
// a timeout (408) and a server error are tried again: they say nothing
// about the message.
func TestRefusedMessagesAreUndeliverable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(t0)
	srv := newFake(t, discordfake.WithNow(clk.Now))
	a := sender(t, srv, clk)
	room := "discord:" + channelID
	for i, c := range []struct {
		status int
		given  bool
	}{
		{http.StatusBadRequest, true},
		{http.StatusRequestEntityTooLarge, true},
		{http.StatusForbidden, true},
		{http.StatusUnauthorized, false},
		{http.StatusRequestTimeout, false},
		{http.StatusNotFound, false}, // not Unknown Channel
		{http.StatusInternalServerError, false},
	} {
		srv.FailNext("POST", "/channels/"+channelID+"/messages", 1, c.status)
		_, err := a.SendOnce(ctx, room, plugin.Outgoing{Text: "progress"}, "k"+strconv.Itoa(i), time.Time{})
		if err == nil {
			t.Fatalf("%d: the send succeeded", c.status)
		}
		if undeliverableErr(err) != c.given {
			t.Errorf("%d: undeliverable = %v, want %v (%v)", c.status, undeliverableErr(err), c.given, err)
		}
	}
}
