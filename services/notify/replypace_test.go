package notify_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/slack"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/slackfake"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
)

// TestRepliesKeepToABusyChannelsPace: people mention the bot in a Slack
// channel whose threads are busy with task progress, on the wall clock,
// against a fake that enforces Slack's per-channel limit (4 in any 4 s,
// threads counted with their channel). A reply sent beside the outbox's
// pace takes a place the pacer did not count, and the channel's next
// message draws a 429 that pauses it; the soak's two busy Slack channels
// drew over a thousand in 30 minutes and never drained. Paced with the
// notifications, every reply and every batch arrives and none draws a 429.
func TestRepliesKeepToABusyChannelsPace(t *testing.T) {
	if testing.Short() {
		t.Skip("runs on the wall clock for seconds")
	}
	const threads, mentions = 8, 8
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	st := teststore.Postgres(t)
	srv := slackfake.New(t)
	srv.EnforceLimits(slackfake.PublishedLimits)
	svcs, f := replicasSharing(t, st, 1, func(rt *plugin.Runtime) (*plugin.Plugin, error) {
		ad, err := slack.New(slack.Options{BotToken: srv.BotToken(), AppToken: srv.AppToken(), APIURL: srv.APIURL(), Runtime: rt})
		if err != nil {
			return nil, err
		}
		return ad.Plugin(), nil
	})
	if err := srv.WaitConnections(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for i := range threads {
		room := domain.ThreadRoom("slack", "C1", fmt.Sprintf("1772442000.%06d", i+1), true)
		task, err := f.tasks.Create(ctx, domain.NewTask{Goal: "Watch the build", RoomID: room,
			RequestorID: fmt.Sprintf("u%d", i), Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		f.iterate(task.Number, 10, domain.VerdictContinue, true)
	}
	if err := svcs[0].Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svcs[0].Stop(context.Background()) })
	asked := map[string]bool{}
	for range mentions {
		ev := srv.AppMention("C1", "U1", "hello there")
		asked[ev.TS] = true
		if _, err := srv.Deliver(ctx, ev); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	count := func() (replies, batches int) {
		for _, m := range srv.Messages() {
			switch {
			case asked[m.ThreadTS]:
				replies++
			case m.Channel == "C1":
				batches++
			}
		}
		return replies, batches
	}
	start := time.Now()
	for {
		replies, batches := count()
		if replies >= mentions && batches >= threads {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%d of %d replies and %d of %d batches arrived", replies, mentions, batches, threads)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("all arrived %s after the last mention", time.Since(start).Round(time.Millisecond))
	if n := srv.Throttled(); n > 0 {
		t.Errorf("the fake answered %d messages with 429; replies paced with the notifications draw none", n)
	}
	if replies, _ := count(); replies != mentions {
		t.Errorf("%d replies to %d mentions", replies, mentions)
	}
}
