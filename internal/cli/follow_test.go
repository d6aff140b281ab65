package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/httpapi"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/cli"
	"github.com/taskloom/taskloom/internal/testkit"
)

// occupy opens an event stream and holds it until the returned func is
// called: with MaxStreams 1, the server has room for no other.
func occupy(t *testing.T, s *server) (release func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", s.url+"/api/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the stream that takes the only slot: %v %v", resp, err)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			cancel()
			resp.Body.Close()
		})
	}
	t.Cleanup(release)
	return release
}

// TestFollowWaitsForRoomForAStream: a server with no room for another
// event stream answers 503 with Retry-After; --follow waits that long,
// says so on stderr, and follows the task once a slot frees.
func TestFollowWaitsForRoomForAStream(t *testing.T) {
	s := newServer(t, testkit.NewScriptedModel().Decide("", nil, 100, "done"), "", func(o *httpapi.APIOptions) { o.MaxStreams = 1 })
	if _, err := s.tasks.Create(s.ctx, domain.NewTask{Goal: "Write the notes", RequestorID: "u1", Actor: "u1", Now: t0}); err != nil {
		t.Fatal(err)
	}
	release := occupy(t, s)
	var (
		mu    sync.Mutex
		waits []time.Duration
	)
	defer cli.SetSleep(func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		release() // a slot frees while the client waits
		time.Sleep(20 * time.Millisecond)
		return ctx.Err()
	})()

	out, errOut := newSyncBuffer(), newSyncBuffer()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- cli.Run(ctx, []string{"events", "1", "--follow"}, s.env, out, errOut) }()
	// A failed test still ends the client, whose stream would hold the
	// server's Close up.
	defer func() {
		cancel()
		<-done
	}()
	errOut.waitFor(t, "event streams are open")
	errOut.waitFor(t, "(trying again in 5s)")
	s.step() // done: the stream brings it, or the reconnect finds it
	select {
	case code := <-done:
		done <- code // for the deferred wait
		if code != 0 {
			t.Fatalf("follow exited %d\nstdout: %s\nstderr: %s", code, out.String(), errOut.String())
		}
	case <-time.After(wait):
		t.Fatalf("follow did not end\nstdout: %s\nstderr: %s", out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "✅ Task #1 completed") {
		t.Errorf("follow output:\n%s", out.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(waits) == 0 || waits[0] != 5*time.Second {
		t.Errorf("waits = %v; want the server's Retry-After, 5s, first", waits)
	}
}

// TestFollowGivesUpWhenNoStreamFrees: 503 after 503, --follow gives up
// after a bounded number of waits, with the server's sentence, exit 1.
func TestFollowGivesUpWhenNoStreamFrees(t *testing.T) {
	s := newServer(t, testkit.NewScriptedModel(), "", func(o *httpapi.APIOptions) { o.MaxStreams = 1 })
	if _, err := s.tasks.Create(s.ctx, domain.NewTask{Goal: "Write the notes", RequestorID: "u1", Actor: "u1", Now: t0}); err != nil {
		t.Fatal(err)
	}
	occupy(t, s)
	var waits int
	defer cli.SetSleep(func(ctx context.Context, d time.Duration) error {
		waits++
		return ctx.Err()
	})()
	var out, errOut bytes.Buffer
	code := cli.Run(context.Background(), []string{"events", "1", "--follow"}, s.env, &out, &errOut)
	if code != cli.ExitAPI || !strings.Contains(errOut.String(), "refused the event stream 11 times in a row") ||
		!strings.Contains(errOut.String(), "event streams are open") {
		t.Fatalf("= %d\nstdout: %s\nstderr: %s", code, out.String(), errOut.String())
	}
	if waits != 10 {
		t.Errorf("waited %d times, want 10", waits)
	}
}
