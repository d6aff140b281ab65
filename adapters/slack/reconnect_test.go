package slack_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/slack"
	"github.com/taskloom/taskloom/internal/testkit"
)

// TestSlackDownAtStartIsRetried: Slack cannot be reached when the service
// starts; start-up goes on, and the adapter connects once it can, on its
// own backoff (the service's clock), and then answers mentions — in
// Socket Mode, whose connection it opens then, and over HTTP.
func TestSlackDownAtStartIsRetried(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{httpMode, socketMode} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			var g *testkit.Gate
			e := newEnvVars(t, mode, nil, nil, func(o *slack.Options) {
				u, err := url.Parse(o.APIURL)
				if err != nil {
					t.Fatal(err)
				}
				g = testkit.NewGate(t, u.Host)
				o.APIURL = strings.Replace(o.APIURL, u.Host, g.Addr(), 1)
			})
			g.Open()
			deadline := time.Now().Add(wait)
			for !e.slack.Connected() {
				if time.Now().After(deadline) {
					t.Fatal("the adapter did not connect once Slack could be reached")
				}
				e.clk.Advance(time.Second) // its backoff runs on the service's clock
				time.Sleep(10 * time.Millisecond)
			}
			if mode == socketMode {
				if err := e.fake.WaitConnections(e.ctx, 1); err != nil {
					t.Fatal(err)
				}
			}
			_, reply := e.mention("create task Build auth")
			if !strings.Contains(reply.Text, `Created task #1 "Build auth"`) {
				t.Fatalf("reply = %q", reply.Text)
			}
		})
	}
}
