package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/discordfake"
	"github.com/taskloom/taskloom/internal/testkit/slackfake"
)

var (
	durationFlag = flag.Duration("duration", 0, "how long the soak injects faults (0: TestSoak is skipped)")
	seedFlag     = flag.Uint64("seed", 0, "the seed of the soak's randomness (0: a fresh one, printed)")
	binFlag      = flag.String("bin", "", "a taskloom binary to soak (default: built from this tree)")
	// loseMatch: the commits whose answers are lost are those of
	// statements holding it. "task" leaves out the saving of an incoming
	// message, whose lost answer loses the message (a known bug:
	// docs/testing.md); -lose "" includes it.
	loseMatch = flag.String("lose", "task", "lose the answers of commits of statements holding this text")
	pgRestart = flag.String("pg-restart", os.Getenv("TASKLOOM_SOAK_PG_RESTART"), "a shell command that restarts the PostgreSQL server (none: no restarts)")
)

const (
	replicas = 3
	lease    = 8 * time.Second
	apiToken = "soak-token-0123456789abcdef0123456789abcdef"
	// settleLimit bounds the wait for the service to settle once the
	// faults stop while nothing is delivered: a service still sending a
	// backlog (a Slack channel asked for more than the about one message
	// a second Slack allows) is given up to settleMax.
	settleLimit = 150 * time.Second
	settleMax   = 15 * time.Minute
)

var (
	discordRooms = []string{"D1", "D2"}
	slackRooms   = []string{"S1", "S2"}
	discordUsers = []string{"100000000000000001", "100000000000000002", "100000000000000003"}
	slackUsers   = []string{"U1", "U2", "U3"}
)

// command is one request a person (or the API) made that must make one
// task.
type command struct {
	id       string // soak <kind> <id> is the task's goal
	kind     string
	platform string // discord, slack or api
	room     string
	user     string
	msgID    string // Discord: the message's ID; Slack: the event's ts
	// via is the replica Slack delivered the command to (-1: Discord,
	// where every replica receives it).
	via int
	// leave: a question or approval nobody answers, so the task rightly
	// waits at the end.
	leave bool
	// ambiguous: an API call whose answer was lost, or a Slack event no
	// replica acknowledged, which may or may not have made its task.
	ambiguous bool
	at        time.Time
}

// kill is a replica killed, and when.
type kill struct {
	replica int
	at      time.Time
}

// soak is one run.
type soak struct {
	t        *testing.T
	rng      *rand.Rand
	rngMu    sync.Mutex
	seed     uint64
	bin      string
	directDB string
	db       *pgxpool.Pool
	proxy    *testkit.PostgresProxy
	discord  *discordfake.Server
	slack    *slackfake.Server
	model    *model
	reps     []*replica
	dir      string // the binary and the replicas' logs, kept when the run fails
	log      *eventLog
	http     *http.Client

	mu       sync.Mutex
	commands []*command
	answered map[int64]time.Time // tasks answered or approved, when
	killed   []kill
	nextID   map[string]int

	kills, stops, pgRestarts, connDrops, platformFaults int
}

func (s *soak) intn(n int) int {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return s.rng.IntN(n)
}

func (s *soak) jitter(min, max time.Duration) time.Duration {
	return min + time.Duration(s.intn(int(max-min)/int(time.Millisecond)+1))*time.Millisecond
}

// replay is the command that replays a run of seed.
func replay(seed uint64) string {
	cmd := fmt.Sprintf("scripts/soak -duration %s -seed %d", *durationFlag, seed)
	if *loseMatch != "task" {
		cmd += fmt.Sprintf(" -lose %q", *loseMatch)
	}
	return cmd
}

// TestSoak is the soak (scripts/soak; docs/testing.md). It is skipped
// unless -duration is given.
func TestSoak(t *testing.T) {
	if *durationFlag <= 0 {
		t.Skip("the soak runs with -duration (scripts/soak)")
	}
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	fmt.Printf("soak: seed=%d duration=%s (replay: %s)\n", seed, *durationFlag, replay(seed))
	s := &soak{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), log: &eventLog{start: time.Now()},
		http: &http.Client{Timeout: 5 * time.Second}, answered: map[int64]time.Time{}, nextID: map[string]int{}}
	s.setup()
	ctx, cancel := context.WithTimeout(context.Background(), *durationFlag)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { s.drive(ctx) })
	wg.Go(func() { s.faults(ctx) })
	wg.Go(func() { s.answer(ctx) })
	wg.Wait()
	s.log.add("faults stop; settling")
	settled := s.settle()
	for _, r := range s.reps {
		r.stop()
	}
	s.check(settled)
}

// setup starts the fakes, the database and its proxy, and the replicas.
func (s *soak) setup() {
	t := s.t
	s.bin = *binFlag
	dir, err := os.MkdirTemp("", "taskloom-soak-")
	if err != nil {
		t.Fatal(err)
	}
	s.dir = dir
	t.Cleanup(func() {
		if !t.Failed() {
			os.RemoveAll(dir)
		}
	})
	if s.bin == "" {
		s.bin = filepath.Join(dir, "taskloom")
		if out, err := exec.Command("go", "build", "-o", s.bin, "github.com/taskloom/taskloom/cmd/taskloom").CombinedOutput(); err != nil {
			t.Fatalf("build taskloom: %v\n%s", err, out)
		}
	}
	s.directDB = testkit.PostgresURL(t)
	var dbURL string
	s.proxy, dbURL = testkit.ProxyPostgres(t, s.directDB)
	var pool *pgxpool.Pool
	pool, err = pgxpool.New(context.Background(), s.directDB)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s.db = pool
	s.discord = discordfake.New(t, discordfake.WithGuild(discordfake.Guild{ID: "G1", ChannelIDs: discordRooms}))
	s.discord.EnforceLimits(discordfake.PublishedLimits)
	s.slack = slackfake.New(t)
	s.slack.EnforceLimits(slackfake.PublishedLimits)
	s.model = newModel(t)
	env := []string{"PATH=" + os.Getenv("PATH"), "DATABASE_URL=" + dbURL, "TASKLOOM_API_TOKEN=" + apiToken,
		"OPENAI_BASE_URL=" + s.model.URL(), "OPENAI_API_KEY=sk-soak", "TASKLOOM_CONSOLE=false",
		"DISCORD_BOT_TOKEN=" + strings.TrimPrefix(s.discord.Token(), "Bot "), "DISCORD_API_URL=" + s.discord.URL(),
		"DISCORD_APPLICATION_ID=" + s.discord.ApplicationID(),
		"SLACK_BOT_TOKEN=" + s.slack.BotToken(), "SLACK_SIGNING_SECRET=" + s.slack.SigningSecret(), "SLACK_API_URL=" + s.slack.APIURL(),
		"TASKLOOM_FLUSH_INTERVAL=1s", "TASKLOOM_LEASE=" + lease.String(), "TASKLOOM_WORKERS=4",
		"TASKLOOM_APPROVE_TOOLS=write_file", "TASKLOOM_SCHEDULE_MIN_INTERVAL=5s", "TASKLOOM_FACTS=false",
		"TASKLOOM_MAX_ACTIVE=1000", "TASKLOOM_SHUTDOWN_TIMEOUT=3s", "TASKLOOM_LOG_LEVEL=warn"}
	for i := range replicas {
		s.reps = append(s.reps, newReplica(t, i, s.bin, dir, env))
	}
	for _, r := range s.reps {
		if err := r.start(); err != nil {
			s.dumpLogs()
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.discord.WaitIdentified(ctx, replicas); err != nil {
		s.dumpLogs()
		t.Fatalf("the replicas did not all connect to Discord: %v", err)
	}
	fmt.Printf("soak: %d replicas up, logs in %s\n", replicas, dir)
	// The schedule: a quick task every 10 seconds, runs allowed to
	// overlap, so a due time fired twice would show as a run too many.
	s.schedule()
}

// schedule creates the soak's schedule through the API.
func (s *soak) schedule() {
	body := `{"cron": "@every 10s", "goal": "soak quick sched", "name": "soak quick sched", "overlap": "allow"}`
	resp, err := s.api(http.MethodPost, "/api/schedules", body)
	if err != nil {
		s.t.Fatalf("create the schedule: %v", err)
	}
	if resp.status != http.StatusCreated {
		s.t.Fatalf("create the schedule: %d %s", resp.status, resp.body)
	}
	s.log.add("schedule created: %s", resp.body)
}

type apiResponse struct {
	status int
	body   []byte
}

// errUnsent is an API call that never reached a replica.
var errUnsent = errors.New("no replica took the call")

// api calls a live replica's HTTP API, another one when the first cannot
// be reached; errUnsent when none was, another error when the answer was
// lost.
func (s *soak) api(method, path, body string) (apiResponse, error) {
	for _, r := range s.shuffledUp() {
		req, err := http.NewRequest(method, r.base()+path, strings.NewReader(body))
		if err != nil {
			return apiResponse{}, err
		}
		req.Header.Set("Authorization", "Bearer "+apiToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := s.http.Do(req)
		if err != nil {
			var op *net.OpError
			if errors.As(err, &op) && op.Op == "dial" {
				continue
			}
			return apiResponse{}, err
		}
		out, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return apiResponse{}, err
		}
		return apiResponse{resp.StatusCode, out}, nil
	}
	return apiResponse{}, errUnsent
}

// shuffledUp is the replicas that run and are not paused, in random
// order.
func (s *soak) shuffledUp() []*replica {
	var up []*replica
	for _, r := range s.reps {
		if r.up() {
			up = append(up, r)
		}
	}
	s.rngMu.Lock()
	s.rng.Shuffle(len(up), func(i, j int) { up[i], up[j] = up[j], up[i] })
	s.rngMu.Unlock()
	return up
}

// drive makes the people's and the API's requests until ctx ends.
func (s *soak) drive(ctx context.Context) {
	kinds := []string{"quick", "quick", "ask", "approve", "sub"}
	for ctx.Err() == nil {
		switch n := s.intn(10); {
		case n < 4:
			s.create("discord", kinds[s.intn(len(kinds))])
		case n < 8:
			s.create("slack", kinds[s.intn(len(kinds))])
		case n < 9:
			s.createAPI()
		default:
			s.status()
		}
		select {
		case <-ctx.Done():
		case <-time.After(s.jitter(300*time.Millisecond, 900*time.Millisecond)):
		}
	}
}

func (s *soak) newCommand(platform, kind string) *command {
	s.mu.Lock()
	defer s.mu.Unlock()
	prefix := platform[:1]
	s.nextID[prefix]++
	c := &command{id: fmt.Sprintf("%s%d", prefix, s.nextID[prefix]), kind: kind, platform: platform, at: time.Now()}
	s.commands = append(s.commands, c)
	return c
}

// create has a person ask for a task in chat.
func (s *soak) create(platform, kind string) {
	c := s.newCommand(platform, kind)
	c.leave = (kind == "ask" || kind == "approve") && s.intn(4) == 0
	text := fmt.Sprintf("create task soak %s %s", kind, c.id)
	if platform == "discord" {
		c.room, c.user = discordRooms[s.intn(len(discordRooms))], discordUsers[s.intn(len(discordUsers))]
		c.msgID, c.via = s.say(c.room, c.user, text), -1
	} else {
		c.room, c.user = slackRooms[s.intn(len(slackRooms))], slackUsers[s.intn(len(slackUsers))]
		c.msgID, c.via = s.mention(c.room, c.user, text)
		// Slack gave up: no replica acknowledged it, as when the
		// store did not take it on any delivery. A replica may still
		// have stored it after its window.
		c.ambiguous = c.via < 0
	}
	s.log.add("%s %s/%s: %q", platform, c.room, c.user, text)
}

// say posts a Discord message mentioning the bot.
func (s *soak) say(room, user, text string) string {
	bot := s.discord.BotUser().ID
	return s.discord.MessageCreate(room, "G1", user, "<@"+bot+"> "+text, bot)
}

// mention delivers a Slack app_mention to a live replica as Slack does:
// retried, with X-Slack-Retry-Num, on another replica when one fails to
// acknowledge it. It returns the event's ts and the replica that
// acknowledged it (-1 when none did).
func (s *soak) mention(room, user, text string) (string, int) {
	ev := s.slack.AppMention(room, user, text)
	for attempt := range 4 {
		var opts []slackfake.RequestOption
		if attempt > 0 {
			opts = append(opts, slackfake.Retry(attempt, "http_timeout"))
		}
		up := s.shuffledUp()
		if len(up) == 0 {
			time.Sleep(time.Second)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		req, err := s.slack.Request(ctx, up[0].base(), ev, opts...)
		if err != nil {
			cancel()
			s.t.Errorf("slack request: %v", err)
			return ev.TS, -1
		}
		resp, err := s.http.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		cancel()
		if err == nil && resp.StatusCode == http.StatusOK {
			return ev.TS, up[0].n
		}
		s.log.add("slack delivery of %s to replica %d failed (attempt %d): %v", ev.TS, up[0].n, attempt+1, errOrStatus(err, resp))
		time.Sleep(s.jitter(200*time.Millisecond, time.Second))
	}
	s.log.add("slack gave up delivering %s %q", ev.TS, text)
	return ev.TS, -1
}

func errOrStatus(err error, resp *http.Response) string {
	if err != nil {
		return err.Error()
	}
	return resp.Status
}

// createAPI creates a task through the HTTP API.
func (s *soak) createAPI() {
	c := s.newCommand("api", "quick")
	body := fmt.Sprintf(`{"goal": "soak quick %s", "name": "soak quick %s"}`, c.id, c.id)
	resp, err := s.api(http.MethodPost, "/api/tasks", body)
	switch {
	case errors.Is(err, errUnsent):
		s.log.add("api %s: no replica up", c.id)
		c.ambiguous = true // none made, which the check allows
	case err != nil:
		s.log.add("api %s: answer lost: %v", c.id, err)
		c.ambiguous = true
	case resp.status >= 500:
		s.log.add("api %s: %d %s", c.id, resp.status, resp.body)
		c.ambiguous = true
	case resp.status != http.StatusCreated:
		s.t.Errorf("POST /api/tasks: %d %s", resp.status, resp.body)
	default:
		s.log.add("api %s created", c.id)
	}
}

// status asks for a known task's status in chat.
func (s *soak) status() {
	var n int64
	if err := s.db.QueryRow(context.Background(), `SELECT COALESCE(max(number), 0) FROM tasks`).Scan(&n); err != nil || n == 0 {
		return
	}
	task := 1 + int64(s.intn(int(n)))
	if s.intn(2) == 0 {
		s.say(discordRooms[s.intn(len(discordRooms))], discordUsers[s.intn(len(discordUsers))], fmt.Sprintf("status #%d", task))
	} else {
		s.mention(slackRooms[s.intn(len(slackRooms))], slackUsers[s.intn(len(slackUsers))], fmt.Sprintf("status #%d", task))
	}
}

// answer answers the questions and approves the calls of the tasks whose
// requestor means to, in chat, until ctx ends; settle calls it too.
func (s *soak) answer(ctx context.Context) {
	for ctx.Err() == nil {
		s.answerOnce()
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (s *soak) answerOnce() {
	rows, err := s.db.Query(context.Background(), `SELECT number, goal FROM tasks WHERE status = 'waiting' AND parent_number IS NULL AND schedule_id IS NULL`)
	if err != nil {
		return
	}
	type waiting struct {
		n    int64
		goal string
	}
	var ws []waiting
	for rows.Next() {
		var w waiting
		if rows.Scan(&w.n, &w.goal) == nil {
			ws = append(ws, w)
		}
	}
	rows.Close()
	for _, w := range ws {
		c := s.byGoal(w.goal)
		s.mu.Lock()
		last, done := s.answered[w.n]
		s.mu.Unlock()
		// A person says it again when nothing came of it in a while.
		done = done && time.Since(last) < 20*time.Second
		if c == nil || c.leave || done || c.platform == "api" || (c.kind != "ask" && c.kind != "approve") {
			continue
		}
		// Only once the room shows the question or the request.
		mark := "❓ Task #"
		text := fmt.Sprintf("answer #%d blue", w.n)
		if c.kind == "approve" {
			mark, text = "🔐 Task #", fmt.Sprintf("approve #%d", w.n)
		}
		if !s.roomShows(c, fmt.Sprintf("%s%d ", mark, w.n)) {
			continue
		}
		s.mu.Lock()
		s.answered[w.n] = time.Now()
		s.mu.Unlock()
		if c.platform == "discord" {
			s.say(c.room, c.user, text)
		} else {
			s.mention(c.room, c.user, text)
		}
		s.log.add("%s %s/%s: %q", c.platform, c.room, c.user, text)
	}
}

func (s *soak) byGoal(goal string) *command {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.commands {
		if goal == "soak "+c.kind+" "+c.id {
			return c
		}
	}
	return nil
}

// roomShows says whether the command's room shows a bot message holding
// text.
func (s *soak) roomShows(c *command, text string) bool {
	for _, m := range s.roomMessages(c.platform, c.room) {
		if strings.Contains(m.text, text) {
			return true
		}
	}
	return false
}

// faults injects faults at random until ctx ends, one at a time, each
// kind several times: the kinds are dealt from a shuffled deck.
func (s *soak) faults(ctx context.Context) {
	kinds := []string{"kill", "stop", "pg_restart", "conn_drop", "discord", "slack", "model"}
	var deck []string
	next := func() string {
		if len(deck) == 0 {
			deck = slices.Clone(kinds)
			s.rngMu.Lock()
			s.rng.Shuffle(len(deck), func(i, j int) { deck[i], deck[j] = deck[j], deck[i] })
			s.rngMu.Unlock()
		}
		k := deck[0]
		deck = deck[1:]
		return k
	}
	sleep := func(d time.Duration) {
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
	sleep(2 * time.Second)
	for ctx.Err() == nil {
		switch next() {
		case "kill":
			r := s.reps[s.intn(len(s.reps))]
			s.log.add("fault: SIGKILL replica %d (pid %d)", r.n, r.pid())
			r.kill()
			s.mu.Lock()
			s.killed = append(s.killed, kill{r.n, time.Now()})
			s.mu.Unlock()
			s.kills++
			time.Sleep(s.jitter(500*time.Millisecond, 3*time.Second))
			if err := r.start(); err != nil {
				s.t.Errorf("restart: %v", err)
			}
			s.log.add("replica %d restarted (pid %d)", r.n, r.pid())
		case "stop":
			r := s.reps[s.intn(len(s.reps))]
			d := lease + s.jitter(2*time.Second, 5*time.Second)
			s.log.add("fault: SIGSTOP replica %d for %s", r.n, d)
			r.signal(syscall.SIGSTOP)
			s.stops++
			time.Sleep(d)
			r.signal(syscall.SIGCONT)
			s.log.add("replica %d continued", r.n)
		case "pg_restart":
			if *pgRestart == "" {
				// No restart command: the server is made unreachable
				// through the proxy for as long as a restart takes.
				continue
			}
			s.log.add("fault: PostgreSQL restart")
			cmd := exec.Command("sh", "-c", *pgRestart)
			out, err := cmd.CombinedOutput()
			if err != nil {
				s.t.Errorf("PostgreSQL restart: %v\n%s", err, out)
			}
			s.pgRestarts++
			s.log.add("PostgreSQL restarted")
		case "conn_drop":
			switch s.intn(3) {
			case 0:
				n := 1 + s.intn(3)
				s.log.add("fault: lose the answers of %d commits (of statements with %q)", n, *loseMatch)
				s.proxy.LoseAnswers(n, *loseMatch)
			case 1:
				n := 1 + s.intn(3)
				s.log.add("fault: lose %d statements on their way", n)
				s.proxy.LoseRequests(n, "")
			default:
				d := s.jitter(time.Second, 4*time.Second)
				s.log.add("fault: database unreachable for %s", d)
				s.proxy.SetDown(true)
				time.Sleep(d)
				s.proxy.SetDown(false)
			}
			s.connDrops++
		case "discord":
			s.platformFaults++
			switch s.intn(4) {
			case 0:
				d := s.jitter(2*time.Second, 6*time.Second)
				s.log.add("fault: Discord answers 500 for %s", d)
				s.discord.FailUntil("", "/channels/", time.Now().Add(d), http.StatusInternalServerError)
			case 1:
				s.log.add("fault: Discord answers 429 to the next 3 calls")
				s.discord.RateLimitNext("POST", "/channels/", 3, 2*time.Second, false)
			case 2:
				s.log.add("fault: Discord makes the next 2 messages and answers 500")
				s.discord.FailAfterNext("POST", "/channels/", 2, http.StatusInternalServerError)
			default:
				made := s.intn(2) == 0
				s.log.add("fault: Discord hangs on the next 2 calls past the client's timeout (carried out: %v)", made)
				s.discord.StallNext("POST", "/channels/", 2, 25*time.Second, made)
			}
		case "slack":
			s.platformFaults++
			switch s.intn(4) {
			case 0:
				d := s.jitter(2*time.Second, 6*time.Second)
				s.log.add("fault: Slack answers 500 for %s", d)
				s.slack.FailUntil("chat.postMessage", time.Now().Add(d), http.StatusInternalServerError, "internal_error")
			case 1:
				s.log.add("fault: Slack answers 429 to the next post")
				s.slack.RateLimitNext("chat.postMessage", 2*time.Second)
			case 2:
				s.log.add("fault: Slack posts the next 2 messages and answers 500")
				s.slack.ServerErrorAfterNext("chat.postMessage", 2)
			default:
				made := s.intn(2) == 0
				s.log.add("fault: Slack hangs on the next 2 posts past the client's timeout (carried out: %v)", made)
				s.slack.StallNext("chat.postMessage", 2, 35*time.Second, made)
			}
		case "model":
			d := s.jitter(2*time.Second, 6*time.Second)
			if s.intn(2) == 0 {
				s.log.add("fault: the model answers 500 for %s", d)
				s.model.fail(d)
			} else {
				s.log.add("fault: the model hangs for %s", d)
				s.model.hang(d)
			}
		}
		sleep(s.jitter(2*time.Second, 6*time.Second))
	}
}

// settle waits until every task has ended or waits on a person who will
// not answer, the outbox is empty and the rooms are quiet; false when
// that did not happen within settleLimit.
func (s *soak) settle() bool {
	ctx := context.Background()
	begin := time.Now()
	quietSince, lastCount := time.Now(), -1
	for time.Since(quietSince) < settleLimit && time.Since(begin) < settleMax {
		s.answerOnce()
		var busy, pending int
		err := s.db.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE status IN ('queued', 'running', 'paused')`).Scan(&busy)
		if err == nil {
			err = s.db.QueryRow(ctx, `SELECT count(*) FROM notifications WHERE status = 'pending'`).Scan(&pending)
		}
		waitingOnUs := 0
		if err == nil {
			rows, qerr := s.db.Query(ctx, `SELECT goal FROM tasks WHERE status = 'waiting'`)
			if qerr == nil {
				for rows.Next() {
					var goal string
					_ = rows.Scan(&goal)
					if c := s.byGoal(goal); c == nil || !c.leave {
						waitingOnUs++
					}
				}
				rows.Close()
			}
		}
		count := s.messageCount()
		if count != lastCount {
			quietSince, lastCount = time.Now(), count
		}
		if err == nil && busy == 0 && pending == 0 && waitingOnUs == 0 && time.Since(quietSince) > 3*time.Second {
			s.log.add("settled")
			fmt.Printf("soak: settled %s after the faults ended\n", time.Since(begin).Round(time.Second))
			return true
		}
		time.Sleep(500 * time.Millisecond)
	}
	s.log.add("not settled after %s, nothing delivered in the last %s", time.Since(begin).Round(time.Second), time.Since(quietSince).Round(time.Second))
	return false
}

// dumpLogs prints the tail of each replica's log.
func (s *soak) dumpLogs() {
	for _, r := range s.reps {
		raw, _ := os.ReadFile(r.log.Name())
		if len(raw) > 4000 {
			raw = raw[len(raw)-4000:]
		}
		fmt.Printf("--- replica %d log (tail) ---\n%s\n", r.n, bytes.TrimSpace(raw))
	}
}

// eventLog is the run's timeline, printed around a violation.
type eventLog struct {
	start  time.Time
	mu     sync.Mutex
	events []event
}

type event struct {
	at   time.Time
	what string
}

func (l *eventLog) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, event{time.Now(), fmt.Sprintf(format, args...)})
}

// around is the events within d of at, one a line.
func (l *eventLog) around(at time.Time, d time.Duration) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, e := range l.events {
		if e.at.After(at.Add(-d)) && e.at.Before(at.Add(d)) {
			fmt.Fprintf(&b, "    %7.3fs %s\n", e.at.Sub(l.start).Seconds(), e.what)
		}
	}
	return b.String()
}

// jsonString is a compact rendering of v for a report.
func jsonString(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}
