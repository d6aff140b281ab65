package slack_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/slack"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit/slackfake"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
)

func goneErr(err error) bool {
	var g *plugin.MessageGoneError
	return errors.As(err, &g)
}

func undeliverableErr(err error) bool {
	var u *plugin.UndeliverableError
	return errors.As(err, &u)
}

// actionIDs are the action IDs of a message's buttons.
func actionIDs(m slackfake.Message) []string {
	var ids []string
	for _, b := range m.Blocks {
		for _, e := range b.Elements {
			if e.ActionID != "" {
				ids = append(ids, e.ActionID)
			}
		}
	}
	return ids
}

func editAdapter(t *testing.T) (*slack.Adapter, *slackfake.Server) {
	t.Helper()
	clk := clock.NewFake(epoch)
	fake := slackfake.New(t, slackfake.WithNow(clk.Now))
	rt := plugin.New(plugin.Options{Store: teststore.SQLite(t), Clock: clk, Logger: testLogger(t)})
	a, err := slack.New(slack.Options{BotToken: fake.BotToken(), SigningSecret: fake.SigningSecret(), APIURL: fake.APIURL(), Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	return a, fake
}

// TestEditReplacesACardInPlace: Edit rewrites the app's message — at the
// top of a channel or in a thread — through chat.update, with blocks and
// the task's buttons, or with the buttons removed; the same edit twice
// leaves the same message.
func TestEditReplacesACardInPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, fake := editAdapter(t)
	thread := fake.TS()
	for _, room := range []string{"slack:C1", "slack:C1:" + thread} {
		sent, err := a.SendOnce(ctx, room, plugin.Outgoing{Text: "📋 card v1", Tasks: []int64{7}}, "card-"+room, time.Time{})
		if err != nil || len(sent.IDs) != 1 {
			t.Fatalf("SendOnce = %v, %v", sent, err)
		}
		ts := sent.IDs[0]
		card := plugin.Outgoing{Text: "📋 card v2", Tasks: []int64{7}}
		for range 2 {
			if err := a.Edit(ctx, room, ts, card); err != nil {
				t.Fatalf("Edit in %s: %v", room, err)
			}
		}
		ms := fake.Messages()
		m := ms[len(ms)-1]
		if m.TS != ts || m.Text != card.Text || m.Edits != 2 || len(m.Blocks) == 0 || m.Blocks[0].Text.Text != card.Text {
			t.Fatalf("message after two edits = %+v", m)
		}
		if ids := actionIDs(m); !slices.Equal(ids, []string{slack.ActionPause, slack.ActionResume, slack.ActionCancel}) {
			t.Errorf("buttons = %v", ids)
		}
		if m.Metadata == nil || m.Metadata.EventPayload["key"] != "card-"+room {
			t.Errorf("the edit lost the card's metadata: %+v", m.Metadata)
		}
		if err := a.Edit(ctx, room, ts, plugin.Outgoing{Text: "📋 final"}); err != nil {
			t.Fatal(err)
		}
		ms = fake.Messages()
		if m := ms[len(ms)-1]; m.Text != "📋 final" || len(actionIDs(m)) != 0 {
			t.Errorf("final edit = %+v; want the text and no buttons", m)
		}
	}
	for _, c := range fake.CallsTo("chat.update") {
		if c.Params.Get("channel") != "C1" || c.Params.Get("blocks") == "" {
			t.Errorf("chat.update params = %v", c.Params)
		}
	}
}

// TestEditErrors: a message deleted, not the app's or past the edit
// window is gone (the card is posted again); a channel gone or closed to
// the app is undeliverable; a 429 is a rate limit; text longer than one
// message is refused without a request.
func TestEditErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, fake := editAdapter(t)
	sent, err := a.Send(ctx, "slack:C1", plugin.Outgoing{Text: "card"})
	if err != nil {
		t.Fatal(err)
	}
	ts := sent.IDs[0]
	fake.DeleteMessage("C1", ts)
	err = a.Edit(ctx, "slack:C1", ts, plugin.Outgoing{Text: "v2"})
	if !goneErr(err) || !strings.Contains(err.Error(), "message_not_found") {
		t.Errorf("edit of a deleted message = %v; want it gone", err)
	}
	for _, code := range []string{"cant_update_message", "edit_window_closed"} {
		fake.FailNext("chat.update", code)
		if err := a.Edit(ctx, "slack:C1", ts, plugin.Outgoing{Text: "v2"}); !goneErr(err) || undeliverableErr(err) {
			t.Errorf("edit answered %s = %v; want it gone", code, err)
		}
	}
	for _, code := range []string{"channel_not_found", "is_archived"} {
		fake.FailNext("chat.update", code)
		if err := a.Edit(ctx, "slack:C1", ts, plugin.Outgoing{Text: "v2"}); !undeliverableErr(err) || goneErr(err) {
			t.Errorf("edit answered %s = %v; want it undeliverable", code, err)
		}
	}
	fake.RateLimitNext("chat.update", 4*time.Second)
	var rl *plugin.RateLimitedError
	if err := a.Edit(ctx, "slack:C1", ts, plugin.Outgoing{Text: "v2"}); !errors.As(err, &rl) || rl.RetryAfter != 4*time.Second {
		t.Errorf("edit into a 429 = %v; want a rate limit of 4s", err)
	}
	before := len(fake.CallsTo("chat.update"))
	if err := a.Edit(ctx, "slack:C1", ts, plugin.Outgoing{Text: strings.Repeat("x", 50000)}); err == nil || len(fake.CallsTo("chat.update")) != before {
		t.Errorf("an edit longer than a message = %v", err)
	}
}

// TestRefusedMessagesAreUndeliverable: a message Slack refuses as such
// (too long, blocks it does not take, a channel where the app may not
// post) would be refused again on every attempt, since every attempt
// sends its first rendering: it is given up at once instead of holding
// its room's later messages for a day. Slack's own trouble is tried
// again.
func TestRefusedMessagesAreUndeliverable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, fake := editAdapter(t)
	for _, c := range []struct {
		code  string
		given bool
	}{
		{"msg_too_long", true},
		{"invalid_blocks", true},
		{"restricted_action", true},
		{"not_in_channel", true},
		{"internal_error", false},
		{"fatal_error", false},
	} {
		fake.FailNext("chat.postMessage", c.code)
		_, err := a.Send(ctx, "slack:C1", plugin.Outgoing{Text: "progress"})
		if err == nil {
			t.Fatalf("%s: the send succeeded", c.code)
		}
		if undeliverableErr(err) != c.given {
			t.Errorf("%s: undeliverable = %v, want %v (%v)", c.code, undeliverableErr(err), c.given, err)
		}
	}
}
