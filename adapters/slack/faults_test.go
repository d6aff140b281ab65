package slack_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskloom/taskloom/internal/app"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/slackfake"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// logs keeps what the service logs.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// newEnvBehindProxy is a Socket Mode env on a PostgreSQL store reached
// through a proxy that can make it unreachable, logging into l.
func newEnvBehindProxy(t *testing.T, l *logs) (*env, *testkit.PostgresProxy) {
	t.Helper()
	return newEnvModeBehindProxy(t, socketMode, l)
}

// newEnvModeBehindProxy is newEnvBehindProxy in mode.
func newEnvModeBehindProxy(t *testing.T, mode string, l *logs) (*env, *testkit.PostgresProxy) {
	t.Helper()
	proxy, url := testkit.ProxyPostgres(t, testkit.PostgresURL(t))
	e := newEnvCore(t, mode, nil, nil, func(co *app.CoreOptions) {
		co.Store = teststore.PostgresAt(t, url)
		co.Logger = slog.New(slog.NewTextHandler(l, nil))
	})
	return e, proxy
}

// advanceUntil moves the fake clock on by step until done, at most
// limit in all, and reports whether done came.
func (e *env) advanceUntil(step, limit time.Duration, done func() bool) bool {
	e.t.Helper()
	for moved := time.Duration(0); ; moved += step {
		for range 20 { // polling other goroutines' work, not timing it
			if done() {
				return true
			}
			time.Sleep(5 * time.Millisecond)
		}
		if moved >= limit || e.ctx.Err() != nil {
			return done()
		}
		e.clk.Advance(step)
	}
}

func (e *env) waitLog(l *logs, s string) {
	e.t.Helper()
	deadline := time.Now().Add(wait)
	for !strings.Contains(l.String(), s) {
		if time.Now().After(deadline) {
			e.t.Fatalf("never logged %q; logs:\n%s", s, l.String())
		}
		time.Sleep(5 * time.Millisecond) // polling another goroutine's write
	}
}

func (e *env) postsIn(channel, thread string) []slackfake.Message {
	var out []slackfake.Message
	for _, m := range e.fake.Messages() {
		if m.Channel == channel && m.ThreadTS == thread {
			out = append(out, m)
		}
	}
	return out
}

// acked says whether the app acknowledged the envelope.
func (e *env) acked(id string) bool {
	for _, a := range e.fake.Acks() {
		if a.EnvelopeID == id {
			return true
		}
	}
	return false
}

// A mention made while PostgreSQL restarts is not acknowledged until it
// is stored: Slack keeps it and delivers it again (RedeliverUnacked, as
// Slack does after three seconds), so a replica killed meanwhile loses
// nothing. Slack's retry once the store is back is carried out once,
// answered in its thread as usual.
func TestMentionDuringShortStoreOutageIsLeftToSlacksRetry(t *testing.T) {
	t.Parallel()
	var l logs
	e, proxy := newEnvBehindProxy(t, &l)

	proxy.SetDown(true)
	ev := e.fake.AppMention("C1", alice, "create task Build auth")
	first, err := e.fake.Deliver(e.ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	e.waitLog(&l, "the store cannot be reached; the message waits for it")
	e.advanceUntil(500*time.Millisecond, 10*time.Second, func() bool { return e.acked(first.ID) })
	if e.acked(first.ID) {
		t.Fatal("the mention was acknowledged before it was stored: Slack would not deliver it again")
	}
	if ms := e.fake.Messages(); len(ms) != 0 {
		t.Fatalf("answered during the outage:\n%s", dump(ms))
	}

	proxy.SetDown(false)
	retries, err := e.fake.RedeliverUnacked(e.ctx)
	if err != nil || len(retries) != 1 {
		t.Fatalf("Slack's retries: %+v, %v; want one", retries, err)
	}
	if !e.advanceUntil(500*time.Millisecond, 15*time.Second, func() bool { return e.acked(retries[0].ID) }) {
		t.Fatalf("Slack's retry was not acknowledged once the store answered; logs:\n%s", l.String())
	}
	e.waitMessages(1, inThread("C1", ev.TS))
	e.settle()
	if n := e.countTasks(); n != 1 {
		t.Errorf("%d tasks, want 1", n)
	}
	ms := e.fake.Messages()
	if len(ms) != 1 || ms[0].Kind != slackfake.KindPost || !strings.Contains(ms[0].Text, `Created task #1 "Build auth"`) {
		t.Errorf("messages:\n%s\nwant the acknowledgement once, in the mention's thread", dump(ms))
	}
}

// Over HTTP the same: a mention not stored is answered 503, and Slack's
// retry, once the store is back, is taken.
func TestMentionNotStoredIsAnswered503(t *testing.T) {
	t.Parallel()
	var l logs
	e, proxy := newEnvModeBehindProxy(t, httpMode, &l)

	proxy.SetDown(true)
	ev := e.fake.AppMention("C1", alice, "create task Build auth")
	got := e.deliverAsync(ev)
	var d delivery
	if !e.advanceUntil(500*time.Millisecond, 10*time.Second, func() bool {
		select {
		case d = <-got:
			return true
		default:
			return false
		}
	}) {
		t.Fatal("no answer within the ack window")
	}
	if d.status != http.StatusServiceUnavailable {
		t.Fatalf("HTTP %d while the store is down, want 503 so that Slack retries", d.status)
	}
	proxy.SetDown(false)
	e.deliver(ev, slackfake.Retry(1, "http_error"))
	e.waitMessages(1, both(inThread("C1", ev.TS), saying(`Created task #1 "Build auth"`)))
	e.settle()
	if n := e.countTasks(); n != 1 {
		t.Errorf("%d tasks, want 1", n)
	}
}

// Slack's last retry, still during the outage, is acknowledged and waits
// for the store in the process; after the wait it is answered, to its
// author only, with one sentence saying nothing was done, and nothing is.
func TestMentionDuringLongStoreOutageIsRefusedInOneSentence(t *testing.T) {
	t.Parallel()
	var l logs
	e, proxy := newEnvBehindProxy(t, &l)

	proxy.SetDown(true)
	ev := e.fake.AppMention("C1", alice, "create task Build auth")
	env, err := e.fake.Deliver(e.ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 1; attempt <= slackfake.MaxRetries; attempt++ {
		e.waitLog(&l, "the store cannot be reached")
		var retries []slackfake.Envelope
		step := time.Second
		if attempt > 1 {
			step = 10 * time.Second // a minute, then five, before the retry
		}
		if !e.advanceUntil(step, 7*time.Minute, func() bool {
			retries, err = e.fake.RedeliverUnacked(e.ctx)
			return err != nil || len(retries) > 0
		}) || len(retries) != 1 {
			t.Fatalf("retry %d: %+v, %v", attempt, retries, err)
		}
		if e.acked(env.ID) {
			t.Fatalf("delivery %d acknowledged during the outage", attempt)
		}
		env = retries[0]
	}
	if !e.advanceUntil(time.Second, 40*time.Second, func() bool { return len(e.fake.Messages()) > 0 }) {
		t.Fatalf("no answer after the outage outlasted the wait; logs:\n%s", l.String())
	}
	if !e.acked(env.ID) {
		t.Error("Slack's last retry was not acknowledged")
	}
	e.advanceUntil(time.Second, 5*time.Second, func() bool { return false })
	proxy.SetDown(false)
	e.settle()
	ms := e.fake.Messages()
	if len(ms) != 1 || ms[0].Kind != slackfake.KindEphemeral || ms[0].User != alice ||
		ms[0].Text != "I could not reach my database, so nothing was done: say it again in a minute." {
		t.Fatalf("messages:\n%s\nwant the one sentence, to alice only", dump(ms))
	}
	if n := e.countTasks(); n != 0 {
		t.Errorf("%d tasks, want none", n)
	}
}

// An acknowledgement Slack answers with HTTP 500 goes to the outbox and
// is retried until Slack takes it: once, in the mention's thread, with
// the task's buttons.
func TestAcknowledgementFailingWith500IsDeliveredOnce(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, e *env) {
		e.fake.ServerErrorNext("chat.postMessage", 3)
		ev := e.fake.AppMention("C1", alice, "create task Build auth")
		e.deliver(ev)
		if !e.advanceUntil(time.Second, 30*time.Second, func() bool { return len(e.fake.Messages()) > 0 }) {
			t.Fatal("the acknowledgement never came")
		}
		e.advanceUntil(time.Second, 10*time.Second, func() bool { return false })
		ms := e.fake.Messages()
		if len(ms) != 1 || ms[0].Channel != "C1" || ms[0].ThreadTS != ev.TS || !strings.Contains(ms[0].Text, `Created task #1 "Build auth"`) {
			t.Fatalf("messages:\n%s\nwant the acknowledgement once, in the mention's thread", dump(ms))
		}
		if got := ms[0].Buttons(); len(got) == 0 {
			t.Error("the acknowledgement lost the task's buttons")
		}
		var statuses []int
		for _, c := range e.fake.CallsTo("chat.postMessage") {
			statuses = append(statuses, c.Status)
		}
		if len(statuses) != 4 {
			t.Errorf("chat.postMessage answered %v, want three 500s and the one that went through", statuses)
		}
	})
}

// A 500 that came after Slack had posted the acknowledgement leaves no
// second copy: the reply carried the metadata of its key, and the
// outbox's retry finds it in the thread instead of posting it again.
func TestAcknowledgementPostedDespite500IsNotPostedTwice(t *testing.T) {
	t.Parallel()
	e := newEnv(t, socketMode)
	e.fake.ServerErrorAfterNext("chat.postMessage", 1)
	ev := e.fake.AppMention("C1", alice, "create task Build auth")
	e.deliver(ev)
	if !e.advanceUntil(time.Second, 10*time.Second, func() bool {
		return len(e.fake.CallsTo("conversations.replies")) > 0
	}) {
		t.Fatal("the outbox never looked for the first attempt's reply")
	}
	e.advanceUntil(time.Second, 5*time.Second, func() bool { return false })
	e.settle()
	ms := e.fake.Messages()
	if len(ms) != 1 || ms[0].ThreadTS != ev.TS || !strings.Contains(ms[0].Text, `Created task #1 "Build auth"`) {
		t.Fatalf("messages:\n%s\nwant the acknowledgement once, in the mention's thread", dump(ms))
	}
}
