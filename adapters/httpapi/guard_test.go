package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/taskloom/taskloom/adapters/httpapi"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// publicURL is the TASKLOOM_PUBLIC_URL of the guard tests: a TLS proxy
// in front of the service.
const publicURL = "https://taskloom.example.com"

// TestGuard sends requests shaped like a web page's (a cross-site form or
// fetch, a page on a rebound DNS name) and like the service's own clients'
// (the CLI, curl, the dashboard, a browser behind the public URL) to a real
// server, and checks that the first are refused before any handler, with
// nothing created or changed, and the second served.
func TestGuard(t *testing.T) {
	f := newFixture(t, teststore.SQLite)
	if err := f.srv.SetIdentity(httpapi.Identity{PublicURL: publicURL, ListenAddr: "taskloom.lan:8080", Hostname: "taskloom-1"}); err != nil {
		t.Fatal(err)
	}
	// A signed webhook beside the API, as Slack's endpoints are mounted.
	var hooked atomic.Int32
	f.srv.HandleSigned("POST /hooks/signed", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hooked.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	ts := httptest.NewServer(f.srv)
	t.Cleanup(ts.Close)
	_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())
	self := ts.URL            // http://127.0.0.1:<port>: the dashboard's origin
	f.create("a queued task") // #1: what a refused pause must leave alone

	const (
		goal = `{"goal": "exfiltrate the workspace"}`
		JSON = "application/json"
	)
	tests := []struct {
		name   string
		method string
		path   string
		host   string   // the Host header; empty: the server's address
		header []string // pairs
		body   string
		code   int
	}{
		// Cross-site request forgery: what a page can send without asking.
		{name: "a form-shaped text/plain POST from another site", method: "POST", path: "/api/tasks", body: goal,
			header: []string{"Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site", "Content-Type", "text/plain"}, code: 403},
		{name: "a foreign Origin alone, even with a JSON body", method: "POST", path: "/api/tasks", body: goal,
			header: []string{"Origin", "http://evil.example", "Content-Type", JSON}, code: 403},
		{name: "a foreign Origin on a read", method: "GET", path: "/api/tasks",
			header: []string{"Origin", "http://evil.example"}, code: 403},
		{name: "Origin null (a sandboxed frame, a file)", method: "POST", path: "/api/tasks", body: goal,
			header: []string{"Origin", "null", "Content-Type", JSON}, code: 403},
		{name: "another port of the same host is another origin", method: "POST", path: "/api/tasks", body: goal,
			header: []string{"Origin", "http://127.0.0.1:1", "Content-Type", JSON}, code: 403},
		{name: "another scheme of the same host is another origin", method: "POST", path: "/api/tasks", body: goal,
			header: []string{"Origin", "https://127.0.0.1:" + port, "Content-Type", JSON}, code: 403},
		{name: "an origin with a path is no origin", method: "POST", path: "/api/tasks", body: goal,
			header: []string{"Origin", self + "/x", "Content-Type", JSON}, code: 403},
		{name: "two Origin headers", method: "POST", path: "/api/tasks", body: goal,
			header: []string{"Origin", self, "Origin", "http://evil.example", "Content-Type", JSON}, code: 403},
		{name: "Sec-Fetch-Site cross-site without Origin (an <img>)", method: "GET", path: "/api/events",
			header: []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "no-cors"}, code: 403},
		{name: "Sec-Fetch-Site same-site (a page on another port)", method: "POST", path: "/api/tasks/1/pause", body: "{}",
			header: []string{"Sec-Fetch-Site", "same-site", "Content-Type", JSON}, code: 403},
		{name: "a cross-site form submission navigating the tab", method: "POST", path: "/api/tasks", body: "goal=x",
			header: []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "navigate", "Sec-Fetch-Dest", "document", "Content-Type", "application/x-www-form-urlencoded"}, code: 403},
		{name: "a cross-site link into /api", method: "GET", path: "/api/tasks",
			header: []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "navigate", "Sec-Fetch-Dest", "document"}, code: 403},
		{name: "a cross-site page framing the dashboard", method: "GET", path: "/",
			header: []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "navigate", "Sec-Fetch-Dest", "iframe"}, code: 403},
		{name: "a cross-site link to the dashboard opens it", method: "GET", path: "/",
			header: []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "navigate", "Sec-Fetch-Dest", "document"}, code: 200},

		// DNS rebinding: the browser believes it talks to evil.example.
		{name: "a rebound name reading the API", method: "GET", path: "/api/tasks", host: "evil.example:" + port, code: 421},
		{name: "a rebound name creating a task, same-origin to the browser", method: "POST", path: "/api/tasks", host: "evil.example:" + port, body: goal,
			header: []string{"Origin", "http://evil.example:" + port, "Sec-Fetch-Site", "same-origin", "Content-Type", JSON}, code: 421},
		{name: "a rebound name reading the event stream", method: "GET", path: "/api/events", host: "evil.example", code: 421},
		{name: "a rebound name reading the dashboard", method: "GET", path: "/", host: "evil.example", code: 421},
		{name: "a rebound name reading metrics", method: "GET", path: "/metrics", host: "evil.example", code: 421},
		{name: "a rebound name probing health", method: "GET", path: "/healthz", host: "evil.example", code: 421},
		{name: "a rebound name on an unknown path", method: "GET", path: "/nothing-here", host: "evil.example", code: 421},
		{name: "a name that starts like localhost", method: "GET", path: "/api/tasks", host: "localhost.evil.example", code: 421},
		{name: "a name that starts like a loopback address", method: "GET", path: "/api/tasks", host: "127.0.0.1.evil.example", code: 421},
		{name: "the wildcard address", method: "GET", path: "/api/tasks", host: "0.0.0.0:" + port, code: 421},
		{name: "a name ending like the public host", method: "GET", path: "/api/tasks", host: "eviltaskloom.example.com", code: 421},
		{name: "the public host on another port as Origin", method: "POST", path: "/api/tasks", host: "taskloom.example.com", body: goal,
			header: []string{"Origin", "https://taskloom.example.com:8443", "Content-Type", JSON}, code: 403},
		{name: "a signed webhook's path asked with another method is guarded", method: "GET", path: "/hooks/signed", host: "evil.example", code: 421},

		// Bodies a page can send without a preflight.
		{name: "no Content-Type", method: "POST", path: "/api/tasks", body: goal, code: 415},
		{name: "text/plain", method: "POST", path: "/api/tasks", body: goal, header: []string{"Content-Type", "text/plain;charset=UTF-8"}, code: 415},
		{name: "a form", method: "POST", path: "/api/tasks", body: "goal=x", header: []string{"Content-Type", "application/x-www-form-urlencoded"}, code: 415},
		{name: "multipart", method: "POST", path: "/api/tasks", body: goal, header: []string{"Content-Type", "multipart/form-data; boundary=x"}, code: 415},
		{name: "a type that only starts like JSON", method: "POST", path: "/api/tasks", body: goal, header: []string{"Content-Type", "application/jsonp"}, code: 415},
		{name: "a pause without a body or type (the old CLI)", method: "POST", path: "/api/tasks/1/pause", code: 415},
		{name: "a DELETE with a text/plain body", method: "DELETE", path: "/api/memories?person=discord:nobody", body: goal,
			header: []string{"Content-Type", "text/plain"}, code: 415},
		{name: "an empty POST from another site's form", method: "POST", path: "/api/tasks/1/cancel",
			header: []string{"Content-Type", "application/x-www-form-urlencoded"}, code: 415},
		// A page's fetch of a DELETE to another origin carries Origin
		// (and needs a preflight this server never grants).
		{name: "a DELETE from another site, without a body", method: "DELETE", path: "/api/memories?person=discord:nobody",
			header: []string{"Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site"}, code: 403},
		{name: "the preflight such a DELETE needs first", method: "OPTIONS", path: "/api/memories?person=discord:nobody",
			header: []string{"Origin", "http://evil.example", "Access-Control-Request-Method", "DELETE"}, code: 403},
		{name: "a change to a path the API does not have", method: "PUT", path: "/api/settings", body: goal, header: []string{"Content-Type", "text/plain"}, code: 415},

		// The service's own clients.
		{name: "the CLI or curl: JSON, no Origin", method: "POST", path: "/api/tasks", body: goal, header: []string{"Content-Type", JSON}, code: 201},
		// No form sends a DELETE: one without a body needs no type
		// (curl -X DELETE).
		{name: "curl -X DELETE, no type, no body", method: "DELETE", path: "/api/memories?person=discord:nobody", code: 200},
		{name: "JSON with a charset", method: "POST", path: "/api/tasks", body: goal, header: []string{"Content-Type", "Application/JSON; charset=utf-8"}, code: 201},
		{name: "the dashboard's own POST", method: "POST", path: "/api/tasks", body: goal,
			header: []string{"Origin", self, "Sec-Fetch-Site", "same-origin", "Sec-Fetch-Mode", "cors", "Content-Type", JSON}, code: 201},
		{name: "the dashboard at localhost", method: "POST", path: "/api/tasks", host: "localhost:" + port, body: goal,
			header: []string{"Origin", "http://localhost:" + port, "Content-Type", JSON}, code: 201},
		{name: "the dashboard at [::1]", method: "POST", path: "/api/tasks", host: "[::1]:" + port, body: goal,
			header: []string{"Origin", "http://[::1]:" + port, "Content-Type", JSON}, code: 201},
		{name: "a bookmark (Sec-Fetch-Site none)", method: "GET", path: "/", header: []string{"Sec-Fetch-Site", "none"}, code: 200},
		{name: "localhost without a port", method: "GET", path: "/api/tasks", host: "localhost", code: 200},
		{name: "a name under .localhost", method: "GET", path: "/api/tasks", host: "taskloom.localhost:" + port, code: 200},
		{name: "LOCALHOST with a final dot", method: "GET", path: "/api/tasks", host: "LOCALHOST.:" + port, code: 200},
		{name: "another loopback address", method: "GET", path: "/api/tasks", host: "127.0.0.2:" + port, code: 200},
		{name: "an IPv4-mapped loopback address", method: "GET", path: "/api/tasks", host: "[::ffff:127.0.0.1]:" + port, code: 200},
		{name: "the public host behind its TLS proxy", method: "POST", path: "/api/tasks", host: "taskloom.example.com", body: goal,
			header: []string{"Origin", publicURL, "Sec-Fetch-Site", "same-origin", "Content-Type", JSON}, code: 201},
		{name: "the public origin with its default port spelled out", method: "POST", path: "/api/tasks", host: "TaskLoom.Example.COM", body: goal,
			header: []string{"Origin", "https://taskloom.example.com:443", "Content-Type", JSON}, code: 201},
		{name: "the public host on a read", method: "GET", path: "/api/tasks", host: "taskloom.example.com:443", code: 200},
		{name: "the host of the listen address", method: "GET", path: "/api/tasks", host: "taskloom.lan:8080", code: 200},
		{name: "the machine's own name", method: "GET", path: "/metrics", host: "taskloom-1:8080", code: 200},
		{name: "a signed webhook from anywhere, any type", method: "POST", path: "/hooks/signed", host: "evil.example", body: "x=1",
			header: []string{"Origin", "http://evil.example", "Content-Type", "application/x-www-form-urlencoded"}, code: 204},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, hookedBefore := f.count(), hooked.Load()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel() // an event stream, were one let through
			req, err := http.NewRequestWithContext(ctx, tt.method, ts.URL+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if tt.host != "" {
				req.Host = tt.host
			}
			for i := 0; i+1 < len(tt.header); i += 2 {
				req.Header.Add(tt.header[i], tt.header[i+1])
			}
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tt.code {
				var raw []byte
				if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") { // a stream would never end
					raw, _ = io.ReadAll(resp.Body)
				}
				t.Fatalf("%s %s (Host %q) = %d %s, want %d", tt.method, tt.path, req.Host, resp.StatusCode, raw, tt.code)
			}
			if tt.code >= 400 {
				var e struct{ Error string }
				if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || e.Error == "" {
					t.Errorf("refusal body is not {\"error\": ...}: %v", err)
				}
				if after := f.count(); after != before {
					t.Errorf("a refused request changed the task count from %d to %d", before, after)
				}
				if hooked.Load() != hookedBefore {
					t.Error("a refused request reached a handler")
				}
			}
			if tt.code == 415 && resp.Header.Get("Accept") != "application/json" {
				t.Errorf("415 without Accept: application/json (got %q)", resp.Header.Get("Accept"))
			}
			if task, err := f.store.GetTask(f.ctx, 1); err != nil || task.Status != domain.StatusQueued {
				t.Fatalf("task #1 is %s (%v) after %s", task.Status, err, tt.name)
			}
		})
	}
	if n := hooked.Load(); n != 1 {
		t.Errorf("the signed webhook ran %d times, want 1", n)
	}
}

// count is how many tasks the store holds.
func (f *fixture) count() int {
	f.t.Helper()
	n, err := f.store.CountTasks(f.ctx, domain.TaskFilter{})
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

// The address a connection arrived on is the service's own, whatever the
// listen address: a Kubernetes probe or scraper names the pod's address.
// Another address is not.
func TestGuardAnswersToTheAddressTheConnectionArrivedOn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, teststore.SQLite)
	if err := f.srv.SetIdentity(httpapi.Identity{ListenAddr: "0.0.0.0:8080"}); err != nil {
		t.Fatal(err)
	}
	local := &net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 8080}
	for _, tt := range []struct {
		host string
		code int
	}{
		{"10.1.2.3:8080", 200},
		{"10.1.2.3", 200},
		{"[::ffff:10.1.2.3]:8080", 200}, // the same address, IPv4-mapped
		{"10.1.2.4:8080", 421},
		{"0.0.0.0:8080", 421}, // a wildcard listen address names no host
		{"pod.cluster.example:8080", 421},
	} {
		req := httptest.NewRequest("GET", "/healthz", nil)
		req.Host = tt.host
		req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, net.Addr(local)))
		rec := httptest.NewRecorder()
		f.srv.ServeHTTP(rec, req)
		if rec.Code != tt.code {
			t.Errorf("Host %q on a connection to %s = %d %s, want %d", tt.host, local, rec.Code, rec.Body, tt.code)
		}
	}
}

// Over TLS the service's own origin is https://, and http:// on the same
// host and port is another.
func TestGuardOverTLS(t *testing.T) {
	t.Parallel()
	f := newFixture(t, teststore.SQLite)
	ts := httptest.NewTLSServer(f.srv)
	t.Cleanup(ts.Close)
	for _, tt := range []struct {
		origin string
		code   int
	}{
		{ts.URL, 201},
		{strings.Replace(ts.URL, "https://", "http://", 1), 403},
	} {
		req, err := http.NewRequest("POST", ts.URL+"/api/tasks", strings.NewReader(`{"goal": "g"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", tt.origin)
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.code {
			t.Errorf("Origin %s over TLS = %d, want %d", tt.origin, resp.StatusCode, tt.code)
		}
	}
}

func TestSetIdentityRefusesWhatItCannotUse(t *testing.T) {
	t.Parallel()
	for _, id := range []httpapi.Identity{
		{PublicURL: "taskloom.example.com"},
		{PublicURL: "ftp://taskloom.example.com"},
		{PublicURL: "https://"},
		{ListenAddr: "8080"},
	} {
		s := httpapi.New(nil, nil)
		if err := s.SetIdentity(id); err == nil {
			t.Errorf("SetIdentity(%+v) = nil, want an error", id)
		}
	}
}
