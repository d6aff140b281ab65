package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// FuzzAPIRequests sends the API any method, path under /api/ and body,
// on a store holding one task (#1, queued), and holds what docs/api.md asks of
// bad input: an answer below 500, a JSON body with an "error" sentence for
// every 4xx, and nothing changed — no task, no event — by a request
// refused or by a GET.
func FuzzAPIRequests(f *testing.F) {
	for _, seed := range []struct {
		method     uint8
		path, body string
	}{
		{1, "tasks", `{"goal":"Build auth"}`},
		{1, "tasks", `{"goal":""}`},
		{1, "tasks", `{"goal":"x","strategy":"nope","max_tokens":-5}`},
		{1, "tasks", `{"goal":"x","max_iterations":1e99}`},
		{1, "tasks", `[`},
		{1, "tasks/1/answer", `{"text":5}`},
		{1, "tasks/1/pause", ``},
		{1, "tasks/1/resume", `{}`},
		{1, "tasks/1/cancel", `null`},
		{1, "tasks/1/retry", `{"context":[]}`},
		{1, "tasks/1/deny", `{"reason":"` + strings.Repeat("é", 3000) + `"}`},
		{1, "tasks/99999999999999999999/approve", `{}`},
		{0, "tasks?status=bogus&limit=-1&after=x", ``},
		{0, "tasks/1/files/../../etc/passwd", ``},
		{0, "tasks/-1/events?after=1e3", ``},
		{1, "notifications/abc/retry", `{}`},
		{3, "tasks/1", ``},
		{6, "tasks", ``},
	} {
		f.Add(seed.method, seed.path, seed.body)
	}
	methods := []string{"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"}
	f.Fuzz(func(t *testing.T, m uint8, p, body string) {
		method := methods[int(m)%len(methods)]
		target := "/api/" + p
		if strings.ContainsAny(target, " \t\r\n#") || !strings.HasPrefix(target, "/api/") {
			t.Skip("not a request line a client can send")
		}
		if u, err := http.NewRequest(method, "http://localhost"+target, nil); err != nil ||
			((method == "GET" || method == "HEAD") && path.Clean(u.URL.Path) == "/api/events") {
			t.Skip("not a URL, or the event stream, which answers as it goes")
		}
		fx := newFixture(t, teststore.SQLite)
		fx.create("Build auth")
		before := snapshot(t, fx)

		req := httptest.NewRequest(method, target, strings.NewReader(body))
		req.Host = "localhost"
		req.Header.Set("Content-Type", "application/json")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rec := httptest.NewRecorder()
		fx.srv.ServeHTTP(rec, req.WithContext(ctx))
		if ctx.Err() != nil {
			t.Fatalf("%s %s: no answer within 10 s", method, target)
		}
		code := rec.Code
		if code >= 500 {
			t.Fatalf("%s %s %q: %d %s", method, target, body, code, rec.Body.String())
		}
		if code >= 400 {
			var e struct {
				Error string `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || strings.TrimSpace(e.Error) == "" {
				t.Fatalf("%s %s: %d with body %q, want {\"error\": a sentence}", method, target, code, rec.Body.String())
			}
		}
		if code >= 300 || method == "GET" || method == "HEAD" {
			if after := snapshot(t, fx); after != before {
				t.Fatalf("%s %s answered %d and changed the store: %+v, was %+v", method, target, code, after, before)
			}
		}
	})
}

// storeState is what a refused request must leave as it was.
type storeState struct {
	tasks     int
	lastEvent int64
	task1     domain.Task
}

func snapshot(t *testing.T, fx *fixture) storeState {
	t.Helper()
	all, err := fx.store.ListTasks(fx.ctx, domain.TaskFilter{})
	if err != nil {
		t.Fatal(err)
	}
	last, err := domain.LatestEventID(fx.ctx, fx.store, 0)
	if err != nil {
		t.Fatal(err)
	}
	one, err := fx.store.GetTask(fx.ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	return storeState{tasks: len(all), lastEvent: last, task1: one}
}
