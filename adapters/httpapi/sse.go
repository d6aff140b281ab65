package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// eventBatch is how many events one store read takes.
const eventBatch = 200

// DefaultMaxStreams is how many event streams a server keeps open at once
// unless APIOptions.MaxStreams says otherwise. Each holds a goroutine and
// polls the store; a dashboard tab holds one.
const DefaultMaxStreams = 64

// streamRetryAfter is when a client refused a stream may try again.
const streamRetryAfter = 5 * time.Second

// events streams the global event log as Server-Sent Events.
//
// Each task event is one SSE message whose id is the event's global ID
// and whose data is the event as GET /api/tasks/{number}/events shows it.
// A client that reconnects with Last-Event-ID (or ?after=) gets every event
// after that one, so nothing is lost across a dropped connection. Without
// either it starts at the present. The first message of every connection
// is an "event: ready" whose id is where the stream starts: a client loads
// the tasks after it and misses nothing. ?task=N keeps only that task's
// events. Comments (": keep-alive") keep idle connections open.
//
// The stream is woken at once by this process's task changes and looks
// for other replicas' every Poll.
//
// At most MaxStreams streams are open at once, and one client (see
// streamClient) holds at most MaxStreamsPerClient of them, one address at
// most half of MaxStreams whatever requestors it names; past that a
// client gets 503 (the server is full) or 429 (its share is), with
// Retry-After, before anything is read from the store.
func (a *API) events(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	client := streamClient(r)
	release, refused := a.streams.take(client, a.o.MaxStreams, a.o.MaxStreamsPerClient)
	switch refused {
	case slotServerFull:
		a.log.Warn("event stream refused: too many open", "max", a.o.MaxStreams, "remote", r.RemoteAddr)
		w.Header().Set("Retry-After", strconv.Itoa(int(streamRetryAfter/time.Second)))
		writeError(w, http.StatusServiceUnavailable,
			fmt.Sprintf("%d event streams are open, the most this server keeps: try again in a few seconds", a.o.MaxStreams))
		return
	case slotClientFull:
		a.log.Warn("event stream refused: the client holds its share", "per_client", a.o.MaxStreamsPerClient, "client", client)
		w.Header().Set("Retry-After", strconv.Itoa(int(streamRetryAfter/time.Second)))
		writeError(w, http.StatusTooManyRequests,
			fmt.Sprintf("you have %d event streams open, the most one client may: close one (a tab of the dashboard) and try again", a.o.MaxStreamsPerClient))
		return
	case slotHostFull:
		n := hostShare(a.o.MaxStreams, a.o.MaxStreamsPerClient)
		a.log.Warn("event stream refused: the address holds its share", "per_address", n, "remote", r.RemoteAddr)
		w.Header().Set("Retry-After", strconv.Itoa(int(streamRetryAfter/time.Second)))
		writeError(w, http.StatusTooManyRequests,
			fmt.Sprintf("%d event streams are open from your address, the most one address may, whatever requestors it names: close one and try again", n))
		return
	}
	defer release()
	var task int64
	if v := r.URL.Query().Get("task"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("task=%q is not a task number", v))
			return
		}
		task = n
	}
	cursor := strings.TrimSpace(r.Header.Get("Last-Event-ID"))
	if cursor == "" {
		cursor = r.URL.Query().Get("after")
	}
	var after int64
	if cursor != "" {
		n, err := strconv.ParseInt(cursor, 10, 64)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("event ID %q is not one this server sent", cursor))
			return
		}
		after = n
	} else {
		head, err := a.head(ctx)
		if err != nil {
			a.fail(w, r, fmt.Errorf("find the latest event: %w", err))
			return
		}
		after = head
	}

	// The server's WriteTimeout bounds a whole answer; a stream lasts as
	// long as its client listens. So each message gets a write deadline of
	// its own in send, which replaces the server's. (The ReadTimeout needs
	// nothing: net/http lifts the read deadline once the request is read,
	// TestEventStreamOutlivesServerTimeouts checks it.) The deadline is
	// the connection's: wall-clock time, not a.clk's. ResponseRecorder has
	// none; the error is ignored.
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	send := func(s string) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(StreamWriteTimeout))
		if _, err := fmt.Fprint(w, s); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send(fmt.Sprintf("retry: 2000\nevent: ready\nid: %d\ndata: {\"after\":%d}\n\n", after, after)) {
		return
	}

	keepAlive := a.clk.NewTimer(a.o.KeepAlive)
	defer func() { keepAlive.Stop() }()
	for {
		select {
		case <-a.done:
			return
		default:
		}
		wake := a.bell.C() // before reading, so a change after the read still wakes us
		evs, err := a.store.EventsSince(ctx, after, eventBatch)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			a.log.Warn("event stream: read events", "after", after, "err", err)
		}
		var b strings.Builder
		for _, e := range evs {
			after = e.ID
			if task != 0 && e.TaskNumber != task {
				continue
			}
			raw, err := json.Marshal(eventOf(e))
			if err != nil {
				a.log.Error("event stream: encode event", "id", e.ID, "err", err)
				continue
			}
			fmt.Fprintf(&b, "id: %d\ndata: %s\n\n", e.ID, raw)
		}
		if len(evs) > 0 {
			a.hint.see(after)
			if b.Len() == 0 {
				// Only other tasks' events: still move the client's
				// cursor, so a reconnect does not read them again.
				fmt.Fprintf(&b, "id: %d\n: skipped events of other tasks\n\n", after)
			}
			if !send(b.String()) {
				return
			}
			if len(evs) == eventBatch {
				continue // more are waiting
			}
		}
		poll := a.clk.NewTimer(a.o.Poll)
		select {
		case <-ctx.Done():
			poll.Stop()
			return
		case <-a.done:
			poll.Stop()
			return
		case <-wake:
		case <-poll.C():
		case <-keepAlive.C():
			if !send(": keep-alive\n\n") {
				poll.Stop()
				return
			}
			keepAlive = a.clk.NewTimer(a.o.KeepAlive)
		}
		poll.Stop()
	}
}

// head finds the ID of the latest event, where a stream without a cursor
// starts, searching up from the latest ID this process has seen.
func (a *API) head(ctx context.Context) (int64, error) {
	id, err := domain.LatestEventID(ctx, a.store, a.hint.get())
	if err != nil {
		return 0, err
	}
	a.hint.see(id)
	return id, nil
}

// hint remembers the highest event ID seen, where the next head search
// starts.
type hint struct{ v atomic.Int64 }

func (h *hint) get() int64 { return h.v.Load() }
func (h *hint) see(id int64) {
	for {
		cur := h.v.Load()
		if id <= cur || h.v.CompareAndSwap(cur, id) {
			return
		}
	}
}

// bell wakes every waiting stream at once: C returns a channel that Ring
// closes.
type bell struct {
	mu sync.Mutex
	ch chan struct{}
}

func newBell() *bell { return &bell{ch: make(chan struct{})} }

func (b *bell) C() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ch
}

func (b *bell) Ring() {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(b.ch)
	b.ch = make(chan struct{})
}
