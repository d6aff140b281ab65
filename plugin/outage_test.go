package plugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
)

// downStore is a real store whose SaveMemory cannot reach it while down.
type downStore struct {
	domain.Store
	down  atomic.Bool
	tries atomic.Int32
	// enqueueDown: Enqueue cannot reach the store; enqueues counts the
	// tries.
	enqueueDown atomic.Bool
	enqueues    atomic.Int32
	// loseAnswers: so many SaveMemory calls are carried out and their
	// answer lost, as when the connection is cut after the commit.
	loseAnswers atomic.Int32
}

// Enqueue cannot reach the store while enqueueDown.
func (s *downStore) Enqueue(ctx context.Context, n domain.Notification) (domain.Notification, error) {
	s.enqueues.Add(1)
	if s.enqueueDown.Load() {
		return domain.Notification{}, errors.New("enqueue notification: FATAL: terminating connection due to administrator command (SQLSTATE 57P01)")
	}
	return s.Store.Enqueue(ctx, n)
}

func (s *downStore) SaveMemory(ctx context.Context, m domain.Memory) (domain.Memory, bool, error) {
	s.tries.Add(1)
	if s.down.Load() {
		return domain.Memory{}, false, errors.New("save memory: failed to connect to `host=127.0.0.1`: connection refused")
	}
	if s.loseAnswers.Add(-1) >= 0 {
		if _, _, err := s.Store.SaveMemory(ctx, m); err != nil {
			return domain.Memory{}, false, err
		}
		return domain.Memory{}, false, errors.New("save memory: unexpected EOF")
	}
	return s.Store.SaveMemory(ctx, m)
}

func newOutageRuntime(t *testing.T, st domain.Store, clk clock.Clock) *plugin.Runtime {
	t.Helper()
	rt := plugin.New(plugin.Options{Logger: quietLogger(), Store: st, Clock: clk, StoreOutageWait: 30 * time.Second})
	create := prefixed("create_task", "create task", func(_ context.Context, c *plugin.Call) (plugin.Result, error) {
		return plugin.Result{Success: true, Text: "Created task #7", TaskNumber: 7}, nil
	})
	pause := prefixed("pause_task", "pause", func(context.Context, *plugin.Call) (plugin.Result, error) {
		return plugin.Result{Error: "Which task?"}, nil // a refusal: to its author only
	})
	if err := rt.Register(&plugin.Plugin{Name: "test", Actions: []plugin.Action{create, pause}}); err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rt
}

// The wait for the store is bounded on the runtime's clock: up to
// StoreOutageWait the message still waits (and is carried out if the
// store answers); at it, it is answered that nothing was done.
func TestStoreOutageWaitIsBoundedOnTheRuntimesClock(t *testing.T) {
	t.Parallel()
	st := &downStore{Store: teststore.SQLite(t)}
	st.down.Store(true)
	clk := clock.NewFake(time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC))
	rt := newOutageRuntime(t, st, clk)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	replies := make(chan plugin.Response, 4)
	done := make(chan error, 1)
	go func() {
		done <- rt.HandleMessage(ctx, plugin.Message{ID: "m1", Platform: "discord", Room: "discord:1", Text: "create task X", DM: true},
			func(_ context.Context, r plugin.Response) error { replies <- r; return nil })
	}()
	start := clk.Now()
	for clk.Now().Sub(start) < 30*time.Second-time.Millisecond {
		if err := clk.BlockUntil(ctx, 1); err != nil {
			t.Fatalf("the message stopped waiting after %s, %d tries", clk.Now().Sub(start), st.tries.Load())
		}
		select {
		case r := <-replies:
			t.Fatalf("answered %q after %s, before the bound", r.Text, clk.Now().Sub(start))
		default:
		}
		clk.Advance(min(250*time.Millisecond, 30*time.Second-time.Millisecond-clk.Now().Sub(start)))
	}
	if n := st.tries.Load(); n < 8 || n > 40 {
		t.Errorf("%d tries in 30 s, want a backoff of a few seconds at most", n)
	}
	if err := clk.BlockUntil(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Millisecond)
	if err := <-done; err != nil {
		t.Fatalf("HandleMessage: %v", err)
	}
	r := <-replies
	if r.Text != "I could not reach my database, so nothing was done: say it again in a minute." || !r.Ephemeral {
		t.Errorf("answer = %+v, want the one sentence, to the author only", r)
	}
	if len(replies) != 0 {
		t.Errorf("more than one answer")
	}
}

// A reply the platform would not take goes to the outbox, under its key,
// as an answer to the message — unless only its author may see it (the
// room would) or the platform says it never can take it there.
func TestFailedReplyIsQueuedInTheOutbox(t *testing.T) {
	t.Parallel()
	st := teststore.SQLite(t)
	rt := newOutageRuntime(t, st, nil)
	ctx := context.Background()
	var queued atomic.Int32
	rt.Subscribe(plugin.ReplyQueued, func(context.Context, plugin.Event) { queued.Add(1) })
	fail := func(err error) plugin.ReplyFunc {
		return func(context.Context, plugin.Response) error { return err }
	}
	serverError := errors.New("discord: reply in 1: HTTP 500 Internal Server Error")

	if err := rt.HandleMessage(ctx, plugin.Message{ID: "m1", Platform: "discord", Room: "discord:1", Text: "create task X", DM: true}, fail(serverError)); err != nil {
		t.Fatalf("HandleMessage with a queued reply: %v", err)
	}
	// Refused: ephemeral (help is), and undeliverable.
	if err := rt.HandleMessage(ctx, plugin.Message{ID: "m2", Platform: "discord", Room: "discord:1", Text: "pause", DM: true}, fail(serverError)); err == nil {
		t.Error("an ephemeral reply that failed was not reported")
	}
	gone := &plugin.UndeliverableError{Err: errors.New("404 Unknown Channel")}
	if err := rt.HandleMessage(ctx, plugin.Message{ID: "m3", Platform: "discord", Room: "discord:1", Text: "create task Y", DM: true}, fail(gone)); err == nil {
		t.Error("an undeliverable reply was not reported")
	}
	ns, err := st.ListNotifications(ctx, "", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(ns) != 1 || ns[0].Category != domain.NotifyReply || ns[0].Room != "discord:1" || ns[0].TaskNumber != 7 || !ns[0].Urgent() {
		t.Fatalf("outbox = %+v, want the one reply to m1", ns)
	}
	var p domain.ReplyPayload
	if err := json.Unmarshal(ns[0].Payload, &p); err != nil {
		t.Fatal(err)
	}
	if p.Text != "Created task #7" || p.ReplyTo != "m1" || p.Key != plugin.ReplyKey(&plugin.Message{ID: "m1", Platform: "discord"}) || p.At.IsZero() {
		t.Errorf("payload = %+v", p)
	}
	if queued.Load() != 1 {
		t.Errorf("%d REPLY_QUEUED events, want 1", queued.Load())
	}
}

// A reply the platform would not take while the store cannot be reached
// either (the platform timing out during a PostgreSQL restart) waits for
// the store, as a message does, and is queued once it answers.
func TestFailedReplyWaitsForTheStoreToBeQueued(t *testing.T) {
	t.Parallel()
	st := &downStore{Store: teststore.SQLite(t)}
	st.enqueueDown.Store(true)
	clk := clock.NewFake(time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC))
	rt := newOutageRuntime(t, st, clk)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	timeout := errors.New("discord: reply in 1: context deadline exceeded (Client.Timeout exceeded while awaiting headers)")
	done := make(chan error, 1)
	go func() {
		done <- rt.HandleMessage(ctx, plugin.Message{ID: "m1", Platform: "discord", Room: "discord:1", Text: "create task X", DM: true},
			func(context.Context, plugin.Response) error { return timeout })
	}()
	for i := range 6 { // 5 s of a store that cannot be reached, then back
		if err := clk.BlockUntil(ctx, 1); err != nil {
			t.Fatalf("the reply stopped waiting for the store after %d tries", st.enqueues.Load())
		}
		if i == 5 {
			st.enqueueDown.Store(false)
		}
		clk.Advance(time.Second)
	}
	clk.Advance(4 * time.Second) // past the longest wait between tries
	if err := <-done; err != nil {
		t.Fatalf("HandleMessage: %v", err)
	}
	ns, err := st.ListNotifications(ctx, "", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(ns) != 1 || ns[0].Category != domain.NotifyReply || ns[0].TaskNumber != 7 {
		t.Fatalf("outbox = %+v, want the one reply to m1", ns)
	}
	if n := st.enqueues.Load(); n < 3 {
		t.Errorf("%d tries to queue the reply, want it tried again while the store was away", n)
	}
}

// A message whose insert committed but whose answer was lost (the
// connection cut after the commit, as the soak's dropped connections do)
// is carried out once when the retry finds its row, not taken for a
// redelivery and dropped without a word; a true redelivery, received
// later, is still ignored.
func TestMessageStoredByALostAnswerIsHandled(t *testing.T) {
	t.Parallel()
	st := &downStore{Store: teststore.SQLite(t)}
	clk := clock.NewFake(time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC))
	rt := newOutageRuntime(t, st, clk)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var creates atomic.Int32
	rt.Subscribe(plugin.ActionCompleted, func(_ context.Context, e plugin.Event) {
		if e.Action == "create_task" {
			creates.Add(1)
		}
	})
	st.loseAnswers.Store(1)
	msg := plugin.Message{ID: "m1", Platform: "discord", Room: "discord:1", AuthorID: "u1", Text: "create task X", DM: true}
	replies := make(chan plugin.Response, 4)
	done := make(chan error, 1)
	go func() {
		done <- rt.HandleMessage(ctx, msg, func(_ context.Context, r plugin.Response) error { replies <- r; return nil })
	}()
	if err := clk.BlockUntil(ctx, 1); err != nil { // the wait before the second attempt
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if err := <-done; err != nil {
		t.Fatalf("HandleMessage: %v", err)
	}
	select {
	case r := <-replies:
		if r.Text != "Created task #7" {
			t.Fatalf("answer = %q, want the task created", r.Text)
		}
	default:
		t.Fatal("the message was taken for a redelivery: no answer, nothing done")
	}
	// The platform delivers it again, a minute later.
	clk.Advance(time.Minute)
	redelivered := msg
	redelivered.Time = time.Time{}
	if err := rt.HandleMessage(ctx, redelivered, func(_ context.Context, r plugin.Response) error { replies <- r; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(replies) != 0 || creates.Load() != 1 {
		t.Errorf("the redelivery was acted on: %d more answers, %d creations", len(replies), creates.Load())
	}
}

// A message the platform delivers again until it is acknowledged
// (ReceiveOptions.Redelivered) waits for the store only for its window:
// then Receive says it is not stored, nothing is answered, and nothing of
// it is held — the platform's redelivery, to this process, once the store
// answers, is stored and handled.
func TestRedeliveredMessageNotStoredIsLeftToTheRedelivery(t *testing.T) {
	t.Parallel()
	st := &downStore{Store: teststore.SQLite(t)}
	st.down.Store(true)
	clk := clock.NewFake(time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC))
	rt := newOutageRuntime(t, st, clk)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	msg := plugin.Message{ID: "m1", Platform: "slack", Room: "slack:C1", Text: "create task X", DM: true}
	window := plugin.ReceiveOptions{Wait: 2 * time.Second, Redelivered: true}

	type received struct {
		r   *plugin.Received
		err error
	}
	done := make(chan received, 1)
	go func() {
		r, err := rt.Receive(ctx, msg, window)
		done <- received{r, err}
	}()
	var got received
	for waiting := true; waiting; {
		select {
		case got = <-done:
			waiting = false
		case <-ctx.Done():
			t.Fatal("Receive never returned")
		default:
			if clk.Waiters() > 0 {
				clk.Advance(250 * time.Millisecond)
			}
			time.Sleep(time.Millisecond) // polling the receipt's goroutine, not timing it
		}
	}
	if !errors.Is(got.err, plugin.ErrNotStored) || got.r == nil || got.r.Stored() {
		t.Fatalf("Receive during the outage: %+v, %v; want ErrNotStored", got.r, got.err)
	}
	if waited := clk.Now().Sub(time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)); waited > 3*time.Second {
		t.Errorf("waited %s for the store, want the window (2 s)", waited)
	}
	var replies []plugin.Response
	reply := func(_ context.Context, r plugin.Response) error { replies = append(replies, r); return nil }
	if err := got.r.Handle(ctx, reply); err != nil || len(replies) != 0 {
		t.Fatalf("Handle of a message not stored: %v, %+v; want nothing said", err, replies)
	}

	st.down.Store(false)
	again, err := rt.Receive(ctx, msg, window)
	if err != nil || !again.Stored() {
		t.Fatalf("the redelivery: %v, stored %v; want it stored", err, again != nil && again.Stored())
	}
	if err := again.Handle(ctx, reply); err != nil {
		t.Fatal(err)
	}
	if len(replies) != 1 || replies[0].Text != "Created task #7" {
		t.Errorf("replies = %+v, want the task created once", replies)
	}
}

// A reply is in the outbox while its direct send is in flight, due only a
// minute later: a replica killed mid-send (a platform hanging up to the
// client's timeout, as the soak saw) leaves it to the others, who send it
// under its key. A send that succeeds drops the row; one that fails makes
// it due at once.
func TestReplyIsInTheOutboxWhileItIsSent(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		sendErr error
		due     time.Duration // after the failed send
	}{
		{"sent", nil, 0},
		{"failed", errors.New("discord: reply in 1: HTTP 500 Internal Server Error"), 0},
		// The outbox's pacer never saw this 429: a row due at once
		// would be sent into the same limit and earn another.
		{"rate limited", &plugin.RateLimitedError{RetryAfter: 3 * time.Second, Err: errors.New("discord: reply in 1: HTTP 429")}, 3 * time.Second},
		// Held back by the pacer, which wakes the outbox when the room
		// has room: due then, not a second later.
		{"paced", fmt.Errorf("discord: reply in 1: %w", &plugin.RateLimitedError{RetryAfter: 300 * time.Millisecond,
			Until: time.Date(2026, 8, 1, 9, 0, 0, 300_000_000, time.UTC), Err: plugin.ErrPaced}), 300 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := &downStore{Store: teststore.SQLite(t)}
			clk := clock.NewFake(time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC))
			rt := newOutageRuntime(t, st, clk)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			sending := make(chan plugin.Response, 1)
			release := make(chan struct{})
			done := make(chan error, 1)
			go func() {
				done <- rt.HandleMessage(ctx, plugin.Message{ID: "m1", Platform: "discord", Room: "discord:1", Text: "create task X", DM: true},
					func(_ context.Context, resp plugin.Response) error {
						sending <- resp
						<-release
						return c.sendErr
					})
			}()
			var resp plugin.Response
			select {
			case resp = <-sending:
			case <-ctx.Done():
				t.Fatal("no reply was sent")
			}
			ns, err := st.ListNotifications(ctx, "", 0, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(ns) != 1 || ns[0].Category != domain.NotifyReply || !ns[0].NextAttemptAt.Equal(clk.Now().Add(time.Minute)) {
				t.Fatalf("outbox while the reply is sent = %+v, want the reply, due in a minute", ns)
			}
			var p domain.ReplyPayload
			if err := json.Unmarshal(ns[0].Payload, &p); err != nil || p.Key != resp.Key || p.Text != resp.Text || p.ReplyTo != "m1" {
				t.Fatalf("queued reply = %+v (%v), want %q under key %q", p, err, resp.Text, resp.Key)
			}
			close(release)
			if err := <-done; err != nil {
				t.Fatalf("HandleMessage: %v", err)
			}
			ns, err = st.ListNotifications(ctx, "", 0, 10)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case c.sendErr == nil && len(ns) != 0:
				t.Fatalf("outbox after the reply was sent = %+v, want it empty", ns)
			case c.sendErr != nil && (len(ns) != 1 || !ns[0].NextAttemptAt.Equal(clk.Now().Add(c.due))):
				t.Fatalf("outbox after the send failed = %+v, want the reply due in %s", ns, c.due)
			}
		})
	}
}
