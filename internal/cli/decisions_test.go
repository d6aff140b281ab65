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
	"github.com/taskloom/taskloom/internal/cli"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/plugin"
)

// TestAnswerApproveDenyRetry drives the commands of PRODUCT §7 and §9
// against the real API: what a task waits on shows in list and show, and
// answer, approve, deny and retry change it — or, refused, print the
// API's sentence and exit 1.
func TestAnswerApproveDenyRetry(t *testing.T) {
	model := testkit.NewScriptedModel().
		Decide("ask_user", map[string]string{"question": "Which database should the service use?"}, 10, "continue").
		Decide("http_get", map[string]string{"url": "https://example.com/status"}, 10, "continue").
		Decide("http_get", map[string]string{"url": "https://example.com/admin"}, 10, "continue")
	s := newServer(t, model, "")
	for _, goal := range []string{"Pick a database", "Check the status page", "Check the admin page"} {
		if _, err := s.tasks.Create(s.ctx, plugin.NewTask{Goal: goal, RequestorID: "u1", Platform: "console", RoomID: "console", Actor: "u1", Now: t0}); err != nil {
			t.Fatal(err)
		}
		s.step() // the new task, the only one the queue may serve: it waits
	}

	tests := []struct {
		name string
		args []string
		code int
		out  []string // substrings of stdout (exit 0) or stderr (otherwise)
	}{
		{"list says what each waits for", []string{"list"}, 0, []string{"waiting for an answer", "waiting for an approval"}},
		{"show a task waiting on an answer", []string{"show", "1"}, 0, []string{`Task #1 "Pick a database" — waiting for an answer`, "Waiting on:    an answer"}},
		{"show the call a task waits to make", []string{"show", "2"}, 0, []string{
			"Waiting on:    an approval",
			`Tool call:     http_get {"url":"https://example.com/status"} — awaits a decision: taskloom tasks approve 2 (or deny 2)`,
			"budget 1000000"}},
		{"answer a task not waiting on one", []string{"answer", "2", "PostgreSQL"}, 1, []string{"not waiting for an answer"}},
		{"answer without an answer", []string{"answer", "1"}, 2, []string{"answer takes a task number and the answer"}},
		{"answer", []string{"answer", "#1", "PostgreSQL,", "please"}, 0, []string{`Answered task #1 "Pick a database"; it is queued.`}},
		{"its event", []string{"events", "1"}, 0, []string{"answered   by api: PostgreSQL, please"}},
		{"answer it again", []string{"answer", "1", "MySQL"}, 1, []string{"not waiting for an answer"}},
		{"approve a task not waiting on one", []string{"approve", "1"}, 1, []string{"not waiting for an approval"}},
		{"approve", []string{"approve", "2"}, 0, []string{`Approved http_get {"url":"https://example.com/status"} for task #2 "Check the status page"; it is queued.`}},
		{"show the approved call", []string{"show", "2"}, 0, []string{"approved; it runs at the next iteration"}},
		{"deny an approved call", []string{"deny", "2"}, 1, []string{"not waiting for an approval"}},
		{"deny, with a reason after --", []string{"deny", "3", "--", "--force", "and", "-f", "are", "not", "for", "tasks"}, 0,
			[]string{`Denied the tool call of task #3 "Check the admin page"; it is queued and decides anew.`}},
		{"the denial's event", []string{"events", "3"}, 0, []string{"asks approval: http_get {\"url\":\"https://example.com/admin\"}", "denied     by api: --force and -f are not for tasks"}},
		{"deny without a number", []string{"deny"}, 2, []string{"deny takes a task number and, if you like, a reason"}},
		{"retry a task that has not ended", []string{"retry", "1"}, 1, []string{"has not ended"}},
		{"create with a budget", []string{"create", "Write the release notes", "--max-tokens", "5000", "--json"}, 0, []string{`"max_tokens": 5000`, `"number": 4`}},
		{"create with a negative budget", []string{"create", "x", "--max-tokens", "-5"}, 1, []string{"max_tokens"}},
		{"cancel it", []string{"cancel", "4"}, 0, []string{"is canceled."}},
		{"retry", []string{"retry", "4", "use", "the", "changelog"}, 0, []string{
			`Created task #5 "Write the release notes", continuing #4 with its files (queued).`,
			"Follow it with: taskloom tasks events 5 --follow"}},
		{"show the retry", []string{"show", "5"}, 0, []string{"Continues:     #4"}},
		{"retry as JSON", []string{"retry", "4", "--json"}, 0, []string{`"continues_number": 4`, `"number": 6`}},
		{"retry an unknown task", []string{"retry", "99"}, 1, []string{"there is no task #99"}},
		{"retry without a number", []string{"retry"}, 2, []string{"retry takes a task number"}},
		{"help lists them", []string{"help"}, 0, []string{"answer N TEXT...", "approve N", "deny N [REASON...]", "retry N [CONTEXT...]", "--max-tokens"}},
	}
	for _, tc := range tests {
		code, out, errOut := run(t, s.env, tc.args...)
		if code != tc.code {
			t.Errorf("%s: taskloom tasks %q = %d, want %d\nstdout: %s\nstderr: %s", tc.name, tc.args, code, tc.code, out, errOut)
			continue
		}
		text := out
		if code != 0 {
			text = errOut
		}
		for _, want := range tc.out {
			if !strings.Contains(text, want) {
				t.Errorf("%s: output lacks %q:\n%s", tc.name, want, text)
			}
		}
	}
	if got := mustTask(t, s, 2); got.Status != plugin.StatusQueued || !got.ApprovalGranted {
		t.Errorf("#2 after approve: %s, granted %v", got.Status, got.ApprovalGranted)
	}
	if got := mustTask(t, s, 5); got.ContinuesNumber != 4 || got.MaxTokens != 1_000_000 {
		t.Errorf("#5: continues #%d with a budget of %d", got.ContinuesNumber, got.MaxTokens)
	}
}

func mustTask(t *testing.T, s *server, n int64) plugin.Task {
	t.Helper()
	task, err := s.store.GetTask(s.ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

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
	if _, err := s.tasks.Create(s.ctx, plugin.NewTask{Goal: "Write the notes", RequestorID: "u1", Actor: "u1", Now: t0}); err != nil {
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
	if _, err := s.tasks.Create(s.ctx, plugin.NewTask{Goal: "Write the notes", RequestorID: "u1", Actor: "u1", Now: t0}); err != nil {
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
