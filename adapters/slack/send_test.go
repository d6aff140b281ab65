package slack_test

import (
	"context"
	"strings"
	"testing"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/taskloom/taskloom/adapters/slack"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit/slackfake"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
)

// TestSendOnceSkipsThePartsAnEarlierAttemptPosted: a message in two parts
// whose first part an earlier attempt posted (before a rate limit, a
// timeout or a crash) gets only its second part posted, and both parts'
// ts back.
func TestSendOnceSkipsThePartsAnEarlierAttemptPosted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(epoch)
	fake := slackfake.New(t, slackfake.WithNow(clk.Now))
	rt := plugin.New(plugin.Options{Store: teststore.SQLite(t), Clock: clk, Logger: testLogger(t)})
	a, err := slack.New(slack.Options{BotToken: fake.BotToken(), SigningSecret: fake.SigningSecret(), APIURL: fake.APIURL(), Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("a", 30000) + "\n" + strings.Repeat("b", 30000)

	// The earlier attempt posted part 0 of 2, with the metadata SendOnce
	// gives it, and another message of the channel came after it.
	api := slackapi.New(fake.BotToken(), slackapi.OptionAPIURL(fake.APIURL()))
	_, first, err := api.PostMessageContext(ctx, "C1", slackapi.MsgOptionText(strings.Repeat("a", 30000), false),
		slackapi.MsgOptionMetadata(slackapi.SlackMetadata{EventType: slack.NotificationEventType,
			EventPayload: map[string]any{"key": "k-1", "part": 0, "parts": 2}}))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.PostMessageContext(ctx, "C1", slackapi.MsgOptionText("someone else's news", false)); err != nil {
		t.Fatal(err)
	}

	sent, err := a.SendOnce(ctx, "slack:C1", plugin.Outgoing{Text: text}, "k-1", clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	posts := fake.CallsTo("chat.postMessage")
	if len(posts) != 3 || !strings.HasPrefix(posts[2].Params.Get("text"), "bbb") {
		t.Fatalf("%d posts; want the earlier two and the second part", len(posts))
	}
	if len(sent.IDs) != 2 || sent.IDs[0] != first {
		t.Fatalf("sent = %v; want the found part's ts %s first", sent.IDs, first)
	}
	if h := fake.CallsTo("conversations.history"); len(h) != 1 || h[0].Params.Get("include_all_metadata") != "1" {
		t.Fatalf("history calls = %+v", h)
	}

	// A first attempt looks nothing up.
	if _, err := a.SendOnce(ctx, "slack:C1", plugin.Outgoing{Text: "short"}, "k-2", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if h := fake.CallsTo("conversations.history"); len(h) != 1 {
		t.Fatalf("a first attempt looked up the history: %d calls", len(h))
	}
	ms := fake.Messages()
	if last := ms[len(ms)-1]; last.Text != "short" || last.Metadata == nil || last.Metadata.EventType != slack.NotificationEventType ||
		last.Metadata.EventPayload["key"] != "k-2" || last.Metadata.EventPayload["part"] != float64(0) {
		t.Fatalf("last message = %+v, metadata %+v", last, last.Metadata)
	}
}
