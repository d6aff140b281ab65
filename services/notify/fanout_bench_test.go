package notify_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/discord"
	"github.com/taskloom/taskloom/adapters/slack"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/discordfake"
	"github.com/taskloom/taskloom/internal/testkit/slackfake"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/notify"
	"github.com/taskloom/taskloom/services/tasks"
)

// fanOutPlatform is one platform of BenchmarkFanOut: its fake, enforcing
// the published limits, and the real adapter.
type fanOutPlatform struct {
	name string
	// start makes the fake with n channels and the adapter on rt, and
	// returns the rooms and what the fake says.
	// delivered lists, per room, when each message the fake accepted
	// came.
	start func(b *testing.B, rt *plugin.Runtime, n int) (rooms []string, delivered func() map[string][]time.Time, throttled func() int)
}

var fanOutPlatforms = []fanOutPlatform{
	{name: "discord", start: func(b *testing.B, rt *plugin.Runtime, n int) ([]string, func() map[string][]time.Time, func() int) {
		const guild = "1200000000000000001"
		var ids []string
		for i := range n {
			ids = append(ids, strconv.Itoa(1400000000000000000+i))
		}
		srv := discordfake.New(b, discordfake.WithGuild(discordfake.Guild{ID: guild, Name: "Fan-out", ChannelIDs: ids}))
		srv.EnforceLimits(discordfake.PublishedLimits)
		ad, err := discord.New(discord.Options{Token: srv.Token(), APIURL: srv.URL(), Runtime: rt})
		if err != nil {
			b.Fatal(err)
		}
		if err := rt.Register(ad.Plugin()); err != nil {
			b.Fatal(err)
		}
		rooms := make([]string, n)
		for i, id := range ids {
			rooms[i] = "discord:" + id
		}
		delivered := func() map[string][]time.Time {
			got := map[string][]time.Time{}
			for _, c := range srv.CallsTo("POST", "/channels/") {
				channel, tail, _ := strings.Cut(strings.TrimPrefix(c.Path, "/channels/"), "/")
				if tail == "messages" && c.Status == 200 {
					got["discord:"+channel] = append(got["discord:"+channel], c.Time)
				}
			}
			return got
		}
		return rooms, delivered, func() int {
			all, global := srv.Throttled()
			if global > 0 {
				b.Logf("%d of the %d 429s were global", global, all)
			}
			return all
		}
	}},
	{name: "slack", start: func(b *testing.B, rt *plugin.Runtime, n int) ([]string, func() map[string][]time.Time, func() int) {
		srv := slackfake.New(b)
		srv.EnforceLimits(slackfake.PublishedLimits)
		ad, err := slack.New(slack.Options{BotToken: srv.BotToken(), AppToken: srv.AppToken(), APIURL: srv.APIURL(), Runtime: rt})
		if err != nil {
			b.Fatal(err)
		}
		if err := rt.Register(ad.Plugin()); err != nil {
			b.Fatal(err)
		}
		rooms := make([]string, n)
		for i := range rooms {
			rooms[i] = fmt.Sprintf("slack:C%06d", i)
		}
		delivered := func() map[string][]time.Time {
			got := map[string][]time.Time{}
			for _, c := range srv.CallsTo("chat.postMessage") {
				if c.Error == "" {
					room := "slack:" + c.Params.Get("channel")
					got[room] = append(got[room], c.Time)
				}
			}
			return got
		}
		return rooms, delivered, srv.Throttled
	}},
}

// BenchmarkFanOut: TASKLOOM_BENCH_ROOMS rooms (default 1,000), each with a
// running task whose progress is pending, sent by the notification
// service on PostgreSQL through the real adapter to a fake that enforces
// the platform's published limits (internal/testkit), on the wall clock.
// The service runs its loop as in the binary (a flush every 5 s); it
// reports when the last and the median room got its batch, counted from
// the moment all were pending, and the 429s the fake answered; then, with
// a second round pending and a tenth of it sent, how long Stop took
// against a 10 s deadline and how many rows it left claimed.
//
//	go test -run XXX -bench 'FanOut$' -benchtime 1x -timeout 30m ./services/notify/
func BenchmarkFanOut(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("TASKLOOM_BENCH_ROOMS")); err == nil && v > 0 {
		n = v
	}
	for _, p := range fanOutPlatforms {
		b.Run(p.name, func(b *testing.B) {
			for range b.N {
				fanOut(b, p, n)
			}
		})
	}
}

func fanOut(b *testing.B, p fanOutPlatform, n int) {
	ctx := context.Background()
	st := teststore.PostgresAt(b, testkit.PostgresURL(b))
	rt := plugin.New(plugin.Options{Store: st, Clock: clock.Real{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	// The adapters depend on the orchestrator for what people say; the
	// benchmark only sends.
	if err := rt.Register(&plugin.Plugin{Name: "orchestrator"}); err != nil {
		b.Fatal(err)
	}
	rooms, delivered, throttled := p.start(b, rt, n)
	if err := rt.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stop, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rt.Stop(stop)
	})
	outbox := notify.New(notify.Options{Runtime: rt, Owner: "bench"}) // writes the rows
	ts := tasks.New(tasks.Options{Runtime: rt, Owner: "bench", Notify: outbox.Outbox})
	f := &fixture{t: b, ctx: ctx, store: st, rt: rt, svc: outbox, tasks: ts}
	numbers := make([]int64, n)
	for i, room := range rooms {
		t, err := ts.Create(ctx, domain.NewTask{Goal: "Watch the build", RoomID: room, RequestorID: fmt.Sprintf("u%d", i), Now: time.Now()})
		if err != nil {
			b.Fatal(err)
		}
		numbers[i] = t.Number
	}
	round := func(progress int) {
		for _, num := range numbers {
			f.iterate(num, progress, domain.VerdictContinue, true)
		}
	}
	round(10)
	// The service runs as it does in the binary, flushing every 5 s; the
	// time a room waits counts from the moment every batch was pending.
	svc := notify.New(notify.Options{Runtime: rt, Owner: "bench"})
	f.svc = svc
	b.ResetTimer()
	start := time.Now()
	if err := svc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	deadline := start.Add(notify.DefaultInterval + time.Duration(n)*time.Second + time.Minute)
	got := delivered()
	for len(got) < n && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		got = delivered()
	}
	b.StopTimer()
	if len(got) != n {
		b.Fatalf("%d of %d rooms got their batch", len(got), n)
	}
	waits := make([]time.Duration, 0, n)
	for _, at := range got {
		waits = append(waits, at[0].Sub(start))
	}
	slices.Sort(waits)
	b.ReportMetric(waits[len(waits)-1].Seconds(), "s-slowest")
	b.ReportMetric(waits[len(waits)/2].Seconds(), "s-median")
	firstRound := throttled()
	b.ReportMetric(float64(firstRound), "429s")

	// Shutdown with a backlog: a second round is pending and the service
	// is sending it when Stop is asked to end within 10 s.
	round(20)
	for sent(delivered()) < n+n/10 && time.Now().Before(deadline.Add(time.Minute)) {
		time.Sleep(50 * time.Millisecond) // until a tenth of the round went out
	}
	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stopStart := time.Now()
	err := svc.Stop(stopCtx)
	took := time.Since(stopStart)
	pending, _ := st.Pending(ctx)
	claimed := pending - claimable(b, st)
	b.ReportMetric(took.Seconds(), "s-stop")
	b.ReportMetric(float64(claimed), "rows-left-claimed")
	b.ReportMetric(float64(pending), "rows-pending-after-stop")
	b.Logf("%s, %d rooms: slowest %s, median %s, %d 429s (%d with the second round); Stop took %s (%v), %d rows pending, %d left claimed",
		p.name, n, waits[len(waits)-1].Round(time.Millisecond), waits[len(waits)/2].Round(time.Millisecond), firstRound, throttled(),
		took.Round(time.Millisecond), err, pending, claimed)
}

// sent counts the messages delivered.
func sent(d map[string][]time.Time) int {
	n := 0
	for _, ts := range d {
		n += len(ts)
	}
	return n
}

// claimable is how many pending notifications another sender can claim
// within 10 s (it claims them): those no sender holds, as a claim is held
// for its lease of 30 s.
func claimable(b *testing.B, st domain.Store) int {
	b.Helper()
	n := 0
	for {
		room, rows, err := st.ClaimRoom(context.Background(), domain.RoomClaim{Owner: "probe", Now: time.Now().Add(10 * time.Second), Lease: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		if room == "" {
			return n
		}
		n += len(rows)
	}
}
