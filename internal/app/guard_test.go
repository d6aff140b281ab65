package app_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/internal/testkit/slackfake"
)

// TestServeGuardsTheAPI: serve puts the guard against web pages in front
// of every route but Slack's. The host of TASKLOOM_PUBLIC_URL and the
// machine's own name are answered to and a rebound name is not; a change
// that is not JSON is refused; Slack's signed endpoints are reached
// whatever Host a proxy forwards, and keep their signature check. A
// public URL needs the API token, and the API asks for it.
func TestServeGuardsTheAPI(t *testing.T) {
	t.Parallel()
	fake := slackfake.New(t)
	base := startServe(t, map[string]string{
		"TASKLOOM_DATA_DIR": t.TempDir(), "TASKLOOM_HTTP_ADDR": "127.0.0.1:0",
		"TASKLOOM_PUBLIC_URL": "https://taskloom.example.com", "TASKLOOM_API_TOKEN": apiToken,
		"SLACK_BOT_TOKEN": fake.BotToken(), "SLACK_SIGNING_SECRET": fake.SigningSecret(), "SLACK_API_URL": fake.APIURL(),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hostname, _ := os.Hostname()

	const goal = `{"goal": "write a haiku"}`
	tests := []struct {
		name, method, path, host, contentType, origin, body string
		code                                                int
		noToken                                             bool
	}{
		{name: "the public host without the token", method: "GET", path: "/api/tasks", host: "taskloom.example.com", noToken: true, code: 401},
		{name: "the public host", method: "GET", path: "/api/tasks", host: "taskloom.example.com", code: 200},
		{name: "the public origin creating a task", method: "POST", path: "/api/tasks", host: "taskloom.example.com",
			contentType: "application/json", origin: "https://taskloom.example.com", body: goal, code: 201},
		{name: "a rebound name", method: "GET", path: "/api/tasks", host: "evil.example", code: 421},
		{name: "a rebound name on /metrics", method: "GET", path: "/metrics", host: "evil.example", code: 421},
		{name: "a foreign origin", method: "POST", path: "/api/tasks", contentType: "application/json", origin: "http://evil.example", body: goal, code: 403},
		{name: "a text/plain change", method: "POST", path: "/api/tasks", contentType: "text/plain", body: goal, code: 415},
		{name: "the machine's own name", method: "GET", path: "/healthz", host: hostname, code: 200},
	}
	for _, tt := range tests {
		req, err := http.NewRequestWithContext(ctx, tt.method, base+tt.path, strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		if tt.host != "" {
			req.Host = tt.host
		}
		if tt.contentType != "" {
			req.Header.Set("Content-Type", tt.contentType)
		}
		if tt.origin != "" {
			req.Header.Set("Origin", tt.origin)
		}
		if !tt.noToken {
			req.Header.Set("Authorization", "Bearer "+apiToken)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.code {
			t.Errorf("%s: %s %s (Host %q) = %d, want %d", tt.name, tt.method, tt.path, req.Host, resp.StatusCode, tt.code)
		}
	}

	for _, signedWith := range []string{"", "wrong"} {
		var opts []slackfake.RequestOption
		want := http.StatusOK
		if signedWith != "" {
			opts, want = append(opts, slackfake.SignedWith(signedWith)), http.StatusUnauthorized
		}
		req, err := fake.Request(ctx, base, fake.AppMention("C1", "U1", fake.Mention()+" help"), opts...)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "evil.example" // what a tunnel or proxy in front of Slack's endpoints may forward
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Slack event signed with %q to Host evil.example = %d, want %d", signedWith, resp.StatusCode, want)
		}
	}
}
