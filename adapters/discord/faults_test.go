package discord_test

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/internal/app"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/discordfake"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// startBehindProxy starts the bot on a PostgreSQL store reached through
// a proxy that can make it unreachable, logging into l.
func startBehindProxy(t *testing.T, srv *discordfake.Server, l *logs) (*bot, *testkit.PostgresProxy) {
	t.Helper()
	proxy, url := testkit.ProxyPostgres(t, testkit.PostgresURL(t))
	b := newBotCore(t, srv, nil, func(co *app.CoreOptions) {
		co.Store = teststore.PostgresAt(t, url)
		co.Logger = slog.New(slog.NewTextHandler(l, nil))
	})
	if err := b.core.Runtime.Start(b.ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.core.Tasks.Stop(b.ctx); err != nil {
		t.Fatal(err)
	}
	return b, proxy
}

// advanceUntil moves the fake clock on by step until done, at most
// limit in all, and reports whether done came.
func (b *bot) advanceUntil(step, limit time.Duration, done func() bool) bool {
	b.t.Helper()
	for moved := time.Duration(0); ; moved += step {
		for range 20 { // polling other goroutines' work, not timing it
			if done() {
				return true
			}
			time.Sleep(5 * time.Millisecond)
		}
		if moved >= limit || b.ctx.Err() != nil {
			return done()
		}
		b.clk.Advance(step)
	}
}

// waitLog waits for a line containing s in l.
func (b *bot) waitLog(l *logs, s string) {
	b.t.Helper()
	for !strings.Contains(l.String(), s) {
		if b.ctx.Err() != nil {
			b.t.Fatalf("never logged %q; logs:\n%s", s, l.String())
		}
		time.Sleep(5 * time.Millisecond) // polling another goroutine's write
	}
}

// A command typed while PostgreSQL restarts is not lost: it waits for the
// store and is carried out, once, when the store answers again, and the
// person gets the usual acknowledgement — even when Discord delivers the
// message again meanwhile.
func TestCommandDuringShortStoreOutageIsCarriedOutOnce(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	var l logs
	b, proxy := startBehindProxy(t, srv, &l)

	proxy.SetDown(true)
	text := b.mention("create task Build auth")
	id := srv.MessageCreate(channelID, guildID, alice, text)
	b.waitLog(&l, "the store cannot be reached; the message waits for it")
	// A redelivery while the first waits is not a second command.
	srv.Dispatch("MESSAGE_CREATE", wireMessage(id, channelID, guildID, alice, text, srv.BotUser().ID))
	b.advanceUntil(500*time.Millisecond, 10*time.Second, func() bool { return false })
	if ms := srv.Messages(channelID); len(ms) != 0 {
		t.Fatalf("answered during the outage: %q", ms[0].Content)
	}

	proxy.SetDown(false)
	if !b.advanceUntil(500*time.Millisecond, 15*time.Second, func() bool { return len(srv.Messages(channelID)) > 0 }) {
		t.Fatalf("no reply once the store answered again; logs:\n%s", l.String())
	}
	ack := srv.Messages(channelID)[0]
	mustContain(t, "acknowledgement", ack.Content, `Created task #1 "Build auth"`)
	if ack.ReplyTo != id {
		t.Errorf("acknowledgement replies to %q, want the command %q", ack.ReplyTo, id)
	}
	// And again after the outage: still one task, one reply.
	srv.Dispatch("MESSAGE_CREATE", wireMessage(id, channelID, guildID, alice, text, srv.BotUser().ID))
	srv.MessageCreate(channelID, guildID, alice, b.mention("list tasks"))
	mustContain(t, "list", b.messages(channelID, 2)[1].Content, "Task Queue (1 task")
	b.stop()
	if n := b.countTasks(); n != 1 {
		t.Errorf("%d tasks, want 1", n)
	}
	if ms := srv.Messages(channelID); len(ms) != 2 {
		t.Errorf("%d bot messages, want the acknowledgement and the list", len(ms))
	}
}

// After a longer outage the command is answered with one sentence saying
// nothing was done, and nothing is: the person knows to say it again,
// and a redelivery of it later does not do it behind their back.
func TestCommandDuringLongStoreOutageIsRefusedInOneSentence(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	var l logs
	b, proxy := startBehindProxy(t, srv, &l)

	proxy.SetDown(true)
	text := b.mention("create task Build auth")
	id := srv.MessageCreate(channelID, guildID, alice, text)
	b.waitLog(&l, "the store cannot be reached; the message waits for it")
	// A redelivery meanwhile gets no sentence of its own.
	srv.Dispatch("MESSAGE_CREATE", wireMessage(id, channelID, guildID, alice, text, srv.BotUser().ID))
	if !b.advanceUntil(time.Second, 40*time.Second, func() bool { return len(srv.Messages(channelID)) > 0 }) {
		t.Fatalf("no answer after the outage outlasted the wait; logs:\n%s", l.String())
	}
	b.advanceUntil(time.Second, 5*time.Second, func() bool { return false })
	ms := srv.Messages(channelID)
	if len(ms) != 1 || ms[0].Content != "I could not reach my database, so nothing was done: say it again in a minute." {
		t.Fatalf("answers = %+v, want the one sentence", ms)
	}
	if ms[0].ReplyTo != id {
		t.Errorf("the sentence replies to %q, want the command %q", ms[0].ReplyTo, id)
	}

	proxy.SetDown(false)
	srv.Dispatch("MESSAGE_CREATE", wireMessage(id, channelID, guildID, alice, text, srv.BotUser().ID))
	srv.MessageCreate(channelID, guildID, alice, b.mention("list tasks"))
	mustContain(t, "list", b.messages(channelID, 2)[1].Content, "Task Queue is empty")
	b.stop()
	if n := b.countTasks(); n != 0 {
		t.Errorf("%d tasks, want none", n)
	}
}

// An acknowledgement Discord answers with 500 is not lost: it goes to the
// outbox and is retried with its backoff until Discord takes it, once,
// as a reply to the command in its channel, with the task's buttons.
func TestAcknowledgementFailingWith500IsDeliveredOnce(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	b := start(t, srv)
	path := "/channels/" + channelID + "/messages"
	srv.FailNext("POST", path, 3, http.StatusInternalServerError)

	id := srv.MessageCreate(channelID, guildID, alice, b.mention("create task Build auth"))
	if !b.advanceUntil(time.Second, 30*time.Second, func() bool { return len(srv.Messages(channelID)) > 0 }) {
		t.Fatal("the acknowledgement never came")
	}
	b.advanceUntil(time.Second, 10*time.Second, func() bool { return false }) // nothing more comes
	ms := srv.Messages(channelID)
	if len(ms) != 1 {
		t.Fatalf("%d messages, want the acknowledgement once: %+v", len(ms), ms)
	}
	mustContain(t, "acknowledgement", ms[0].Content, `Created task #1 "Build auth"`)
	if ms[0].ReplyTo != id {
		t.Errorf("acknowledgement replies to %q, want the command %q", ms[0].ReplyTo, id)
	}
	if len(ms[0].Components) == 0 {
		t.Error("the acknowledgement lost the task's buttons")
	}
	var statuses []int
	for _, c := range srv.CallsTo("POST", path) {
		statuses = append(statuses, c.Status)
	}
	if len(statuses) != 4 || statuses[3] != http.StatusOK {
		t.Errorf("sends answered %v, want three 500s and then the one that went through", statuses)
	}
	ns, err := b.store.ListNotifications(b.ctx, "", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(ns) != 0 {
		t.Errorf("outbox still holds %+v", ns)
	}
}

// A 500 that came after Discord had posted the acknowledgement (a
// gateway's timeout) leaves no second copy: the outbox's retry carries the
// nonce of the first attempt, and Discord answers it with the message
// that attempt posted.
func TestAcknowledgementPostedDespite500IsNotPostedTwice(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	b := start(t, srv)
	path := "/channels/" + channelID + "/messages"
	srv.FailAfterNext("POST", path, 1, http.StatusInternalServerError)

	srv.MessageCreate(channelID, guildID, alice, b.mention("create task Build auth"))
	if !b.advanceUntil(time.Second, 10*time.Second, func() bool { return len(srv.CallsTo("POST", path)) >= 2 }) {
		t.Fatal("the acknowledgement was not retried")
	}
	b.advanceUntil(time.Second, 5*time.Second, func() bool { return false })
	b.stop()
	ms := srv.Messages(channelID)
	if len(ms) != 1 {
		t.Fatalf("%d messages, want the acknowledgement once: %+v", len(ms), ms)
	}
	mustContain(t, "acknowledgement", ms[0].Content, `Created task #1 "Build auth"`)
}

// A /task create whose interaction response Discord answers with 500 is
// not left unacknowledged in the channel: the acknowledgement, public as
// it would have been, is posted there by the outbox. (An interaction
// cannot be answered later than Discord allows, and an ephemeral answer
// cannot be posted for one person later at all: those are not queued.)
func TestInteractionAcknowledgementFailingWith500IsPostedInTheChannel(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	b := start(t, srv)
	srv.FailNext("POST", "/interactions/", 1, http.StatusInternalServerError)

	b.slash(alice, "create", discordfake.CommandOption{Name: "goal", Value: "Build auth"})
	if !b.advanceUntil(time.Second, 10*time.Second, func() bool { return len(srv.Messages(channelID)) > 0 }) {
		t.Fatal("the acknowledgement never came")
	}
	b.advanceUntil(time.Second, 5*time.Second, func() bool { return false })
	b.stop()
	ms := srv.Messages(channelID)
	if len(ms) != 1 || ms[0].InteractionID != "" || ms[0].ReplyTo != "" {
		t.Fatalf("messages = %+v, want the acknowledgement once, posted in the channel", ms)
	}
	mustContain(t, "acknowledgement", ms[0].Content, `Created task #1 "Build auth"`)
	if n := b.countTasks(); n != 1 {
		t.Errorf("%d tasks, want 1", n)
	}
}

// A /task create whose interaction response Discord made although it
// answered 500 (the error came from between, after the work): interaction
// responses carry no nonce, so the bot asks for the response (@original)
// before posting the acknowledgement anywhere else. People see it once.
func TestInteractionAcknowledgementMadeDespite500IsNotPostedTwice(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	b := start(t, srv)
	srv.FailAfterNext("POST", "/interactions/", 1, http.StatusInternalServerError)

	b.slash(alice, "create", discordfake.CommandOption{Name: "goal", Value: "Build auth"})
	if !b.advanceUntil(time.Second, 10*time.Second, func() bool { return len(srv.Messages(channelID)) > 0 }) {
		t.Fatal("the acknowledgement never came")
	}
	b.advanceUntil(time.Second, 5*time.Second, func() bool { return false })
	b.stop()
	ms := srv.Messages(channelID)
	if len(ms) != 1 || ms[0].InteractionID == "" {
		t.Fatalf("messages = %+v, want the acknowledgement once, as the interaction's response", ms)
	}
	mustContain(t, "acknowledgement", ms[0].Content, `Created task #1 "Build auth"`)
	if n := b.countTasks(); n != 1 {
		t.Errorf("%d tasks, want 1", n)
	}
}
