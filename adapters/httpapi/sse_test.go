package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/taskloom/taskloom/adapters/httpapi"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// wait bounds how long a test waits for a real goroutine or socket.
const wait = 10 * time.Second

// frame is one Server-Sent Events message, or a comment.
type frame struct {
	id, event, data, comment string
}

type stream struct {
	t      *testing.T
	resp   *http.Response
	cancel context.CancelFunc
	frames chan frame
}

// openStream connects to /api/events and reads its frames in the
// background.
func openStream(t *testing.T, base, query string, header ...string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/api/events"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s := &stream{t: t, resp: resp, cancel: cancel, frames: make(chan frame, 100)}
	t.Cleanup(s.close)
	if resp.StatusCode != 200 {
		return s
	}
	go func() {
		defer close(s.frames)
		r := bufio.NewReader(resp.Body)
		var f frame
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case line == "":
				s.frames <- f
				f = frame{}
			case strings.HasPrefix(line, ":"):
				f.comment = strings.TrimSpace(line[1:])
			case strings.HasPrefix(line, "id: "):
				f.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				f.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				f.data = line[6:]
			}
		}
	}()
	return s
}

func (s *stream) close() {
	s.cancel()
	s.resp.Body.Close()
}

// next returns the next frame that is not a bare cursor move.
func (s *stream) next() frame {
	s.t.Helper()
	for {
		select {
		case f, ok := <-s.frames:
			if !ok {
				s.t.Fatal("the stream ended")
			}
			if f.data == "" && f.event == "" && f.comment == "skipped events of other tasks" {
				continue
			}
			return f
		case <-time.After(wait):
			s.t.Fatal("no event within the wait")
		}
	}
}

// event returns the next task event.
func (s *stream) event() map[string]any {
	s.t.Helper()
	f := s.next()
	var ev map[string]any
	if err := json.Unmarshal([]byte(f.data), &ev); err != nil || f.event != "" {
		s.t.Fatalf("frame %+v is not a task event: %v", f, err)
	}
	if f.id != fmt.Sprint(ev["id"]) {
		s.t.Fatalf("frame id %q, event id %v", f.id, ev["id"])
	}
	return ev
}

func (s *stream) ready() string {
	s.t.Helper()
	f := s.next()
	if f.event != "ready" {
		s.t.Fatalf("first frame = %+v, want ready", f)
	}
	return f.id
}

func describe(ev map[string]any) string {
	return fmt.Sprintf("#%v %v", ev["task_number"], ev["type"])
}

func TestEventStreamResumesWithLastEventID(t *testing.T) {
	f := newFixture(t, teststore.SQLite)
	ts := httptest.NewServer(f.srv)
	t.Cleanup(ts.Close)
	f.create("first") // event 1, before anyone listens

	s := openStream(t, ts.URL, "")
	if id := s.ready(); id != "1" {
		t.Fatalf("a stream without a cursor starts at %s, want the latest event, 1", id)
	}
	if r := f.do("POST", "/api/tasks/1/pause", nil); r.code != 200 {
		t.Fatal(r.raw)
	}
	ev := s.event()
	if describe(ev) != "#1 paused" || ev["id"] != 2.0 || ev["sequence"] != 2.0 || ev["actor"] != "api" {
		t.Fatalf("event = %v", ev)
	}
	s.close()

	// Missed while disconnected.
	f.do("POST", "/api/tasks/1/resume", nil)
	f.do("POST", "/api/tasks", body(`{"goal": "second"}`))
	f.do("POST", "/api/tasks/1/cancel", nil)

	s = openStream(t, ts.URL, "", "Last-Event-ID", "2")
	if id := s.ready(); id != "2" {
		t.Fatalf("ready id = %s", id)
	}
	var got []string
	for range 3 {
		got = append(got, describe(s.event()))
	}
	if strings.Join(got, ", ") != "#1 resumed, #2 created, #1 canceled" {
		t.Fatalf("replayed %v", got)
	}

	// ?after= is the same cursor for clients that cannot set headers.
	s2 := openStream(t, ts.URL, "?after=4")
	s2.ready()
	if ev := s2.event(); describe(ev) != "#1 canceled" {
		t.Fatalf("after=4 gave %v", ev)
	}
}

func TestEventStreamFiltersByTask(t *testing.T) {
	f := newFixture(t, teststore.SQLite)
	ts := httptest.NewServer(f.srv)
	t.Cleanup(ts.Close)
	f.create("one")
	f.create("two")
	s := openStream(t, ts.URL, "?task=2&after=0")
	s.ready()
	if ev := s.event(); describe(ev) != "#2 created" {
		t.Fatalf("event = %v", ev)
	}
	f.do("POST", "/api/tasks/1/pause", nil)
	f.do("POST", "/api/tasks/2/pause", nil)
	if ev := s.event(); describe(ev) != "#2 paused" {
		t.Fatalf("event = %v", ev)
	}
}

// A change this process did not make (another replica's) is found by
// polling on the clock; an idle stream sends keep-alive comments.
func TestEventStreamPollsAndKeepsAlive(t *testing.T) {
	f := newFixture(t, teststore.SQLite, func(o *httpapi.APIOptions) {
		o.Runtime = nil // nothing wakes it: only the poll finds changes
		o.Poll = 2 * time.Second
		o.KeepAlive = 15 * time.Second
	})
	ts := httptest.NewServer(f.srv)
	t.Cleanup(ts.Close)
	s := openStream(t, ts.URL, "")
	if id := s.ready(); id != "0" {
		t.Fatalf("ready id on an empty log = %s", id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := f.clk.BlockUntil(ctx, 2); err != nil { // the poll and the keep-alive timers
		t.Fatal(err)
	}
	f.create("made elsewhere")
	select {
	case fr := <-s.frames:
		t.Fatalf("got %+v before the poll", fr)
	default:
	}
	f.clk.Advance(2 * time.Second)
	if ev := s.event(); describe(ev) != "#1 created" {
		t.Fatalf("event = %v", ev)
	}
	for f.clk.Now().Before(t0.Add(15 * time.Second)) {
		if err := f.clk.BlockUntil(ctx, 2); err != nil {
			t.Fatal(err)
		}
		f.clk.Advance(time.Second)
	}
	if fr := s.next(); fr.comment != "keep-alive" || fr.data != "" {
		t.Fatalf("frame = %+v, want a keep-alive comment", fr)
	}
}

func TestEventStreamRefusesBadCursors(t *testing.T) {
	f := newFixture(t, teststore.SQLite)
	for _, tc := range []struct{ query, header string }{{"?after=x", ""}, {"", "-3"}, {"?task=0", ""}} {
		var hdr []string
		if tc.header != "" {
			hdr = []string{"Last-Event-ID", tc.header}
		}
		if r := f.do("GET", "/api/events"+tc.query, nil, hdr...); r.code != 400 || r.body["error"] == nil {
			t.Errorf("%q %q = %d %s", tc.query, tc.header, r.code, r.raw)
		}
	}
}

// A stream without a cursor starts at the latest event, however many
// there are; the search for it must not miss by one.
func TestEventStreamStartsAtTheLatestEvent(t *testing.T) {
	f := newFixture(t, teststore.SQLite)
	ts := httptest.NewServer(f.srv)
	t.Cleanup(ts.Close)
	made := 0
	for _, want := range []int{0, 1, 2, 3, 63, 64, 65, 66, 129, 200} {
		for made < want {
			if _, err := f.store.CreateTask(f.ctx, domain.NewTask{Goal: "g", Now: t0}); err != nil {
				t.Fatal(err)
			}
			made++
		}
		// A fresh API has no hint where the log ends.
		srv := httpapi.New(nil, nil)
		httpapi.NewAPI(httpapi.APIOptions{Store: f.store, Tasks: f.tasks, Clock: f.clk}).Mount(srv)
		fresh := httptest.NewServer(srv)
		s := openStream(t, fresh.URL, "")
		if id := s.ready(); id != fmt.Sprint(want) {
			t.Errorf("with %d events the stream starts at %s", want, id)
		}
		s.close()
		fresh.Close()
	}
}

// Close ends open streams, so a server's Shutdown is not held up by them.
func TestCloseEndsStreams(t *testing.T) {
	f := newFixture(t, teststore.SQLite)
	ts := httptest.NewServer(f.srv)
	t.Cleanup(ts.Close)
	s := openStream(t, ts.URL, "")
	s.ready()
	f.api.Close()
	select {
	case fr, ok := <-s.frames:
		if ok {
			t.Fatalf("got %+v after Close", fr)
		}
	case <-time.After(wait):
		t.Fatal("the stream is still open after Close")
	}
}

// At most MaxStreams streams are open at once: one more gets 503 with
// Retry-After and an {"error"} body, and a slot is free again as soon as a
// stream ends.
func TestEventStreamCap(t *testing.T) {
	f := newFixture(t, teststore.SQLite, func(o *httpapi.APIOptions) { o.MaxStreams = 2 })
	closed := make(chan struct{}, 16)
	ts := httptest.NewUnstartedServer(f.srv)
	ts.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateClosed {
			closed <- struct{}{} // after its handler returned
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)

	first, second := openStream(t, ts.URL, ""), openStream(t, ts.URL, "")
	first.ready()
	second.ready()
	over := openStream(t, ts.URL, "")
	if over.resp.StatusCode != http.StatusServiceUnavailable || over.resp.Header.Get("Retry-After") != "5" {
		t.Fatalf("a third stream = %d, Retry-After %q; want 503 and 5", over.resp.StatusCode, over.resp.Header.Get("Retry-After"))
	}
	var e struct{ Error string }
	if err := json.NewDecoder(over.resp.Body).Decode(&e); err != nil || !strings.Contains(e.Error, "2 event streams are open") {
		t.Fatalf("503 body: %q, %v", e.Error, err)
	}

	first.close()
	select {
	case <-closed:
	case <-time.After(wait):
		t.Fatal("the server did not end the closed stream")
	}
	third := openStream(t, ts.URL, "")
	third.ready()
	f.create("seen by the streams still open")
	for _, s := range []*stream{second, third} {
		if ev := s.event(); ev["type"] != "created" {
			t.Fatalf("event = %v", ev)
		}
	}
}

// pipeListener hands out net.Pipe connections, so that a real http.Server
// and http.Transport talk inside a synctest bubble: time there is fake,
// and the server's deadlines fire as soon as everything waits on them.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// An event stream on the service's real http.Server outlives the
// server's read, write and idle timeouts; a client that stops reading
// loses its stream once one message has waited StreamWriteTimeout, and
// its slot with it.
func TestEventStreamOutlivesServerTimeouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, teststore.SQLite, func(o *httpapi.APIOptions) { o.MaxStreams = 1 })
		ln := newPipeListener()
		hs := f.srv.HTTPServer()
		served := make(chan error, 1)
		go func() { served <- hs.Serve(ln) }()
		tr := &http.Transport{DialContext: ln.dial}
		client := &http.Client{Transport: tr}
		defer func() {
			tr.CloseIdleConnections()
			hs.Close()
			<-served
		}()

		open := func() (*http.Response, *bufio.Reader) {
			t.Helper()
			resp, err := client.Get("http://127.0.0.1:8080/api/events")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { resp.Body.Close() })
			return resp, bufio.NewReader(resp.Body)
		}
		// message reads one SSE message, blank line included.
		message := func(r *bufio.Reader) string {
			t.Helper()
			var b strings.Builder
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					t.Fatalf("the stream ended after %q: %v", b.String(), err)
				}
				if line == "\n" {
					return b.String()
				}
				b.WriteString(line)
			}
		}

		resp, r := open()
		if resp.StatusCode != 200 || !strings.Contains(message(r), "event: ready") {
			t.Fatalf("stream = %d", resp.StatusCode)
		}
		time.Sleep(2 * max(httpapi.ReadTimeout, httpapi.WriteTimeout, httpapi.IdleTimeout))
		f.create("written long after the server's timeouts")
		if m := message(r); !strings.Contains(m, `"type":"created"`) {
			t.Fatalf("after the timeouts the stream sent %q", m)
		}

		// The stream holds the only slot.
		if refused, _ := open(); refused.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("a second stream = %d, want 503", refused.StatusCode)
		}
		// Stop reading: the next message cannot be written.
		f.create("written to nobody")
		time.Sleep(httpapi.StreamWriteTimeout + time.Second)
		if again, r := open(); again.StatusCode != 200 || !strings.Contains(message(r), "event: ready") {
			t.Fatalf("after the stuck stream was dropped a new one = %d, want 200", again.StatusCode)
		}
	})
}
