package discord_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/plugin"
)

// gone is what services/notify looks for to post a card again.
func gone(err error) bool {
	var g *plugin.MessageGoneError
	return errors.As(err, &g)
}

func undeliverableErr(err error) bool {
	var u *plugin.UndeliverableError
	return errors.As(err, &u)
}

// TestEditReplacesACardInPlace: Edit rewrites the bot's message — in a
// channel or in a thread — with the new text, no mentions and the
// task's current controls, or none for a message about no task; the same
// edit twice leaves the same message.
func TestEditReplacesACardInPlace(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	b := start(t, srv)
	const thread = "1300000000000000050"
	srv.AddThread(thread, channelID, alice, "#1 Build auth")
	srv.MessageCreate(channelID, guildID, alice, b.mention("create task Build auth"))
	b.messages(channelID, 1)

	for _, r := range []struct{ room, channel string }{
		{"discord:" + channelID, channelID},
		{"discord:" + channelID + ":" + thread, thread},
	} {
		sent, err := b.ad.SendOnce(b.ctx, r.room, plugin.Outgoing{Text: "📋 card v1", Tasks: []int64{1}}, "card-"+r.channel, time.Time{})
		if err != nil || len(sent.IDs) != 1 {
			t.Fatalf("SendOnce = %v, %v", sent, err)
		}
		id := sent.IDs[0]
		card := plugin.Outgoing{Text: "📋 card v2 <@" + alice + "> @everyone", Tasks: []int64{1}}
		for range 2 {
			if err := b.ad.Edit(b.ctx, r.room, id, card); err != nil {
				t.Fatalf("Edit in %s: %v", r.room, err)
			}
		}
		m, ok := srv.Message(id)
		if !ok || m.ChannelID != r.channel || m.Content != card.Text || m.Edits != 2 {
			t.Fatalf("message after two edits = %+v", m)
		}
		pingsNobody(t, m)
		if ids := m.CustomIDs(); !slices.Equal(ids, []string{"taskloom:pause:1", "taskloom:cancel:1"}) {
			t.Errorf("buttons = %v; want the task's Pause and Cancel", ids)
		}
		if err := b.ad.Edit(b.ctx, r.room, id, plugin.Outgoing{Text: "📋 final"}); err != nil {
			t.Fatal(err)
		}
		if m, _ := srv.Message(id); m.Content != "📋 final" || len(m.Components) != 0 {
			t.Errorf("final edit left %q with %d component rows", m.Content, len(m.Components))
		}
		if ms := srv.Messages(r.channel); ms[len(ms)-1].ID != id {
			t.Errorf("an edit posted a message")
		}
	}
}

// TestEditErrors: a deleted message is gone (the card is posted again), a
// channel that is gone or forbidden is undeliverable, a 429 is a rate
// limit returned at once, and text longer than one message is refused
// without a request.
func TestEditErrors(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	b := start(t, srv)
	room := "discord:" + channelID
	post := func() string {
		t.Helper()
		sent, err := b.ad.Send(b.ctx, room, plugin.Outgoing{Text: "card"})
		if err != nil {
			t.Fatal(err)
		}
		return sent.IDs[0]
	}

	id := post()
	srv.DeleteMessage(id)
	err := b.ad.Edit(b.ctx, room, id, plugin.Outgoing{Text: "v2"})
	if !gone(err) || undeliverableErr(err) || !strings.Contains(err.Error(), "Unknown Message") {
		t.Errorf("edit of a deleted message = %v; want it gone", err)
	}

	id = post()
	path := "/channels/" + channelID + "/messages/" + id
	srv.RateLimitNext("PATCH", path, 1, 1500*time.Millisecond, false)
	err = b.ad.Edit(b.ctx, room, id, plugin.Outgoing{Text: "v2"})
	var rl *plugin.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != 1500*time.Millisecond {
		t.Fatalf("edit into a 429 = %v; want a rate limit of 1.5s", err)
	}
	// The bucket is exhausted: the next edit is refused without a request.
	if err := b.ad.Edit(b.ctx, room, id, plugin.Outgoing{Text: "v2"}); !errors.As(err, &rl) {
		t.Errorf("edit into an exhausted bucket = %v", err)
	}
	if cs := srv.CallsTo("PATCH", path); len(cs) != 1 || cs[0].Status != http.StatusTooManyRequests {
		t.Errorf("PATCH calls = %d; want only the one answered 429", len(cs))
	}

	if err := b.ad.Edit(b.ctx, room, id, plugin.Outgoing{Text: strings.Repeat("x\n", 1500)}); err == nil || len(srv.CallsTo("PATCH", path)) != 1 {
		t.Errorf("an edit longer than a message = %v", err)
	}

	const other = "1300000000000000060"
	srv.AddChannel(other, guildID)
	sent, err := b.ad.Send(b.ctx, "discord:"+other, plugin.Outgoing{Text: "card"})
	if err != nil {
		t.Fatal(err)
	}
	srv.DenyChannel(other)
	if err := b.ad.Edit(b.ctx, "discord:"+other, sent.IDs[0], plugin.Outgoing{Text: "v2"}); !undeliverableErr(err) || gone(err) {
		t.Errorf("edit in a forbidden channel = %v; want it undeliverable", err)
	}
	srv.RemoveChannel(other)
	if err := b.ad.Edit(b.ctx, "discord:"+other, sent.IDs[0], plugin.Outgoing{Text: "v2"}); !undeliverableErr(err) || gone(err) {
		t.Errorf("edit in a deleted channel = %v; want it undeliverable", err)
	}
}
