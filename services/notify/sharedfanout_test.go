package notify_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/discord"
	"github.com/taskloom/taskloom/adapters/slack"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit/discordfake"
	"github.com/taskloom/taskloom/internal/testkit/slackfake"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/notify"
	"github.com/taskloom/taskloom/services/tasks"
)

// TestReplicasShareTheBotsPace: three replicas sending as one Discord bot
// through one PostgreSQL flush 240 rooms at once into a fake that
// enforces Discord's published limits on the wall clock (50 requests in
// any second per bot): each replica alone would pace to 45 a second and
// together draw global 429s; sharing the pace, they draw none, and every
// room gets its message.
func TestReplicasShareTheBotsPace(t *testing.T) {
	if testing.Short() {
		t.Skip("runs on the wall clock for seconds")
	}
	const rooms, replicas = 240, 3
	ctx := context.Background()
	begin := time.Now()
	st := teststore.Postgres(t)
	const guild = "1200000000000000001"
	var ids []string
	for i := range rooms {
		ids = append(ids, strconv.Itoa(1400000000000000000+i))
	}
	srv := discordfake.New(t, discordfake.WithGuild(discordfake.Guild{ID: guild, Name: "Fan-out", ChannelIDs: ids}))
	srv.EnforceLimits(discordfake.PublishedLimits)
	svcs, f := replicasSharing(t, st, replicas, func(rt *plugin.Runtime) (*plugin.Plugin, error) {
		ad, err := discord.New(discord.Options{Token: srv.Token(), APIURL: srv.URL(), Runtime: rt})
		if err != nil {
			return nil, err
		}
		return ad.Plugin(), nil
	})
	for i, id := range ids {
		task, err := f.tasks.Create(ctx, domain.NewTask{Goal: "Watch the build", RoomID: "discord:" + id,
			RequestorID: fmt.Sprintf("u%d", i), Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		f.iterate(task.Number, 10, domain.VerdictContinue, true)
	}
	t.Logf("%d rooms pending after %s", rooms, time.Since(begin).Round(time.Millisecond))
	delivered := func() map[string]int {
		got := map[string]int{}
		for _, c := range srv.CallsTo("POST", "/channels/") {
			channel, tail, _ := strings.Cut(strings.TrimPrefix(c.Path, "/channels/"), "/")
			if tail == "messages" && c.Status == 200 {
				got[channel]++
			}
		}
		return got
	}
	startAndWait(t, svcs, rooms, delivered)
	if got := len(delivered()); got != rooms {
		t.Errorf("%d of %d rooms got their message", got, rooms)
	}
	if all, global := srv.Throttled(); all > 0 {
		t.Errorf("the fake answered %d requests with 429 (%d global); replicas sharing the bot's pace draw none", all, global)
	}
}

// TestReplicasShareASlackBotsPace: three replicas sending as one Slack bot
// through one PostgreSQL flush 60 channels at once into a fake that
// enforces Slack's per-channel limit and a workspace limit a little above
// the 20 in 4 s the adapter keeps to (22 in 3.5 s: a request reaches the
// fake some time after the pacer took it, later on a busy machine), on
// the wall clock; each replica alone would send 20 at once. Slack's global
// window is four epochs long: a replica's share grows only once that
// window has passed, which must still happen while the beats go on (it
// did not: the replicas that joined the first never had a share, and
// held the rooms they claimed waiting for one — the soak's Slack stall).
// Sharing, they draw no 429 and every channel gets its message.
func TestReplicasShareASlackBotsPace(t *testing.T) {
	if testing.Short() {
		t.Skip("runs on the wall clock for seconds")
	}
	const rooms, replicas = 60, 3
	ctx := context.Background()
	st := teststore.Postgres(t)
	srv := slackfake.New(t)
	srv.EnforceLimits(slackfake.Limits{PerChannel: 4, ChannelWindow: 4 * time.Second, Workspace: 22, WorkspaceWindow: 3500 * time.Millisecond})
	svcs, f := replicasSharing(t, st, replicas, func(rt *plugin.Runtime) (*plugin.Plugin, error) {
		ad, err := slack.New(slack.Options{BotToken: srv.BotToken(), AppToken: srv.AppToken(), APIURL: srv.APIURL(), Runtime: rt})
		if err != nil {
			return nil, err
		}
		return ad.Plugin(), nil
	})
	for i := range rooms {
		task, err := f.tasks.Create(ctx, domain.NewTask{Goal: "Watch the build", RoomID: fmt.Sprintf("slack:C%06d", i),
			RequestorID: fmt.Sprintf("u%d", i), Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		f.iterate(task.Number, 10, domain.VerdictContinue, true)
	}
	delivered := func() map[string]int {
		got := map[string]int{}
		for _, c := range srv.CallsTo("chat.postMessage") {
			if c.Error == "" {
				got[c.Params.Get("channel")]++
			}
		}
		return got
	}
	startAndWait(t, svcs, rooms, delivered)
	if got := len(delivered()); got != rooms {
		t.Errorf("%d of %d channels got their message within a minute", got, rooms)
	}
	if n := srv.Throttled(); n > 0 {
		t.Errorf("the fake answered %d messages with 429; replicas sharing the bot's pace draw none", n)
	}
}

// replicasSharing starts n runtimes on st, each with the platform plugin
// adapter makes and a notification service (not started) that shares the
// bot's pace through st, and returns the services and a fixture that
// writes tasks through the first replica.
func replicasSharing(t *testing.T, st domain.Store, n int, adapter func(rt *plugin.Runtime) (*plugin.Plugin, error)) ([]*notify.Service, *fixture) {
	t.Helper()
	ctx := context.Background()
	var svcs []*notify.Service
	var f *fixture
	for r := range n {
		rt := plugin.New(plugin.Options{Store: st, Clock: clock.Real{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err := rt.Register(&plugin.Plugin{Name: "orchestrator"}); err != nil {
			t.Fatal(err)
		}
		p, err := adapter(rt)
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.Register(p); err != nil {
			t.Fatal(err)
		}
		if err := rt.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			stop, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rt.Stop(stop)
		})
		svc := notify.New(notify.Options{Runtime: rt, Owner: fmt.Sprintf("replica-%d", r+1), Interval: time.Second,
			StoreClock: true, Shares: st.(domain.PaceShares)})
		svcs = append(svcs, svc)
		if f == nil {
			f = &fixture{t: t, ctx: ctx, store: st, rt: rt, svc: svc,
				tasks: tasks.New(tasks.Options{Runtime: rt, Owner: "writer", Notify: svc.Outbox})}
		}
	}
	return svcs, f
}

// startAndWait starts svcs and waits, on the wall clock, up to a minute
// until delivered counts rooms rooms sent to.
func startAndWait(t *testing.T, svcs []*notify.Service, rooms int, delivered func() map[string]int) {
	t.Helper()
	start := time.Now()
	for _, svc := range svcs {
		if err := svc.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { svc.Stop(context.Background()) })
	}
	deadline := start.Add(time.Minute)
	for len(delivered()) < rooms && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("delivered in %s", time.Since(start).Round(time.Millisecond))
}
