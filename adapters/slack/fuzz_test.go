package slack_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/internal/testkit/slackfake"
)

// FuzzSignedRequests sends the adapter's request URLs any body, signed
// with the app's signing secret as Slack signs: what Slack could send,
// malformed or of shapes the adapter does not know. Each is answered
// below 500, in time, and what the adapter does after acknowledging it
// ends without a panic (which would end the process: nothing recovers
// it).
func FuzzSignedRequests(f *testing.F) {
	event := func(inner string) string {
		return `{"type":"event_callback","team_id":"T0TEAM","api_app_id":"A0APP","event_id":"Ev1","event_time":1772442000,` +
			`"authorizations":[{"team_id":"T0TEAM","user_id":"U0BOT","is_bot":true}],"event":` + inner + `}`
	}
	interaction := func(payload string) string { return "payload=" + url.QueryEscape(payload) }
	for _, seed := range []struct {
		route uint8
		body  string
	}{
		{0, event(`{"type":"app_mention","user":"` + alice + `","text":"<@U0BOT> create task Build auth","channel":"C0GENERAL","ts":"1772442000.000100"}`)},
		{0, event(`{"type":"message","channel_type":"im","user":"` + alice + `","text":"status #1","channel":"D0ALICE","ts":"1772442000.000200"}`)},
		{0, event(`{"type":"message","subtype":"message_changed","channel":"C0GENERAL","message":{"text":7}}`)},
		{0, event(`{"type":"app_home_opened","user":"` + alice + `","tab":"home","channel":"D0ALICE"}`)},
		{0, event(`{"type":"assistant_thread_started","assistant_thread":{"channel_id":"D0ALICE","thread_ts":"1.2"}}`)},
		{0, event(`{"type":"reaction_added","item":{}}`)},
		{0, event(`null`)},
		{0, `{"type":"url_verification","challenge":"abc"}`},
		{0, `{"type":"url_verification","challenge":{}}`},
		{0, `{"type":"app_rate_limited"}`},
		{0, `[]`},
		{1, "team_id=T0TEAM&channel_id=C0GENERAL&user_id=" + alice + "&command=%2Ftask&text=create+Build+auth&response_url=http%3A%2F%2F127.0.0.1%3A1%2Fr"},
		{1, "team_id=T0TEAM&channel_id=C0GENERAL&user_id=" + alice + "&command=%2Ftask&text=cancel+%2399999999999999999999"},
		{1, "command=%2Ftask&text=%ZZ"},
		{1, "ssl_check=1"},
		{2, interaction(`{"type":"block_actions","team":{"id":"T0TEAM"},"user":{"id":"` + alice + `"},"channel":{"id":"C0GENERAL"},"actions":[{"action_id":"task_cancel","value":"abc"}]}`)},
		{2, interaction(`{"type":"view_submission","team":{"id":"T0TEAM"},"user":{"id":"` + alice + `"},"view":{"callback_id":"task_create","state":{"values":{"goal":{}}}}}`)},
		{2, interaction(`{"type":"shortcut","callback_id":"x"}`)},
		{2, "payload=%7B"},
		{2, ""},
	} {
		f.Add(seed.route, seed.body)
	}
	f.Fuzz(func(t *testing.T, route uint8, body string) {
		e := newEnv(t, httpMode)
		path := []string{"/slack/events", "/slack/commands", "/slack/interactions"}[int(route)%3]
		req := httptest.NewRequestWithContext(e.ctx, http.MethodPost, "http://taskloom.test"+path, strings.NewReader(body))
		if path == "/slack/events" {
			req.Header.Set("Content-Type", "application/json")
		} else {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		ts := strconv.FormatInt(e.clk.Now().Unix(), 10)
		req.Header.Set("X-Slack-Request-Timestamp", ts)
		req.Header.Set("X-Slack-Signature", slackfake.Sign(e.fake.SigningSecret(), ts, []byte(body)))
		rec := httptest.NewRecorder()
		done := make(chan struct{})
		go func() {
			defer close(done)
			e.http.ServeHTTP(rec, req)
		}()
		select {
		case <-done:
		case <-time.After(wait):
			t.Fatalf("%s %q: no answer within %s", path, body, wait)
		}
		if rec.Code >= 500 {
			t.Fatalf("%s %q: %d %s", path, body, rec.Code, rec.Body.String())
		}
		e.settle()
	})
}
