package slackfake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/taskloom/taskloom/internal/testkit/slackfake"
)

const wait = 20 * time.Second

func client(s *slackfake.Server, token string) *slack.Client {
	return slack.New(token, slack.OptionAPIURL(s.APIURL()), slack.OptionAppLevelToken(s.AppToken()))
}

func TestWebAPIThroughSlackGo(t *testing.T) {
	t.Parallel()
	s := slackfake.New(t, slackfake.WithUser(slackfake.User{ID: "U1", Name: "ann", Admin: true}),
		slackfake.WithUser(slackfake.User{ID: "U2", Name: "bo"}), slackfake.WithUser(slackfake.User{ID: "U3", Name: "cy", Owner: true}))
	ctx := context.Background()
	api := client(s, s.BotToken())

	auth, err := api.AuthTestContext(ctx)
	if err != nil || auth.UserID != s.BotUserID() || auth.BotID != s.BotID() || auth.TeamID != s.TeamID() {
		t.Fatalf("auth.test = %+v, %v", auth, err)
	}
	for _, tc := range []struct {
		id           string
		admin, owner bool
		err          string
	}{{"U1", true, false, ""}, {"U2", false, false, ""}, {"U3", true, true, ""}, {"U404", false, false, "user_not_found"}} {
		u, err := api.GetUserInfoContext(ctx, tc.id)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("users.info %s: %v, want %s", tc.id, err, tc.err)
			}
			continue
		}
		if err != nil || u.IsAdmin != tc.admin || u.IsOwner != tc.owner {
			t.Errorf("users.info %s: admin %v owner %v (%v); want %v %v", tc.id, u.IsAdmin, u.IsOwner, err, tc.admin, tc.owner)
		}
	}
	ch, err := api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: "D123"})
	if err != nil || !ch.IsIM {
		t.Errorf("conversations.info D123: %+v, %v; want an IM", ch, err)
	}

	button := slack.NewButtonBlockElement("taskloom_pause", "7", slack.NewTextBlockObject(slack.PlainTextType, "Pause #7", false, false))
	_, ts, err := api.PostMessageContext(ctx, "C1",
		slack.MsgOptionText("fallback <!here>", false), slack.MsgOptionTS("1700000000.000001"),
		slack.MsgOptionBlocks(
			slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "hello <@U2>", false, false), nil, nil),
			slack.NewActionBlock("task_7", button)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.PostEphemeralContext(ctx, "C1", "U2", slack.MsgOptionText("just for you", false)); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("edited", false)); err != nil {
		t.Fatal(err)
	}
	msgs := s.Messages()
	if len(msgs) != 2 {
		t.Fatalf("%d messages, want 2", len(msgs))
	}
	post, eph := msgs[0], msgs[1]
	if post.Kind != slackfake.KindPost || post.Channel != "C1" || post.TS != ts || post.ThreadTS != "1700000000.000001" ||
		post.Text != "edited" || post.Edits != 1 || post.BlockText() != "hello <@U2>" {
		t.Errorf("post = %+v", post)
	}
	if b := post.Buttons(); len(b) != 1 || b[0].ActionID != "taskloom_pause" || b[0].Value != "7" || b[0].BlockID != "task_7" || b[0].Label != "Pause #7" {
		t.Errorf("buttons = %+v", b)
	}
	if got := post.Pings(); len(got) != 1 || got[0] != "@U2" {
		t.Errorf("pings = %v, want the user mention in the blocks (the edit dropped <!here>)", got)
	}
	if eph.Kind != slackfake.KindEphemeral || eph.User != "U2" || eph.Visible() {
		t.Errorf("ephemeral = %+v", eph)
	}

	// Slack's refusals.
	long := strings.Repeat("x", slackfake.MaxTextLength+1)
	section := func(n int) slack.MsgOption {
		return slack.MsgOptionBlocks(slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, strings.Repeat("y", n), false, false), nil, nil))
	}
	dup := slack.MsgOptionBlocks(slack.NewActionBlock("a", button, button))
	for _, tc := range []struct {
		name  string
		api   *slack.Client
		opts  []slack.MsgOption
		want  string
		chann string
	}{
		{"wrong token", client(s, "xoxb-nope"), []slack.MsgOption{slack.MsgOptionText("x", false)}, "invalid_auth", "C1"},
		{"app token", client(s, s.AppToken()), []slack.MsgOption{slack.MsgOptionText("x", false)}, "not_allowed_token_type", "C1"},
		{"no text", api, nil, "no_text", "C1"},
		{"no channel", api, []slack.MsgOption{slack.MsgOptionText("x", false)}, "channel_not_found", ""},
		{"too long", api, []slack.MsgOption{slack.MsgOptionText(long, false)}, "msg_too_long", "C1"},
		{"section too long", api, []slack.MsgOption{section(slackfake.MaxSectionText + 1)}, "invalid_blocks", "C1"},
		{"duplicate action", api, []slack.MsgOption{dup}, "invalid_blocks", "C1"},
	} {
		if _, _, err := tc.api.PostMessageContext(ctx, tc.chann, tc.opts...); err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
	if _, _, err := api.PostMessageContext(ctx, "C1", section(slackfake.MaxSectionText)); err != nil {
		t.Errorf("a section of exactly %d characters: %v", slackfake.MaxSectionText, err)
	}
	if calls := s.CallsTo("chat.postMessage"); len(calls) != 9 || calls[1].Error != "invalid_auth" || calls[0].Params.Get("thread_ts") != "1700000000.000001" {
		t.Errorf("recorded calls = %+v", calls)
	}
}

func TestRateLimitsAsSlackGoSeesThem(t *testing.T) {
	t.Parallel()
	s := slackfake.New(t)
	ctx := context.Background()
	api := client(s, s.BotToken())
	s.RateLimitNext("chat.postMessage", 3*time.Second)
	s.FailNext("chat.postMessage", "fatal_error")
	_, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("a", false))
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != 3*time.Second {
		t.Fatalf("first post: %v, want a RateLimitedError after 3s", err)
	}
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("b", false)); err == nil || err.Error() != "fatal_error" {
		t.Errorf("second post: %v, want fatal_error", err)
	}
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("c", false)); err != nil {
		t.Errorf("third post: %v", err)
	}
	calls := s.CallsTo("chat.postMessage")
	if len(calls) != 3 || calls[0].Status != http.StatusTooManyRequests || calls[0].Error != "ratelimited" || calls[1].Error != "fatal_error" || calls[2].Error != "" {
		t.Errorf("calls = %+v", calls)
	}
	if got := s.Messages(); len(got) != 1 || got[0].Text != "c" {
		t.Errorf("messages = %+v, want only c", got)
	}

	// The raw 429, as Slack sends it.
	s.RateLimitNext("auth.test", 1500*time.Millisecond)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.APIURL()+"auth.test", strings.NewReader("token="+s.BotToken()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" || !strings.Contains(string(body), `"error":"ratelimited"`) {
		t.Errorf("429: status %d Retry-After %q body %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
}

func TestResponseURLs(t *testing.T) {
	t.Parallel()
	s := slackfake.New(t)
	ctx := context.Background()
	api := client(s, s.BotToken())
	cmd := s.SlashCommand("C9", "U1", "list")
	for i := range 6 {
		_, _, err := api.PostMessageContext(ctx, "", slack.MsgOptionResponseURL(cmd.ResponseURL, slack.ResponseTypeInChannel),
			slack.MsgOptionText("answer", false))
		if i < 5 && err != nil {
			t.Fatalf("use %d: %v", i+1, err)
		}
		if i == 5 && err == nil {
			t.Error("a sixth use of a response URL succeeded; Slack allows five")
		}
	}
	msgs := s.Messages()
	if len(msgs) != 5 || msgs[0].Kind != slackfake.KindResponse || msgs[0].Channel != "C9" || msgs[0].User != "U1" ||
		msgs[0].ResponseType != "in_channel" || !msgs[0].Visible() {
		t.Errorf("messages = %+v", msgs)
	}
	if _, _, err := api.PostMessageContext(ctx, "", slack.MsgOptionResponseURL(s.URL()+"/response/nope", slack.ResponseTypeEphemeral),
		slack.MsgOptionText("x", false)); err == nil {
		t.Error("an unknown response URL accepted a message")
	}
}

func TestRequestsAreSignedAsSlackGoVerifies(t *testing.T) {
	t.Parallel()
	s := slackfake.New(t)
	ctx := context.Background()
	body := func(r *http.Request) []byte {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		return b
	}
	verify := func(r *http.Request) error {
		v, err := slack.NewSecretsVerifier(r.Header, s.SigningSecret())
		if err != nil {
			return err
		}
		if _, err := v.Write(body(r)); err != nil {
			return err
		}
		return v.Ensure()
	}
	ev := s.AppMention("C1", "U1", "create task X").InThread("1700000000.000009")
	for _, tc := range []struct {
		name string
		opts []slackfake.RequestOption
		want error
	}{
		{"signed", nil, nil},
		{"wrong secret", []slackfake.RequestOption{slackfake.SignedWith("other")}, slack.ErrInvalidSignature},
		{"stale", []slackfake.RequestOption{slackfake.SignedAt(time.Now().Add(-10 * time.Minute))}, slack.ErrExpiredTimestamp},
		{"unsigned", []slackfake.RequestOption{slackfake.Unsigned()}, slack.ErrMissingHeaders},
	} {
		req, err := s.Request(ctx, "http://app.test", ev, tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if err := verify(req); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}

	req, _ := s.Request(ctx, "http://app.test", ev, slackfake.Retry(2, "http_timeout"))
	if req.URL.Path != "/slack/events" || req.Header.Get("X-Slack-Retry-Num") != "2" || req.Header.Get("X-Slack-Retry-Reason") != "http_timeout" {
		t.Errorf("retry request: %s %v", req.URL, req.Header)
	}
	parsed, err := slackevents.ParseEvent(body(req), slackevents.OptionNoVerifyToken())
	if err != nil {
		t.Fatal(err)
	}
	m, ok := parsed.InnerEvent.Data.(*slackevents.AppMentionEvent)
	if !ok || m.User != "U1" || m.Channel != "C1" || m.TimeStamp != ev.TS || m.ThreadTimeStamp != "1700000000.000009" ||
		m.Text != s.Mention()+" create task X" || parsed.TeamID != s.TeamID() {
		t.Errorf("parsed app_mention = %+v (%T)", parsed.InnerEvent.Data, parsed.InnerEvent.Data)
	}
	if cb := parsed.Data.(*slackevents.EventsAPICallbackEvent); cb.EventID != ev.EventID {
		t.Errorf("event_id %q, want %q", cb.EventID, ev.EventID)
	}

	dm := s.DirectMessage("U1", "hello")
	req, _ = s.Request(ctx, "http://app.test", dm)
	parsed, _ = slackevents.ParseEvent(body(req), slackevents.OptionNoVerifyToken())
	if me, ok := parsed.InnerEvent.Data.(*slackevents.MessageEvent); !ok || me.ChannelType != "im" || me.Channel != s.IMChannel("U1") {
		t.Errorf("parsed message.im = %+v", parsed.InnerEvent.Data)
	}

	cmd := s.SlashCommand("C1", "U1", "status 3")
	req, _ = s.Request(ctx, "http://app.test", cmd)
	sc, err := slack.SlashCommandParse(req)
	if err != nil || req.URL.Path != "/slack/commands" || sc.Command != "/task" || sc.Text != "status 3" || sc.UserID != "U1" ||
		sc.ChannelID != "C1" || sc.TeamID != s.TeamID() || sc.ResponseURL != cmd.ResponseURL || sc.TriggerID == "" {
		t.Errorf("parsed command = %+v, %v", sc, err)
	}

	post := slackfake.Message{Kind: slackfake.KindPost, Channel: "C1", TS: "1700000000.000010", ThreadTS: "1700000000.000009",
		Blocks: []slackfake.Block{{Type: "actions", BlockID: "b", Elements: []slackfake.Element{{Type: "button", ActionID: "go", Value: "4", Text: &slackfake.Text{Type: "plain_text", Text: "Go"}}}}}}
	in, err := s.ButtonPress("U2", post, "go", "4")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ButtonPress("U2", post, "go", "5"); err == nil {
		t.Error("a press of a button the message does not have")
	}
	req, _ = s.Request(ctx, "http://app.test", in)
	cb, err := slack.InteractionCallbackParse(req)
	if err != nil || cb.Type != slack.InteractionTypeBlockActions || cb.User.ID != "U2" || cb.Team.ID != s.TeamID() ||
		cb.Container.ChannelID != "C1" || cb.Container.ThreadTs != "1700000000.000009" || cb.Container.MessageTs != "1700000000.000010" ||
		len(cb.ActionCallback.BlockActions) != 1 || cb.ActionCallback.BlockActions[0].ActionID != "go" || cb.ActionCallback.BlockActions[0].Value != "4" {
		t.Errorf("parsed interaction = %+v, %v", cb, err)
	}
}

func TestSocketModeThroughSlackGo(t *testing.T) {
	t.Parallel()
	s := slackfake.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	sm := socketmode.New(client(s, s.BotToken()))
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- sm.RunContext(runCtx) }()
	defer func() {
		stop()
		<-ran
	}()
	if err := s.WaitConnections(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// next returns the next envelope slack-go hands on.
	next := func() socketmode.Event {
		t.Helper()
		for {
			select {
			case ev := <-sm.Events:
				switch ev.Type {
				case socketmode.EventTypeEventsAPI, socketmode.EventTypeSlashCommand, socketmode.EventTypeInteractive:
					return ev
				}
			case <-ctx.Done():
				t.Fatal("no envelope")
			}
		}
	}

	ev := s.AppMention("C1", "U1", "hi")
	env, err := s.Deliver(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	got := next()
	api, ok := got.Data.(slackevents.EventsAPIEvent)
	if !ok || got.Request.EnvelopeID != env.ID || api.InnerEvent.Type != "app_mention" {
		t.Fatalf("events_api envelope = %+v", got)
	}
	if err := sm.Ack(*got.Request); err != nil {
		t.Fatal(err)
	}
	if ack, err := s.WaitAck(ctx, env.ID); err != nil || len(ack.Payload) != 0 {
		t.Errorf("ack = %+v, %v", ack, err)
	}
	again, err := s.Redeliver(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	if got := next(); got.Request.EnvelopeID != again.ID || got.Request.RetryAttempt != 1 || got.Request.RetryReason != "timeout" {
		t.Errorf("redelivery = %+v", got.Request)
	}

	cmd := s.SlashCommand("C1", "U1", "list")
	env, _ = s.Deliver(ctx, cmd)
	got = next()
	sc, ok := got.Data.(slack.SlashCommand)
	if !ok || sc.Text != "list" || sc.ResponseURL != cmd.ResponseURL || !got.Request.AcceptsResponsePayload {
		t.Fatalf("slash_commands envelope = %+v", got)
	}
	if err := sm.Ack(*got.Request, map[string]any{"response_type": "ephemeral", "text": "the queue"}); err != nil {
		t.Fatal(err)
	}
	ack, err := s.WaitAck(ctx, env.ID)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok, err := slackfake.ParseResponse(ack.Payload); err != nil || !ok || m.Text != "the queue" || m.ResponseType != "ephemeral" {
		t.Errorf("ack payload %s → %+v %v %v", ack.Payload, m, ok, err)
	}

	post := slackfake.Message{Kind: slackfake.KindPost, Channel: "C1", TS: "1700000000.000010",
		Blocks: []slackfake.Block{{Type: "actions", BlockID: "b", Elements: []slackfake.Element{{Type: "button", ActionID: "go", Value: "4", Text: &slackfake.Text{Type: "plain_text", Text: "Go"}}}}}}
	in, _ := s.ButtonPress("U2", post, "go", "4")
	if _, err := s.Deliver(ctx, in); err != nil {
		t.Fatal(err)
	}
	got = next()
	if cb, ok := got.Data.(slack.InteractionCallback); !ok || cb.ActionCallback.BlockActions[0].Value != "4" || cb.User.ID != "U2" {
		t.Errorf("interactive envelope = %+v", got)
	}

	if err := s.Disconnect(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitConnections(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if total, open := s.Connections(); total != 2 || open != 1 {
		t.Errorf("connections: %d in all, %d open; want 2, 1", total, open)
	}
	if calls := s.CallsTo("apps.connections.open"); len(calls) != 2 || calls[0].Token != s.AppToken() {
		t.Errorf("apps.connections.open calls = %+v", calls)
	}
	// The bot token cannot open Socket Mode.
	if _, _, err := client(s, s.BotToken()).StartSocketModeContext(ctx); err != nil {
		t.Errorf("with the app-level token set: %v", err)
	}
	if _, _, err := slack.New(s.BotToken(), slack.OptionAPIURL(s.APIURL()), slack.OptionAppLevelToken(s.BotToken())).StartSocketModeContext(ctx); err == nil || err.Error() != "not_allowed_token_type" {
		t.Errorf("apps.connections.open with a bot token: %v", err)
	}
}

func TestPingsAndResponses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		m    slackfake.Message
		want string
	}{
		{slackfake.Message{Text: "hi <!channel> <!here|here> <!everyone> <@U1> <@W2|w>"}, "!channel !here !everyone @U1 @W2"},
		{slackfake.Message{Text: "&lt;!channel&gt; @\u200bchannel <!date^1^{date}|today> <#C1|general> <https://x.io>"}, ""},
		{slackfake.Message{Text: "@channel @here"}, ""},
		{slackfake.Message{Text: "@channel ping", LinkNames: true}, "!channel"},
		{slackfake.Message{Text: "fine", Blocks: []slackfake.Block{{Type: "section", Text: &slackfake.Text{Type: "mrkdwn", Text: "<!subteam^S1|@devs>"}}}}, "!subteam^S1"},
	} {
		if got := strings.Join(tc.m.Pings(), " "); got != tc.want {
			t.Errorf("Pings(%q) = %q, want %q", tc.m.Text, got, tc.want)
		}
	}
	for _, tc := range []struct {
		raw    string
		ok     bool
		errSub string
	}{
		{``, false, ""},
		{`{"text":"x"}`, true, ""},
		{`{"response_type":"in_channel","text":"x","blocks":[{"type":"section","text":{"type":"mrkdwn","text":"x"}}]}`, true, ""},
		{`{"text":""}`, false, "no_text"},
		{`{"text":"x","blocks":[{"type":"section"}]}`, false, "invalid_blocks"},
		{`not json`, false, "not a JSON message"},
	} {
		m, ok, err := slackfake.ParseResponse([]byte(tc.raw))
		if ok != tc.ok || (tc.errSub == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.errSub)) {
			t.Errorf("ParseResponse(%q) = %+v, %v, %v", tc.raw, m, ok, err)
		}
		if ok && m.Kind != slackfake.KindAck {
			t.Errorf("ParseResponse(%q): kind %q", tc.raw, m.Kind)
		}
	}
}

// TestMetadataAndHistory: chat.postMessage keeps metadata, and
// conversations.history and conversations.replies return it with
// include_all_metadata, newest first and oldest first, a page at a time.
func TestMetadataAndHistory(t *testing.T) {
	t.Parallel()
	s := slackfake.New(t)
	ctx := context.Background()
	api := client(s, s.BotToken())
	md := func(key string) slack.MsgOption {
		return slack.MsgOptionMetadata(slack.SlackMetadata{EventType: "taskloom_notification", EventPayload: map[string]any{"key": key}})
	}
	var tss []string
	for i := range 3 {
		_, ts, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText(fmt.Sprintf("top %d", i), false), md(fmt.Sprintf("k%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		tss = append(tss, ts)
	}
	_, reply, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("in the thread", false), slack.MsgOptionTS(tss[0]), md("r"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.PostMessageContext(ctx, "C2", slack.MsgOptionText("elsewhere", false)); err != nil {
		t.Fatal(err)
	}
	if ms := s.Messages(); ms[0].Metadata == nil || ms[0].Metadata.EventType != "taskloom_notification" || ms[0].Metadata.EventPayload["key"] != "k0" {
		t.Errorf("kept metadata = %+v", ms[0].Metadata)
	}

	// Newest first, top level only, metadata only when asked for.
	h, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C1"})
	if err != nil || len(h.Messages) != 3 || h.Messages[0].Timestamp != tss[2] || h.Messages[2].Timestamp != tss[0] || h.Messages[0].Metadata.EventType != "" {
		t.Fatalf("history without include_all_metadata = %+v, %v", h, err)
	}
	h, err = api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C1", IncludeAllMetadata: true, Limit: 2})
	if err != nil || len(h.Messages) != 2 || !h.HasMore || h.ResponseMetaData.NextCursor == "" ||
		h.Messages[0].Metadata.EventType != "taskloom_notification" || h.Messages[0].Metadata.EventPayload["key"] != "k2" {
		t.Fatalf("first page = %+v, %v", h, err)
	}
	h, err = api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C1", IncludeAllMetadata: true, Limit: 2, Cursor: h.ResponseMetaData.NextCursor})
	if err != nil || len(h.Messages) != 1 || h.HasMore || h.Messages[0].Timestamp != tss[0] || h.Messages[0].Metadata.EventPayload["key"] != "k0" {
		t.Fatalf("second page = %+v, %v", h, err)
	}
	h, err = api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C1", Oldest: tss[1]})
	if err != nil || len(h.Messages) != 1 || h.Messages[0].Timestamp != tss[2] {
		t.Errorf("history after %s = %+v, %v", tss[1], h, err)
	}
	h, err = api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C1", Oldest: tss[1], Inclusive: true})
	if err != nil || len(h.Messages) != 2 {
		t.Errorf("history from %s inclusive = %+v, %v", tss[1], h, err)
	}

	// The thread: parent first, then replies.
	msgs, more, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: tss[0], IncludeAllMetadata: true})
	if err != nil || more || len(msgs) != 2 || msgs[0].Timestamp != tss[0] || msgs[1].Timestamp != reply || msgs[1].Metadata.EventPayload["key"] != "r" {
		t.Fatalf("replies = %+v, %v", msgs, err)
	}
	if msgs, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: "1.000001"}); err != nil || len(msgs) != 0 {
		t.Errorf("replies of a thread the fake has nothing of = %+v, %v", msgs, err)
	}

	// Metadata Slack would refuse.
	for raw, code := range map[string]string{
		`{not json`:                              "invalid_metadata_format",
		`{"event_payload":{}}`:                   "invalid_metadata_schema",
		`{"event_type":"x","event_payload":[1]}`: "invalid_metadata_schema",
	} {
		form := url.Values{"channel": {"C1"}, "text": {"x"}, "metadata": {raw}}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.APIURL()+"chat.postMessage", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer "+s.BotToken())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil || body.OK || body.Error != code {
			t.Errorf("metadata %s: %+v, %v; want %s", raw, body, err, code)
		}
	}
}

// TestEnforceLimits: with limits enforced, a post beyond a channel's
// window is a 429 that slack-go reads as a RateLimitedError with the wait
// left; a thread counts with its channel, other channels are not held,
// and the workspace limit holds every channel.
func TestEnforceLimits(t *testing.T) {
	s := slackfake.New(t)
	ctx := context.Background()
	api := client(s, s.BotToken())
	s.EnforceLimits(slackfake.Limits{PerChannel: 2, ChannelWindow: time.Minute, Workspace: 4, WorkspaceWindow: time.Minute})
	post := func(channel string, opts ...slack.MsgOption) error {
		_, _, err := api.PostMessageContext(ctx, channel, append(opts, slack.MsgOptionText("x", false))...)
		return err
	}
	if err := post("C1"); err != nil {
		t.Fatal(err)
	}
	if err := post("C1", slack.MsgOptionTS("1.000001")); err != nil {
		t.Fatal(err)
	}
	var rl *slack.RateLimitedError
	if err := post("C1"); !errors.As(err, &rl) || rl.RetryAfter < 59*time.Second {
		t.Fatalf("third post in C1: %v, want a RateLimitedError of about a minute", err)
	}
	for _, c := range []string{"C2", "C3"} {
		if err := post(c); err != nil {
			t.Fatalf("post in %s: %v", c, err)
		}
	}
	if err := post("C4"); !errors.As(err, &rl) {
		t.Fatalf("fifth post in the workspace: %v, want a RateLimitedError", err)
	}
	if got := s.Throttled(); got != 2 {
		t.Errorf("Throttled = %d, want 2", got)
	}
}

// TestStallNext: a stalled call hangs until the client's timeout, and is
// carried out or not as asked; one the client waits out gets a 504
// request_timeout.
func TestStallNext(t *testing.T) {
	t.Parallel()
	s := slackfake.New(t)
	ctx := context.Background()
	short := slack.New(s.BotToken(), slack.OptionAPIURL(s.APIURL()), slack.OptionHTTPClient(&http.Client{Timeout: 100 * time.Millisecond}))
	s.StallNext("chat.postMessage", 1, time.Minute, true)
	start := time.Now()
	if _, _, err := short.PostMessageContext(ctx, "C1", slack.MsgOptionText("made", false)); err == nil {
		t.Fatal("a stalled call succeeded")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the stalled call was held %s, past its client's timeout", d)
	}
	s.StallNext("chat.postMessage", 1, time.Minute, false)
	if _, _, err := short.PostMessageContext(ctx, "C1", slack.MsgOptionText("not made", false)); err == nil {
		t.Fatal("a stalled call succeeded")
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := s.WaitCalls(wctx, "chat.postMessage", 2); err != nil {
		t.Fatal(err)
	}
	if got := s.Messages(); len(got) != 1 || got[0].Text != "made" {
		t.Errorf("messages = %+v, want only the one carried out", got)
	}
	s.StallNext("chat.postMessage", 1, 50*time.Millisecond, false)
	start = time.Now()
	_, _, err := client(s, s.BotToken()).PostMessageContext(ctx, "C1", slack.MsgOptionText("waited", false))
	var se slack.StatusCodeError
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("a call stalled for 50ms answered in %s", d)
	}
	if !errors.As(err, &se) || se.Code != http.StatusGatewayTimeout {
		t.Errorf("a call waited out: %v (%T), want a 504", err, err)
	}
}

// An envelope left unacknowledged is delivered again as Slack does:
// after AckTimeout, then a minute and five minutes after each failed
// retry, MaxRetries times in all; an acknowledged one is not.
func TestUnacknowledgedEnvelopeIsRedeliveredThreeTimes(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	advance := func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(d)
	}
	s := slackfake.New(t, slackfake.WithNow(func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}))
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	sm := socketmode.New(client(s, s.BotToken()))
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- sm.RunContext(runCtx) }()
	defer func() {
		stop()
		<-ran
	}()
	if err := s.WaitConnections(ctx, 1); err != nil {
		t.Fatal(err)
	}
	acked, err := s.Deliver(ctx, s.AppMention("C1", "U1", "acked"))
	if err != nil {
		t.Fatal(err)
	}
	left, err := s.Deliver(ctx, s.AppMention("C1", "U1", "left"))
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < 2; {
		ev := <-sm.Events
		if ev.Type == socketmode.EventTypeEventsAPI {
			if ev.Request.EnvelopeID == acked.ID {
				sm.Ack(*ev.Request)
				if _, err := s.WaitAck(ctx, acked.ID); err != nil {
					t.Fatal(err)
				}
			}
			n++
		}
	}
	go func() { // the redeliveries, left unacknowledged
		for {
			select {
			case <-sm.Events:
			case <-runCtx.Done():
				return
			}
		}
	}()
	redeliver := func() []slackfake.Envelope {
		t.Helper()
		got, err := s.RedeliverUnacked(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := redeliver(); len(got) != 0 {
		t.Fatalf("redelivered before the ack timed out: %+v", got)
	}
	for i, wait := range []time.Duration{slackfake.AckTimeout, time.Minute + slackfake.AckTimeout, 5*time.Minute + slackfake.AckTimeout} {
		advance(wait - time.Second)
		if got := redeliver(); len(got) != 0 {
			t.Fatalf("retry %d a second early: %+v", i+1, got)
		}
		advance(time.Second)
		got := redeliver()
		if len(got) != 1 || got[0].RetryAttempt != i+1 || got[0].Payload == nil || string(got[0].Payload) != string(left.Payload) {
			t.Fatalf("retry %d = %+v, want the unacknowledged envelope's payload, retry_attempt %d", i+1, got, i+1)
		}
	}
	advance(time.Hour)
	if got := redeliver(); len(got) != 0 {
		t.Fatalf("retried more than %d times: %+v", slackfake.MaxRetries, got)
	}
}
