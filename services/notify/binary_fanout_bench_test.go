package notify_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/discordfake"
)

// BenchmarkFanOutThroughTheBinary measures what a deployment's rooms see
// (docs/PERFORMANCE.md, "Fan-out through the binary"): the real
// `taskloom serve`, built here (or TASKLOOM_BENCH_BIN), replicas of it on
// one PostgreSQL database (TEST_DATABASE_URL), one bot token shared,
// against the fake Discord of internal/testkit with Discord's published
// limits enforced, reached through DISCORD_API_URL (the gateway's URL is
// the fake's answer to GET /gateway/bot). Each of the rooms, a channel of
// the fake's guild, gets a task created through the HTTP API (spread
// over the replicas), which then iterates as a real task does: a model
// behind a real HTTP server answers every request after
// TASKLOOM_BENCH_MODEL_DELAY (default 1s) with a file written and a
// progress that moves (testkit.InstantModel, testkit.ChangingAnswer).
// Each replica runs TASKLOOM_BENCH_WORKERS workers (default 256) and
// flushes every 5 s, the default.
//
// For each room, the time from the start of its task's creation request
// to the fake's accepting the room's first progress batch; max, p50 and
// p99 over all rooms, a room not served when the run gives up
// (TASKLOOM_BENCH_GIVE_UP after the first creation, default 90s)
// counting as the give-up time (so those figures are then lower bounds);
// the 429s the fake answered; the messages it accepted a second. The
// target is every room's first batch within 30 s and no 429.
// TASKLOOM_BENCH_LOGS=1 prints the end of each replica's log (warnings
// and errors) after the run.
//
//	go test -run XXX -bench FanOutThroughTheBinary -benchtime 1x -timeout 30m ./services/notify/
func BenchmarkFanOutThroughTheBinary(b *testing.B) {
	cfg := binaryFanOutConfig{
		workers:    envInt(b, "TASKLOOM_BENCH_WORKERS", 256),
		modelDelay: envDuration(b, "TASKLOOM_BENCH_MODEL_DELAY", time.Second),
		giveUp:     envDuration(b, "TASKLOOM_BENCH_GIVE_UP", 90*time.Second),
	}
	cfg.bin = testkit.TaskloomBinary(b, b.TempDir())
	for _, c := range []struct{ replicas, rooms int }{{1, 1000}, {3, 600}} {
		b.Run(fmt.Sprintf("replicas=%d,rooms=%d", c.replicas, c.rooms), func(b *testing.B) {
			for range b.N {
				fanOutThroughTheBinary(b, cfg, c.replicas, c.rooms)
			}
		})
	}
}

// binaryFanOutConfig is what BenchmarkFanOutThroughTheBinary's runs share.
type binaryFanOutConfig struct {
	bin        string
	workers    int
	modelDelay time.Duration
	giveUp     time.Duration
}

func fanOutThroughTheBinary(b *testing.B, cfg binaryFanOutConfig, replicas, n int) {
	ctx := context.Background()
	const guild = "1200000000000000001"
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(1400000000000000000 + i)
	}
	fake := discordfake.New(b, discordfake.WithGuild(discordfake.Guild{ID: guild, Name: "Fan-out", ChannelIDs: ids}))
	fake.EnforceLimits(discordfake.PublishedLimits)
	model := testkit.InstantModel(b, cfg.modelDelay, testkit.ChangingAnswer)
	url := testkit.PostgresURL(b)
	dir := b.TempDir()
	env := []string{"DATABASE_URL=" + url, "TASKLOOM_CONSOLE=false",
		"DISCORD_BOT_TOKEN=" + strings.TrimPrefix(fake.Token(), "Bot "), "DISCORD_API_URL=" + fake.URL(),
		"DISCORD_APPLICATION_ID=" + fake.ApplicationID(),
		"OPENAI_BASE_URL=" + model, "OPENAI_API_KEY=sk-bench", "TASKLOOM_WORKERS=" + strconv.Itoa(cfg.workers),
		"TASKLOOM_MAX_ACTIVE=100000", "TASKLOOM_MAX_TOKENS=0", "TASKLOOM_FACTS=false", "TASKLOOM_LOG_LEVEL=warn"}
	serves := make([]*testkit.Serve, replicas)
	for i := range serves {
		// One after the other: the first migrates the database. Each has
		// a home and a data folder of its own, as on machines of their
		// own.
		home := filepath.Join(dir, strconv.Itoa(i))
		if err := os.MkdirAll(home, 0o755); err != nil {
			b.Fatal(err)
		}
		serves[i] = testkit.StartServe(b, cfg.bin, home, slices.Concat(env, []string{"TASKLOOM_DATA_DIR=" + filepath.Join(home, "data")})...)
	}
	logs := func() string {
		var s strings.Builder
		for i, sv := range serves {
			fmt.Fprintf(&s, "--- replica %d:\n%s", i, tail(sv.Logs(), 4000))
		}
		return s.String()
	}
	ready, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := fake.WaitIdentified(ready, replicas); err != nil {
		b.Fatalf("the replicas did not connect to the gateway: %v\n%s", err, logs())
	}

	// The tasks, created through the API by 16 clients at once, each room's
	// on the replica i%replicas; a room's wait counts from the start of
	// its request.
	b.ResetTimer()
	created := make([]time.Time, n)
	cpu0 := make([]time.Duration, replicas)
	for i, sv := range serves {
		cpu0[i] = sv.CPU()
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				created[i] = time.Now()
				body := fmt.Sprintf(`{"goal": "keep notes on the build %d", "room": "discord:%s", "max_iterations": 10000, "max_stale_iterations": 1000}`, i, ids[i])
				resp, err := http.Post(serves[i%replicas].URL()+"/api/tasks", "application/json", strings.NewReader(body))
				if err != nil {
					errs <- err
					continue
				}
				out, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
					errs <- fmt.Errorf("POST /api/tasks: %d %s", resp.StatusCode, out)
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	allCreated := time.Since(start)
	close(errs)
	for err := range errs {
		b.Fatalf("create the tasks: %v\n%s", err, logs())
	}

	// The first batch of each room: the first message the fake accepted
	// in its channel that shows progress. Another first message (the API
	// posts nothing when it creates a task) is counted apart.
	first := map[string]time.Time{}
	other := map[string]bool{}
	var accepted []time.Time
	look := func() {
		accepted = accepted[:0]
		for _, c := range fake.CallsTo(http.MethodPost, "/channels/") {
			channel, rest, _ := strings.Cut(strings.TrimPrefix(c.Path, "/channels/"), "/")
			if rest != "messages" || c.Status != http.StatusOK {
				continue
			}
			accepted = append(accepted, c.Time)
			if _, ok := first[channel]; ok || other[channel] {
				continue
			}
			var m struct{ Content string }
			if err := c.Decode(&m); err == nil && strings.Contains(m.Content, "Progress:") {
				first[channel] = c.Time
			} else {
				other[channel] = true
			}
		}
	}
	giveUp := start.Add(cfg.giveUp)
	for look(); len(first)+len(other) < n && time.Now().Before(giveUp); look() {
		time.Sleep(time.Second)
	}
	end := time.Now()
	b.StopTimer()
	throttled, global := fake.Throttled()
	if throttled > 0 {
		fmt.Print(describeThrottled(fake.Calls()))
	}
	var cpu time.Duration
	for i, sv := range serves {
		cpu += sv.CPU() - cpu0[i]
	}

	waits := make([]time.Duration, n)
	var servedWaits []time.Duration
	for i, id := range ids {
		if at, ok := first[id]; ok {
			waits[i] = at.Sub(created[i])
			servedWaits = append(servedWaits, waits[i])
		} else {
			waits[i] = end.Sub(created[i]) // not served: at least this
		}
	}
	slices.Sort(waits)
	slices.Sort(servedWaits)
	served := len(servedWaits)
	servedWithin := func(d time.Duration) int {
		k, _ := slices.BinarySearch(servedWaits, d+1)
		return k
	}
	within := servedWithin(30 * time.Second)
	// How the rooms were served over time: those served within 10 s,
	// 20 s… of their task's creation.
	var by strings.Builder
	for _, at := range []time.Duration{10 * time.Second, 20 * time.Second, 30 * time.Second, 45 * time.Second, 60 * time.Second, 90 * time.Second} {
		if at <= cfg.giveUp {
			fmt.Fprintf(&by, " %s:%d", at, servedWithin(at))
		}
	}
	// What the store says at the end: the iterations run, and the
	// outbox's backlog (rows pending, rooms they are for).
	var iterations, pending, pendingRooms int
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT COALESCE(sum(iteration), 0) FROM tasks`).Scan(&iterations); err != nil {
		b.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT room) FROM notifications WHERE status = 'pending'`).Scan(&pending, &pendingRooms); err != nil {
		b.Fatal(err)
	}
	conn.Close(ctx)
	elapsed := end.Sub(start)
	pct := func(p int) time.Duration { return waits[min(n-1, n*p/100)] }
	b.ReportMetric(float64(served), "rooms-served")
	b.ReportMetric(float64(within), "rooms-within-30s")
	b.ReportMetric(pct(100).Seconds(), "s-max")
	b.ReportMetric(pct(50).Seconds(), "s-p50")
	b.ReportMetric(pct(99).Seconds(), "s-p99")
	b.ReportMetric(float64(throttled), "429s")
	b.ReportMetric(float64(len(accepted))/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(iterations)/elapsed.Seconds(), "it/s")
	b.ReportMetric(100*cpu.Seconds()/elapsed.Seconds(), "serve-%cpu")
	b.ReportMetric(0, "ns/op")
	lower := ""
	if served < n {
		lower = fmt.Sprintf(" (%d rooms not served in %s count as their wait so far: the figures they reach are lower bounds)", n-served, cfg.giveUp)
	}
	fmt.Printf("fan-out through the binary, %d replica(s) × %d workers, %d rooms, model %s: %d rooms served, %d within 30 s, %d first messages not a batch; "+
		"creation to first batch: max %s, p50 %s, p99 %s%s; %d 429s (%d global); %d messages in %s (%.1f/s); %d iterations (%.0f/s); tasks created in %s; serve used %.0f%% of a core; %d outbox rows pending for %d rooms at the end; rooms served within%s\n",
		replicas, cfg.workers, n, cfg.modelDelay, served, within, len(other),
		pct(100).Round(100*time.Millisecond), pct(50).Round(100*time.Millisecond), pct(99).Round(100*time.Millisecond), lower,
		throttled, global, len(accepted), elapsed.Round(100*time.Millisecond), float64(len(accepted))/elapsed.Seconds(),
		iterations, float64(iterations)/elapsed.Seconds(), allCreated.Round(100*time.Millisecond),
		100*cpu.Seconds()/elapsed.Seconds(), pending, pendingRooms, by.String())
	for _, sv := range serves {
		sv.Stop()
	}
	if os.Getenv("TASKLOOM_BENCH_LOGS") != "" {
		fmt.Print(logs())
	}
}

// describeThrottled says, of the first few calls answered 429, what they
// were and what the bot asked in the second before each, by kind of
// route: what a pacer did not count or did not hold to.
func describeThrottled(calls []discordfake.Call) string {
	var out strings.Builder
	shown := 0
	for i, c := range calls {
		if c.Status != http.StatusTooManyRequests || shown == 3 {
			continue
		}
		shown++
		kinds := map[string]int{}
		for _, p := range calls[:i] {
			if c.Time.Sub(p.Time) < time.Second {
				kinds[p.Method+" "+routeKind(p.Path)]++
			}
		}
		fmt.Fprintf(&out, "429 for %s %s at %s; the second before it: %v\n", c.Method, c.Path, c.Time.Format("15:04:05.000"), kinds)
	}
	return out.String()
}

// routeKind is a path with its IDs left out: /channels/{}/messages.
func routeKind(path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if p != "" && strings.Trim(p, "0123456789") == "" {
			parts[i] = "{}"
		}
	}
	return strings.Join(parts, "/")
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// envInt is the positive integer in the environment variable name, or
// def when it is not set.
func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// envDuration is the duration in the environment variable name, or def
// when it is not set.
func envDuration(b *testing.B, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		b.Fatalf("%s=%q: want a duration, e.g. 90s", name, v)
	}
	return d
}
