package notify_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
)

// Both chat adapters deliver notifications exactly once.
var (
	_ notify.OnceSender = (*discord.Adapter)(nil)
	_ notify.OnceSender = (*slack.Adapter)(nil)
)

const (
	guildID   = "1300000000000000010"
	channelID = "1300000000000000020"
)

// waitFor bounds a test's wait for something another goroutine does.
const waitFor = 10 * time.Second

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	t.Cleanup(cancel)
	return ctx
}

func receive(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitFor):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// crashFlush runs a flush of svc in a process that dies once the
// platform has taken a message (sent closes): the flush is canceled there,
// and crashFlush returns when it has ended.
func crashFlush(t *testing.T, svc *notify.Service, sent <-chan struct{}, what string) {
	t.Helper()
	ctx, kill := context.WithCancel(context.Background())
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		svc.Flush(ctx) // its error is the crash's
	}()
	receive(t, sent, what)
	kill()
	receive(t, flushed, "the crashed flush to end")
}

// post puts a message of the service's own (about no task) in room's
// outbox, as the task service's hold notices are.
func post(t *testing.T, st domain.Store, room, text string, at time.Time) domain.Notification {
	t.Helper()
	n, err := st.Enqueue(t.Context(), domain.Notification{Room: room, Category: domain.NotifyMessage,
		Payload: []byte(fmt.Sprintf(`{"text":%q}`, text)), CreatedAt: at})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func list(t *testing.T, st domain.Store, status string) []domain.Notification {
	t.Helper()
	ns, err := st.ListNotifications(t.Context(), status, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// chat is a fake chat platform with the real adapter that talks to it.
type chat struct {
	name string
	room string
	// adapter makes the adapter for a runtime, as a process starting
	// would.
	adapter func(t *testing.T, rt *plugin.Runtime) notify.OnceSender
	// messages are the texts of the messages in the room, in order.
	messages func() []string
	// failUntil makes the platform answer the room's posts with a 500
	// until the fake clock reaches until.
	failUntil func(until time.Time)
}

// fakeChats starts a fake Discord and a fake Slack on clk's time, with a
// room in a Discord channel, a Slack channel and a Slack thread.
func fakeChats(t *testing.T, clk *clock.Fake) []chat {
	dc := discordfake.New(t, discordfake.WithNow(clk.Now),
		discordfake.WithGuild(discordfake.Guild{ID: guildID, ChannelIDs: []string{channelID}}))
	sl := slackfake.New(t, slackfake.WithNow(clk.Now))
	thread := sl.TS() // a person's message the bot answers in
	slackAdapter := func(t *testing.T, rt *plugin.Runtime) notify.OnceSender {
		ad, err := slack.New(slack.Options{BotToken: sl.BotToken(), SigningSecret: sl.SigningSecret(), APIURL: sl.APIURL(), Runtime: rt})
		if err != nil {
			t.Fatal(err)
		}
		return ad
	}
	slackFails := func(until time.Time) {
		sl.FailUntil("chat.postMessage", until, http.StatusInternalServerError, "internal_error")
	}
	slackTexts := func(thread string) func() []string {
		return func() []string {
			var out []string
			for _, m := range sl.Messages() {
				if m.Kind == slackfake.KindPost && m.Channel == "C1" && m.ThreadTS == thread {
					out = append(out, m.Text)
				}
			}
			return out
		}
	}
	return []chat{
		{
			name: "discord", room: "discord:" + channelID,
			adapter: func(t *testing.T, rt *plugin.Runtime) notify.OnceSender {
				ad, err := discord.New(discord.Options{Token: dc.Token(), APIURL: dc.URL(), Runtime: rt})
				if err != nil {
					t.Fatal(err)
				}
				return ad
			},
			messages: func() []string {
				var out []string
				for _, m := range dc.Messages(channelID) {
					out = append(out, m.Content)
				}
				return out
			},
			failUntil: func(until time.Time) {
				dc.FailUntil(http.MethodPost, "/channels/"+channelID+"/messages", until, http.StatusInternalServerError)
			},
		},
		{name: "slack", room: "slack:C1", adapter: slackAdapter, messages: slackTexts(""), failUntil: slackFails},
		{name: "slack thread", room: "slack:C1:" + thread, adapter: slackAdapter, messages: slackTexts(thread), failUntil: slackFails},
	}
}

// crashing is a fixture whose platform is c's in a process that dies
// right after the platform takes a message (crash.sent closes then).
func (c chat) crashing(t *testing.T, st domain.Store, clk *clock.Fake) (*fixture, *crashAfterSend) {
	t.Helper()
	crash := &crashAfterSend{sent: make(chan struct{})}
	f := newFixture(t, st, "old", func(su *setup) {
		su.clk = clk
		su.platforms = func(rt *plugin.Runtime) []plugin.Platform {
			crash.OnceSender = c.adapter(t, rt)
			return []plugin.Platform{crash}
		}
	})
	return f, crash
}

// fixture is a fixture of owner whose platform is c's, as a process
// (re)starting makes it.
func (c chat) fixture(t *testing.T, st domain.Store, owner string, clk *clock.Fake) *fixture {
	t.Helper()
	return newFixture(t, st, owner, func(su *setup) {
		su.clk = clk
		su.platforms = func(rt *plugin.Runtime) []plugin.Platform { return []plugin.Platform{c.adapter(t, rt)} }
	})
}

// crashAfterSend is a platform in a process that dies right after the
// platform accepted a message: the message is out, and nothing after it
// happens — the call returns only when the test ends the process.
type crashAfterSend struct {
	notify.OnceSender
	sent chan struct{}
}

func (c *crashAfterSend) SendOnce(ctx context.Context, room string, m plugin.Outgoing, key string, since time.Time) (plugin.SentMessage, error) {
	if _, err := c.OnceSender.SendOnce(ctx, room, m, key, since); err != nil {
		return plugin.SentMessage{}, err
	}
	close(c.sent)
	<-ctx.Done()
	return plugin.SentMessage{}, ctx.Err()
}

// TestCrashBetweenSendAndMarkSent: the platform took the message, the
// process died before marking it sent, and another process (a restart, or
// the other replica) finds its rows again after the claim expires. It
// recognises the message — Discord by its nonce, Slack by its metadata in
// the room's history — and does not post it again; what arrived meanwhile
// goes out in a message of its own. Also when it comes back after Discord
// has forgotten the nonce (a ten-minute outage): the message is found in
// the channel's history instead.
func TestCrashBetweenSendAndMarkSent(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		for _, down := range []time.Duration{notify.DefaultLease, 10 * time.Minute} {
			clk := clock.NewFake(t0)
			for _, c := range fakeChats(t, clk) {
				t.Run(fmt.Sprintf("%s down %s", c.name, down), func(t *testing.T) {
					st := open(t)
					old, crash := c.crashing(t, st, clk)
					post(t, st, c.room, "first", clk.Now())
					crashFlush(t, old.svc, crash.sent, "the first send")
					if got := c.messages(); !slices.Equal(got, []string{"first"}) {
						t.Fatalf("before the restart the room has %q", got)
					}

					post(t, st, c.room, "second", clk.Now())
					clk.Advance(down) // the dead process's claim expires
					restarted := c.fixture(t, st, "new", clk)
					if _, err := restarted.svc.Flush(ctxFor(t)); err != nil {
						t.Fatal(err)
					}
					if got := c.messages(); !slices.Equal(got, []string{"first", "second"}) {
						t.Fatalf("after the restart the room has %q; want the first message once, then the second", got)
					}
					if n, err := st.Pending(t.Context()); err != nil || n != 0 {
						t.Fatalf("pending = %d, %v; want all marked sent", n, err)
					}
				})
			}
		}
	})
}

// TestAnEarlierAttemptsKeyIsKept: rows that an earlier sender began to
// send under a key go out under that key, whatever rows the message
// holds now, so the platform finds what that sender delivered.
func TestAnEarlierAttemptsKeyIsKept(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		clk := clock.NewFake(t0)
		for _, c := range fakeChats(t, clk) {
			t.Run(c.name, func(t *testing.T) {
				st := open(t)
				f := c.fixture(t, st, "a", clk)
				n := post(t, st, c.room, "first", clk.Now())
				// Another sender claimed the row, began its send under its
				// own key, delivered it and vanished.
				if _, _, err := st.ClaimRoom(t.Context(), domain.RoomClaim{Owner: "ghost", Now: clk.Now(), Lease: notify.DefaultLease}); err != nil {
					t.Fatal(err)
				}
				if err := st.BeginSend(t.Context(), "ghost", []int64{n.ID}, "ghost-7", clk.Now(), ""); err != nil {
					t.Fatal(err)
				}
				ghost, _ := f.rt.Platform(c.room)
				if _, err := ghost.(notify.OnceSender).SendOnce(t.Context(), c.room, plugin.Outgoing{Text: "first"}, "ghost-7", time.Time{}); err != nil {
					t.Fatal(err)
				}
				clk.Advance(notify.DefaultLease)
				if _, err := f.svc.Flush(ctxFor(t)); err != nil {
					t.Fatal(err)
				}
				if got := c.messages(); !slices.Equal(got, []string{"first"}) {
					t.Fatalf("the room has %q; want the ghost's message only", got)
				}
				if p, err := st.Pending(t.Context()); err != nil || p != 0 {
					t.Fatalf("pending = %d, %v", p, err)
				}
			})
		}
	})
}

// TestSlackRoomThatCannotBeReadStillGetsTheMessage: a public channel the
// bot posts to without being in it (chat:write.public) cannot be
// searched for an earlier attempt; the message is posted rather than held
// back.
func TestSlackRoomThatCannotBeReadStillGetsTheMessage(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		st := open(t)
		clk := clock.NewFake(t0)
		sl := slackfake.New(t, slackfake.WithNow(clk.Now))
		f := newFixture(t, st, "a", func(su *setup) {
			su.clk = clk
			su.platforms = func(rt *plugin.Runtime) []plugin.Platform {
				ad, err := slack.New(slack.Options{BotToken: sl.BotToken(), SigningSecret: sl.SigningSecret(), APIURL: sl.APIURL(), Runtime: rt})
				if err != nil {
					t.Fatal(err)
				}
				return []plugin.Platform{ad}
			}
		})
		n := post(t, st, "slack:C9", "hello", clk.Now())
		// An earlier attempt began and was lost before it posted.
		if _, _, err := st.ClaimRoom(t.Context(), domain.RoomClaim{Owner: "ghost", Now: clk.Now(), Lease: notify.DefaultLease}); err != nil {
			t.Fatal(err)
		}
		if err := st.BeginSend(t.Context(), "ghost", []int64{n.ID}, "ghost-9", clk.Now(), ""); err != nil {
			t.Fatal(err)
		}
		clk.Advance(notify.DefaultLease)
		sl.FailNext("conversations.history", "not_in_channel")
		if got := f.flush(); got != 1 {
			t.Fatalf("flush sent %d messages", got)
		}
		if calls := sl.CallsTo("conversations.history"); len(calls) != 1 || calls[0].Error != "not_in_channel" {
			t.Fatalf("history calls = %+v; want the one refused lookup", calls)
		}
		if ms := sl.Messages(); len(ms) != 1 || ms[0].Text != "hello" || ms[0].Metadata == nil || ms[0].Metadata.EventPayload["key"] != "ghost-9" {
			t.Fatalf("messages = %+v", ms)
		}
	})
}

// gate is a platform whose sends wait until the test lets them through,
// or their context ends.
type gate struct {
	entered chan struct{}
	open    chan struct{}
	mu      sync.Mutex
	sent    []string
	ended   error // how the last send ended
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 1), open: make(chan struct{})} }

func (g *gate) Name() string { return "chat" }
func (g *gate) Send(ctx context.Context, room string, m plugin.Outgoing) (plugin.SentMessage, error) {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
		g.sent = append(g.sent, room+"|"+m.Text)
		return plugin.SentMessage{IDs: []string{"1"}}, nil
	case <-ctx.Done():
		g.ended = ctx.Err()
		return plugin.SentMessage{}, ctx.Err()
	}
}

func (g *gate) messages() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.sent)
}

// TestSendOutlivingItsClaimIsNotSentTwice: replica A's send takes longer
// than the room's lease; A renews its claim while it sends, so replica B,
// on the same PostgreSQL database, does not take the room and send the
// message a second time.
func TestSendOutlivingItsClaimIsNotSentTwice(t *testing.T) {
	shared := teststore.Postgres(t)
	slow := newGate()
	a := newFixture(t, shared, "replica-a", func(su *setup) {
		su.platforms = func(*plugin.Runtime) []plugin.Platform { return []plugin.Platform{slow} }
		su.opts = func(o *notify.Options) { o.SendTimeout = time.Hour }
	})
	b := newFixture(t, shared, "replica-b", func(su *setup) { su.clk = a.clk })
	ctx := ctxFor(t)
	post(t, shared, "chat:C1", "task #1 completed", a.clk.Now())

	flushed := make(chan int, 1)
	go func() {
		n, err := a.svc.Flush(ctx)
		if err != nil {
			t.Error(err)
		}
		flushed <- n
	}()
	receive(t, slow.entered, "A's send")
	// A waits on its send deadline and its renewal; the lease runs out
	// one renewal period at a time.
	for range 4 {
		if err := a.clk.BlockUntil(ctx, 2); err != nil {
			t.Fatal(err)
		}
		a.clk.Advance(notify.DefaultLease / 3)
	}
	if err := a.clk.BlockUntil(ctx, 2); err != nil { // the last renewal is done
		t.Fatal(err)
	}
	if n := b.flush(); n != 0 || len(b.out.messages()) != 0 {
		t.Fatalf("B sent %d messages (%q) while A's send was still running past the lease", n, b.out.messages())
	}
	close(slow.open)
	if n := <-flushed; n != 1 {
		t.Fatalf("A's flush sent %d messages, want 1", n)
	}
	if n := b.flush(); n != 0 || len(b.out.messages()) != 0 {
		t.Fatalf("B sent %q after A delivered", b.out.messages())
	}
	if got := slow.messages(); len(got) != 1 {
		t.Fatalf("A sent %q", got)
	}
	if n, err := shared.Pending(t.Context()); err != nil || n != 0 {
		t.Fatalf("pending = %d, %v", n, err)
	}
}

// renewFails is a store whose claim renewals fail when told to, as when
// another sender took the rows.
type renewFails struct {
	domain.Store
	fail atomic.Bool
}

func (s *renewFails) RenewClaim(ctx context.Context, owner string, ids []int64, until time.Time) error {
	if s.fail.Load() {
		return fmt.Errorf("renew the claim: %w", domain.ErrStaleFence)
	}
	return s.Store.RenewClaim(ctx, owner, ids, until)
}

// TestSendIsCanceledWhenItsClaimCannotBeRenewed: a send whose claim could
// not be renewed is canceled and its rows are neither marked sent nor
// released by it; they go out once, from whoever claims them next.
func TestSendIsCanceledWhenItsClaimCannotBeRenewed(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		st := &renewFails{Store: open(t)}
		slow := newGate()
		a := newFixture(t, st, "a", func(su *setup) {
			su.platforms = func(*plugin.Runtime) []plugin.Platform { return []plugin.Platform{slow} }
			su.opts = func(o *notify.Options) { o.SendTimeout = time.Hour }
		})
		ctx := ctxFor(t)
		post(t, st, "chat:C1", "hello", a.clk.Now())
		type result struct {
			n   int
			err error
		}
		flushed := make(chan result, 1)
		go func() {
			n, err := a.svc.Flush(ctx)
			flushed <- result{n, err}
		}()
		receive(t, slow.entered, "the send")
		st.fail.Store(true)
		if err := a.clk.BlockUntil(ctx, 2); err != nil {
			t.Fatal(err)
		}
		a.clk.Advance(notify.DefaultLease / 3)
		var r result
		select {
		case r = <-flushed:
		case <-time.After(waitFor):
			t.Fatal("the send went on after its claim could not be renewed")
		}
		if r.n != 0 || r.err != nil || !errors.Is(slow.ended, context.Canceled) {
			t.Fatalf("flush = %d, %v; the send ended with %v; want it canceled and nothing sent", r.n, r.err, slow.ended)
		}
		pending := list(t, st, domain.NotificationPending)
		if len(pending) != 1 || pending[0].Attempts != 0 || pending[0].DeliveryKey == "" {
			t.Fatalf("rows after the canceled send = %+v; want them as the claim left them", pending)
		}
		// The next sender waits out the claim, then sends the message under
		// the same key.
		b := newFixture(t, st.Store, "b", func(su *setup) { su.clk = a.clk })
		if b.flush() != 0 {
			t.Fatal("B took rows A still held")
		}
		a.clk.Advance(notify.DefaultLease)
		if b.flush() != 1 || len(b.out.messages()) != 1 {
			t.Fatalf("B sent %q", b.out.messages())
		}
	})
}

// TestEveryOutboundCallHasADeadline: a platform that never answers is cut
// off at SendTimeout (on the runtime's clock) and the notification is
// retried later.
func TestEveryOutboundCallHasADeadline(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		st := open(t)
		out := &stuck{entered: make(chan struct{}, 1)}
		f := newFixture(t, st, "a", func(su *setup) {
			su.platforms = func(*plugin.Runtime) []plugin.Platform { return []plugin.Platform{out} }
		})
		ctx := ctxFor(t)
		post(t, st, "chat:C1", "hello", f.clk.Now())
		flushed := make(chan error, 1)
		go func() {
			_, err := f.svc.Flush(ctx)
			flushed <- err
		}()
		receive(t, out.entered, "the send")
		if err := f.clk.BlockUntil(ctx, 2); err != nil { // the deadline and the renewal
			t.Fatal(err)
		}
		f.clk.Advance(notify.DefaultSendTimeout)
		select {
		case err := <-flushed:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(waitFor):
			t.Fatal("the send was not cut off at its deadline")
		}
		pending := list(t, st, domain.NotificationPending)
		if len(pending) != 1 || pending[0].Attempts != 1 || !strings.Contains(pending[0].LastError, "no answer within 20s") {
			t.Fatalf("after the deadline = %+v; want it released for a retry", pending)
		}
	})
}

// counts is a notify.Metrics that counts.
type counts struct {
	mu                 sync.Mutex
	sent, failed, dead map[string]int
}

func newCounts() *counts {
	return &counts{sent: map[string]int{}, failed: map[string]int{}, dead: map[string]int{}}
}

func (c *counts) NotificationSent(p string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent[p]++
}

func (c *counts) NotificationFailed(p string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failed[p]++
}

func (c *counts) NotificationsDead(p string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dead[p] += n
}

func (c *counts) deadOf(p string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dead[p]
}

// TestChannelGoneOrForbiddenIsADeadLetter: when the platform says the
// room's channel is gone or closed to the bot, the notification is marked
// failed with the reason at once and never retried; a passing failure is
// retried.
func TestChannelGoneOrForbiddenIsADeadLetter(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		clk := clock.NewFake(t0)
		dc := discordfake.New(t, discordfake.WithNow(clk.Now))
		sl := slackfake.New(t, slackfake.WithNow(clk.Now))
		discordPlatform := func(rt *plugin.Runtime) plugin.Platform {
			ad, err := discord.New(discord.Options{Token: dc.Token(), APIURL: dc.URL(), Runtime: rt})
			if err != nil {
				t.Fatal(err)
			}
			return ad
		}
		slackPlatform := func(rt *plugin.Runtime) plugin.Platform {
			ad, err := slack.New(slack.Options{BotToken: sl.BotToken(), SigningSecret: sl.SigningSecret(), APIURL: sl.APIURL(), Runtime: rt})
			if err != nil {
				t.Fatal(err)
			}
			return ad
		}
		channel := 1300000000000000100
		cases := []struct {
			name, platform string
			// breakRoom breaks the room in a new way and names it.
			breakRoom func() string
			reason    string
			dead      bool
		}{
			{"discord channel deleted", "discord", func() string {
				channel++
				id := fmt.Sprint(channel)
				dc.AddChannel(id, guildID)
				dc.RemoveChannel(id)
				return "discord:" + id
			}, "Unknown Channel", true},
			{"discord access denied", "discord", func() string {
				channel++
				id := fmt.Sprint(channel)
				dc.AddChannel(id, guildID)
				dc.DenyChannel(id)
				return "discord:" + id
			}, "Missing Access", true},
			{"discord server error", "discord", func() string {
				channel++
				id := fmt.Sprint(channel)
				dc.AddChannel(id, guildID)
				dc.FailNext("POST", "/channels/"+id+"/messages", 1, http.StatusInternalServerError)
				return "discord:" + id
			}, "500", false},
		}
		for i, code := range []string{"channel_not_found", "not_in_channel", "is_archived", "account_inactive", "internal_error"} {
			cases = append(cases, struct {
				name, platform string
				breakRoom      func() string
				reason         string
				dead           bool
			}{"slack " + code, "slack", func() string {
				sl.FailNext("chat.postMessage", code)
				return fmt.Sprintf("slack:C%d", i)
			}, code, code != "internal_error"})
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				st := open(t)
				metrics := newCounts()
				f := newFixture(t, st, "a", func(su *setup) {
					su.clk = clk
					su.platforms = func(rt *plugin.Runtime) []plugin.Platform {
						return []plugin.Platform{discordPlatform(rt), slackPlatform(rt)}
					}
					su.opts = func(o *notify.Options) { o.Metrics = metrics }
				})
				room := tc.breakRoom()
				n := post(t, st, room, "hello", clk.Now())
				if sent := f.flush(); sent != 0 {
					t.Fatalf("%d messages went out to a broken room", sent)
				}
				failed := list(t, st, domain.NotificationFailed)
				if !tc.dead {
					if len(failed) != 0 || metrics.deadOf(tc.platform) != 0 {
						t.Fatalf("a passing failure was given up on: %+v", failed)
					}
					if p := list(t, st, domain.NotificationPending); len(p) != 1 || p[0].Attempts != 1 {
						t.Fatalf("pending after a passing failure = %+v", p)
					}
					return
				}
				if len(failed) != 1 || failed[0].ID != n.ID || !strings.Contains(failed[0].LastError, tc.reason) || !failed[0].FailedAt.Equal(clk.Now()) {
					t.Fatalf("dead letters = %+v; want notification %d failed with %q", failed, n.ID, tc.reason)
				}
				if metrics.deadOf(tc.platform) != 1 {
					t.Errorf("dead letters counted: %v", metrics.dead)
				}
				if p, err := st.Pending(t.Context()); err != nil || p != 0 {
					t.Errorf("pending = %d, %v; a dead letter is not pending", p, err)
				}
				before := len(dc.Calls()) + len(sl.Calls())
				clk.Advance(time.Hour)
				if f.flush() != 0 || len(dc.Calls())+len(sl.Calls()) != before {
					t.Errorf("a dead letter was tried again")
				}
			})
		}
	})
}

// TestDeadLetterAfterADayOfFailures: a notification that keeps failing is
// given up on 24 hours after it was created; the younger rows of its room
// are still retried. Retried by hand, it gets another 24 hours.
func TestDeadLetterAfterADayOfFailures(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		st := open(t)
		f := newFixture(t, st, "a")
		f.out.failAll = errors.New("connection reset")
		old := post(t, st, "chat:C1", "old news", f.clk.Now())
		f.flush()
		f.clk.Advance(23 * time.Hour)
		young := post(t, st, "chat:C1", "young news", f.clk.Now())
		f.flush()
		if failed := list(t, st, domain.NotificationFailed); len(failed) != 0 {
			t.Fatalf("given up on before 24 hours: %+v", failed)
		}
		f.clk.Advance(time.Hour)
		f.flush()
		failed := list(t, st, domain.NotificationFailed)
		if len(failed) != 1 || failed[0].ID != old.ID || failed[0].LastError != "not delivered in 24h0m0s: connection reset" {
			t.Fatalf("dead letters after 24 hours = %+v; want only notification %d", failed, old.ID)
		}
		if p := list(t, st, domain.NotificationPending); len(p) != 1 || p[0].ID != young.ID {
			t.Fatalf("pending = %+v; want the younger notification still retried", p)
		}

		// Retried by hand, it is not given up on at its next failure.
		if _, err := st.RetryNotification(t.Context(), old.ID, f.clk.Now()); err != nil {
			t.Fatal(err)
		}
		f.clk.Advance(notify.DefaultMaxBackoff)
		f.flush()
		if failed := list(t, st, domain.NotificationFailed); len(failed) != 0 {
			t.Fatalf("a retried notification was given up on at its first failure: %+v", failed)
		}
		// Once the room takes messages again, both go out.
		f.out.failAll = nil
		f.clk.Advance(notify.DefaultMaxBackoff)
		f.flush()
		msgs := f.out.messages()
		if len(msgs) != 2 || !strings.Contains(msgs[0], "old news") || !strings.Contains(msgs[1], "young news") {
			t.Fatalf("messages = %q", msgs)
		}
		if p, err := st.Pending(t.Context()); err != nil || p != 0 {
			t.Fatalf("pending = %d, %v", p, err)
		}
	})
}

// TestRetryOfADeadLetter: once the channel is back, a dead letter retried
// by hand is delivered, once.
func TestRetryOfADeadLetter(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		st := open(t)
		clk := clock.NewFake(t0)
		dc := discordfake.New(t, discordfake.WithNow(clk.Now),
			discordfake.WithGuild(discordfake.Guild{ID: guildID, ChannelIDs: []string{channelID}}))
		f := newFixture(t, st, "a", func(su *setup) {
			su.clk = clk
			su.platforms = func(rt *plugin.Runtime) []plugin.Platform {
				ad, err := discord.New(discord.Options{Token: dc.Token(), APIURL: dc.URL(), Runtime: rt})
				if err != nil {
					t.Fatal(err)
				}
				return []plugin.Platform{ad}
			}
		})
		dc.DenyChannel(channelID)
		n := post(t, st, "discord:"+channelID, "task #1 completed", clk.Now())
		f.flush()
		if failed := list(t, st, domain.NotificationFailed); len(failed) != 1 {
			t.Fatalf("dead letters = %+v", failed)
		}
		if _, err := st.RetryNotification(t.Context(), n.ID+1, clk.Now()); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("retry of no notification: %v", err)
		}

		// Someone gives the bot its access back, then retries it.
		dc.AllowChannel(channelID)
		clk.Advance(time.Hour)
		if f.flush() != 0 {
			t.Fatal("a dead letter went out before it was retried")
		}
		r, err := st.RetryNotification(t.Context(), n.ID, clk.Now())
		if err != nil || r.Status != domain.NotificationPending {
			t.Fatalf("retry = %+v, %v", r, err)
		}
		if f.flush() != 1 {
			t.Fatal("the retried notification did not go out")
		}
		if ms := dc.Messages(channelID); len(ms) != 1 || ms[0].Content != "task #1 completed" {
			t.Fatalf("messages = %+v", ms)
		}
		if len(list(t, st, "")) != 0 {
			t.Fatal("the delivered notification is still stored")
		}
	})
}

// TestTaskEndedGoesOutWithoutAFlush: with the service started, a task's
// end reaches the room at once — nobody calls Flush and the clock does not
// reach the flush interval.
func TestTaskEndedGoesOutWithoutAFlush(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open(t), "a")
		n := f.create("chat:C1", "Old idea").Number
		ctx := ctxFor(t)
		if err := f.svc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.svc.Stop(context.Background()) })
		if err := f.clk.BlockUntil(ctx, 1); err != nil { // the service waits for the interval
			t.Fatal(err)
		}
		if _, err := f.tasks.Cancel(ctx, n, "u1"); err != nil {
			t.Fatal(err)
		}
		msgs, err := f.out.waitMessages(ctx, 1)
		if err != nil {
			t.Fatalf("the task's end did not go out at once: %v", err)
		}
		if !strings.Contains(msgs[0], `🛑 Task #1 "Old idea" canceled`) {
			t.Fatalf("message = %q", msgs[0])
		}
		if !f.clk.Now().Equal(t0) {
			t.Fatal("the clock moved")
		}
	})
}
