package slack

import (
	"errors"
	"strings"
	"testing"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/taskloom/taskloom/plugin"
)

func TestPlainText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"<@UBOT> create task Build auth", "create task Build auth"},
		{"<@UBOT|taskloom> status #1", "status #1"},
		{"hey <@UBOT>, list tasks", "hey , list tasks"},
		{"a &lt;b&gt; &amp; c", "a <b> & c"},
		{"&amp;lt; stays text", "&lt; stays text"},
		{"<!channel> <!here> <!everyone>", "@channel @here @everyone"},
		{"<!subteam^S123|@devs> and <!subteam^S123>", "@devs and @subteam"},
		{"<!date^1392734382^{date}|Feb 18, 2014>", "Feb 18, 2014"},
		{"see <https://example.com/a?b=1&amp;c=2|example> and <http://x.io>", "see https://example.com/a?b=1&c=2 and http://x.io"},
		{"mail <mailto:a@b.c|a@b.c>", "mail a@b.c"},
		{"ask <@U123> in <#C42|general> or <#C43>", "ask <@U123> in general or <#C43>"},
		{"  two\nlines  ", "two\nlines"},
	} {
		if got := plainText(tc.in, "UBOT"); got != tc.want {
			t.Errorf("plainText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseRoom(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      string
		want    room
		wantErr bool
	}{
		{"slack:C42", room{Channel: "C42"}, false},
		{"slack:C42:1712345678.000100", room{Channel: "C42", Thread: "1712345678.000100"}, false},
		{"slack:D1", room{Channel: "D1"}, false},
		{"discord:123", room{}, true},
		{"slack:", room{}, true},
		{"slack", room{}, true},
		{"slack:C1:2:3", room{}, true},
	} {
		got, err := parseRoom(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("parseRoom(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
		if err == nil && got.String() != tc.in {
			t.Errorf("room %q prints as %q", tc.in, got.String())
		}
	}
}

func TestMessageBlocksStayWithinBlockKit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		text       string
		tasks      []int64
		wantBlocks int
	}{
		{"short", "hello", []int64{1}, 2},
		{"no text", "", []int64{1}, 1},
		{"two sections", string(make([]byte, 0)) + repeat("a\n", 2000), nil, 2},
		{"many tasks", "x", seq(60), 50},
	} {
		got := messageBlocks(tc.text, tc.tasks, buttons{}, nil)
		if len(got) != tc.wantBlocks {
			t.Errorf("%s: %d blocks, want %d", tc.name, len(got), tc.wantBlocks)
		}
	}
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}

func seq(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i + 1)
	}
	return out
}

func TestAckBodyFallsBackToTheResponseURL(t *testing.T) {
	t.Parallel()
	short := plugin.Response{Text: "done", TaskNumber: 3}
	body, rest, fits := ackBody(short)
	if !fits || len(rest) != 0 || !strings.Contains(string(body), `"response_type":"in_channel"`) || !strings.Contains(string(body), ActionPause) {
		t.Errorf("short answer: fits %v, rest %d, body %s", fits, len(rest), body)
	}
	long := plugin.Response{Text: strings.Repeat("a line of text\n", 1500), Ephemeral: true}
	if body, rest, fits := ackBody(long); fits || body != nil || len(rest) != 1 || rest[0].ResponseType != "ephemeral" {
		t.Errorf("20 KB answer: fits %v, body %d bytes, rest %d; want it all for the response URL", fits, len(body), len(rest))
	}
	huge := plugin.Response{Text: strings.Repeat("x\n", 30000)}
	if msgs := responseMessages(huge); len(msgs) != 2 {
		t.Errorf("60,000 characters in %d messages, want 2", len(msgs))
	}
}

func TestAPIErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err       error
		limited   bool
		retryWait time.Duration
	}{
		{&slackapi.RateLimitedError{RetryAfter: 9 * time.Second}, true, 9 * time.Second},
		{slackapi.StatusCodeError{Code: 429, Status: "429 Too Many Requests"}, true, 0},
		{slackapi.SlackErrorResponse{Err: "ratelimited"}, true, 0},
		{slackapi.SlackErrorResponse{Err: "channel_not_found"}, false, 0},
		{slackapi.StatusCodeError{Code: 500, Status: "500"}, false, 0},
	} {
		err := apiError("chat.postMessage", tc.err)
		var rl *plugin.RateLimitedError
		if errors.As(err, &rl) != tc.limited || (tc.limited && rl.RetryAfter != tc.retryWait) {
			t.Errorf("apiError(%v) = %v; want rate limited %v after %s", tc.err, err, tc.limited, tc.retryWait)
		}
		if !strings.HasPrefix(err.Error(), "chat.postMessage: ") && !tc.limited {
			t.Errorf("apiError(%v) = %q; want the method named", tc.err, err)
		}
	}
}
