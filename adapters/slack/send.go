package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/render"
	"github.com/taskloom/taskloom/plugin"
)

// Action IDs of the task control buttons; the button's value is the task
// number.
const (
	ActionPause   = "taskloom_pause"
	ActionResume  = "taskloom_resume"
	ActionCancel  = "taskloom_cancel"
	ActionRetry   = "taskloom_retry"
	ActionApprove = "taskloom_approve"
	ActionDeny    = "taskloom_deny"
)

// maxBlocks is Block Kit's limit of blocks in one message.
const maxBlocks = 50

// controlVerb is the chat command a button stands for.
var controlVerb = map[string]string{ActionPause: "pause", ActionResume: "resume", ActionCancel: "cancel",
	ActionRetry: "retry", ActionApprove: "approve", ActionDeny: "deny"}

// room is a parsed room name: "slack:<channel>[:<thread ts>]".
type room struct {
	Channel string
	Thread  string
}

func parseRoom(name string) (room, error) {
	rest, ok := strings.CutPrefix(name, Platform+":")
	if !ok {
		return room{}, fmt.Errorf("room %q is not a Slack room", name)
	}
	channel, thread, _ := strings.Cut(rest, ":")
	if channel == "" || strings.Contains(thread, ":") {
		return room{}, fmt.Errorf("room %q is not slack:<channel>[:<thread ts>]", name)
	}
	return room{Channel: channel, Thread: thread}, nil
}

// String names the room. Each Slack conversation — public channel,
// private channel, group DM (mpim), DM — has an ID of its own, and so a
// scope of its own (domain.RoomScope); a thread is read by everyone who
// reads its conversation, so it shares the conversation's scope.
func (r room) String() string {
	if r.Thread == "" {
		return Platform + ":" + r.Channel
	}
	return domain.ThreadRoom(Platform, r.Channel, r.Thread, true)
}

// Send posts a notification or task message to a room, in its thread when
// the room names one: one message per SlackTextLimit characters, each a
// section block per SlackBlockLimit characters, the last with buttons for
// m.Tasks. A rate limit is a *plugin.RateLimitedError; nothing is retried
// here.
func (a *Adapter) Send(ctx context.Context, roomName string, m plugin.Outgoing) (plugin.SentMessage, error) {
	r, err := parseRoom(roomName)
	if err != nil {
		return plugin.SentMessage{}, fmt.Errorf("slack: send: %w", err)
	}
	ids, err := a.postTagged(ctx, r, m.Text, m.Tasks, buttons{ended: m.Ended, approvals: m.Approvals}, nil)
	if err != nil {
		return plugin.SentMessage{IDs: ids}, fmt.Errorf("slack: send to %s: %w", roomName, undeliverable(err))
	}
	return plugin.SentMessage{IDs: ids}, nil
}

// Limits implements plugin.Limited with Slack's published limits for
// chat.postMessage, kept to with a margin: about one message a second per
// channel, with short bursts allowed (a channel's threads count with it),
// paced at four in 4.4 s — never more than four in any four seconds, with
// 0.4 s for a request to reach Slack later than the one four before it
// (a window of three in 3.3 s let six go within four seconds, and the
// 429s it drew each paused the channel); and
// a workspace-wide limit Slack gives only as "several hundred messages a
// minute", paced at 300 a minute in bursts of at most 20.
func (a *Adapter) Limits() plugin.Limits {
	return plugin.Limits{
		Global: plugin.Window{N: 20, Span: 4 * time.Second},
		Room:   plugin.Window{N: 4, Span: 4400 * time.Millisecond},
		Bucket: domain.RoomScope,
		// A bot token is one app's in one workspace: what Slack counts.
		Bot: plugin.BotKey(a.opts.BotToken),
	}
}

// NotificationEventType is the metadata event type of the notification
// messages SendOnce posts; the payload holds the message's key, the part
// and the number of parts.
const NotificationEventType = "taskloom_notification"

// Bounds of the search for what an earlier attempt posted.
const (
	// lookupMargin is how much earlier than the first attempt's start the
	// search begins: Slack's clock and ours may disagree.
	lookupMargin = 10 * time.Minute
	lookupPage   = 200
	lookupPages  = 5
)

// SendOnce posts a notification's message as Send does, each part with
// metadata naming it (NotificationEventType, the key and the part). When
// since is set, an earlier attempt at the same message began then and may
// have posted some or all of it before its sender crashed or lost its
// claim: the room's messages since then (its thread's, for a thread) are
// looked up first, and a part found there is not posted again.
//
// A channel that is gone, archived, or that the bot is not in, or a
// deactivated workspace or app, is a *plugin.UndeliverableError, which
// services/notify dead-letters.
func (a *Adapter) SendOnce(ctx context.Context, roomName string, m plugin.Outgoing, key string, since time.Time) (plugin.SentMessage, error) {
	r, err := parseRoom(roomName)
	if err != nil {
		return plugin.SentMessage{}, fmt.Errorf("slack: send: %w", err)
	}
	if key == "" {
		return plugin.SentMessage{}, fmt.Errorf("slack: send to %s: no delivery key", roomName)
	}
	d := &delivery{key: key}
	if !since.IsZero() {
		if d.posted, err = a.findPosted(ctx, r, key, since); err != nil {
			return plugin.SentMessage{}, fmt.Errorf("slack: send to %s: look for an earlier attempt: %w", roomName, undeliverable(err))
		}
		if len(d.posted) > 0 {
			a.log.Info("found an earlier attempt's message; not posting it again", "room", roomName, "key", key, "parts", len(d.posted))
		}
	}
	ids, err := a.postTagged(ctx, r, m.Text, m.Tasks, buttons{ended: m.Ended, approvals: m.Approvals}, d)
	if err != nil {
		return plugin.SentMessage{IDs: ids}, fmt.Errorf("slack: send to %s: %w", roomName, undeliverable(err))
	}
	return plugin.SentMessage{IDs: ids}, nil
}

// delivery names the message a notification goes out in: its parts carry
// metadata with key, and the parts in posted (part → ts) are already in
// the room.
type delivery struct {
	key    string
	posted map[int]string
}

// metadata names part i of n of the message.
func (d *delivery) metadata(i, n int) slackapi.SlackMetadata {
	return slackapi.SlackMetadata{EventType: NotificationEventType,
		EventPayload: map[string]any{"key": d.key, "part": i, "parts": n}}
}

// findPosted looks through the room's messages since the first attempt
// (less lookupMargin), at most lookupPages pages, for parts of the
// message key, and returns their ts by part. When the bot may not read
// the room (a public channel it posts to without being in it, or a
// missing scope) there is nothing to find: it says so and finds nothing.
func (a *Adapter) findPosted(ctx context.Context, r room, key string, since time.Time) (map[int]string, error) {
	oldest := since.Add(-lookupMargin)
	found := map[int]string{}
	cursor := ""
	for range lookupPages {
		var msgs []slackapi.Message
		var next, method string
		var err error
		if r.Thread == "" {
			method = "conversations.history"
			var resp *slackapi.GetConversationHistoryResponse
			resp, err = a.api.GetConversationHistoryContext(ctx, &slackapi.GetConversationHistoryParameters{
				ChannelID: r.Channel, Oldest: slackTS(oldest), Limit: lookupPage, Cursor: cursor, IncludeAllMetadata: true})
			if err == nil {
				msgs, next = resp.Messages, resp.ResponseMetaData.NextCursor
			}
		} else {
			method = "conversations.replies"
			msgs, _, next, err = a.api.GetConversationRepliesContext(ctx, &slackapi.GetConversationRepliesParameters{
				ChannelID: r.Channel, Timestamp: r.Thread, Oldest: slackTS(oldest), Limit: lookupPage, Cursor: cursor, IncludeAllMetadata: true})
		}
		var se slackapi.SlackErrorResponse
		if errors.As(err, &se) && (se.Err == "not_in_channel" || se.Err == "missing_scope") {
			a.log.Warn("cannot read the room to look for an earlier attempt; posting", "room", r.String(), "method", method, "err", se.Err)
			return found, nil
		}
		if err != nil {
			return nil, apiError(method, err)
		}
		for _, m := range msgs {
			if part, ok := partOf(m.Metadata, key); ok {
				found[part] = m.Timestamp
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
	return found, nil
}

// partOf reads the part of message key that metadata names.
func partOf(md slackapi.SlackMetadata, key string) (int, bool) {
	if md.EventType != NotificationEventType || md.EventPayload["key"] != key {
		return 0, false
	}
	part, ok := md.EventPayload["part"].(float64) // JSON numbers
	return int(part), ok && part >= 0
}

// slackTS is t as a Slack message timestamp, "seconds.micros".
func slackTS(t time.Time) string {
	return fmt.Sprintf("%d.%06d", t.Unix(), t.Nanosecond()/1000)
}

// undeliverableCodes are the Web API errors after which no retry can post
// the message: the channel is gone, archived or closed to the bot, the
// workspace or app is deactivated, or Slack does not take the message as
// it is (every attempt sends its first rendering, so it would be refused
// again, holding its room's later messages until given up a day later).
var undeliverableCodes = map[string]bool{
	"channel_not_found": true, "not_in_channel": true, "is_archived": true, "account_inactive": true,
	"msg_too_long": true, "msg_blocks_too_long": true, "no_text": true, "invalid_blocks": true,
	"invalid_blocks_format": true, "too_many_attachments": true, "invalid_attachments": true,
	"invalid_metadata_format": true, "invalid_metadata_schema": true, "metadata_too_large": true,
	"restricted_action": true, "restricted_action_read_only_channel": true,
	"restricted_action_thread_only_channel": true, "restricted_action_non_threadable_channel": true,
	"cannot_reply_to_message": true, "ekm_access_denied": true, "invalid_arguments": true,
}

// undeliverable marks err undeliverable when Slack answered one of
// undeliverableCodes.
func undeliverable(err error) error {
	var se slackapi.SlackErrorResponse
	if errors.As(err, &se) && undeliverableCodes[se.Err] {
		return &plugin.UndeliverableError{Err: err}
	}
	return err
}

// buttons are the task buttons a message carries besides the controls of
// its tasks: Retry for ended tasks, Approve / Deny for tool calls.
type buttons struct {
	ended     []int64
	approvals []plugin.ApprovalRef
}

// post sends text to r as one or more messages and returns their ts; the
// last carries the controls of tasks and the other buttons, and the end of
// text whole when it fits (render.SplitKeepingEnd): a request to approve
// shows all of its call above its Approve.
func (a *Adapter) post(ctx context.Context, r room, text string, tasks []int64, more buttons) ([]string, error) {
	return a.postTagged(ctx, r, text, tasks, more, nil)
}

// postTagged is post for a notification's message when d is set: each
// part carries d's metadata, and a part d says is posted already is not
// posted again.
func (a *Adapter) postTagged(ctx context.Context, r room, text string, tasks []int64, more buttons, d *delivery) ([]string, error) {
	parts := render.SplitKeepingEnd(text, render.SlackTextLimit)
	var ids []string
	for i, part := range parts {
		if ts, ok := d.done(i); ok {
			ids = append(ids, ts)
			continue
		}
		var controls []int64
		var extra buttons
		if i == len(parts)-1 {
			controls, extra = tasks, more
		}
		opts := []slackapi.MsgOption{
			slackapi.MsgOptionText(part, false),
			slackapi.MsgOptionDisableLinkUnfurl(),
		}
		var summaries map[int64]string
		if len(parts) == 1 {
			summaries = a.longSummaries(ctx, extra.ended)
		}
		if blocks := messageBlocks(part, controls, extra, summaries); len(blocks) > 0 {
			opts = append(opts, slackapi.MsgOptionBlocks(blocks...))
		}
		if r.Thread != "" {
			opts = append(opts, slackapi.MsgOptionTS(r.Thread))
		}
		if d != nil {
			opts = append(opts, slackapi.MsgOptionMetadata(d.metadata(i, len(parts))))
		}
		_, ts, err := a.api.PostMessageContext(ctx, r.Channel, opts...)
		if err != nil {
			return ids, apiError("chat.postMessage", err)
		}
		ids = append(ids, ts)
		a.posted(r)
	}
	return ids, nil
}

// done returns the ts of part i when it is posted already.
func (d *delivery) done(i int) (string, bool) {
	if d == nil {
		return "", false
	}
	ts, ok := d.posted[i]
	return ts, ok
}

// postEphemeral shows text to user only, in r.
func (a *Adapter) postEphemeral(ctx context.Context, r room, user, text string) error {
	for _, part := range render.Split(text, render.SlackTextLimit) {
		opts := []slackapi.MsgOption{slackapi.MsgOptionText(part, false)}
		if blocks := messageBlocks(part, nil, buttons{}, nil); len(blocks) > 0 {
			opts = append(opts, slackapi.MsgOptionBlocks(blocks...))
		}
		if r.Thread != "" {
			opts = append(opts, slackapi.MsgOptionTS(r.Thread))
		}
		if _, err := a.api.PostEphemeralContext(ctx, r.Channel, user, opts...); err != nil {
			return apiError("chat.postEphemeral", err)
		}
	}
	return nil
}

// respond posts a reply to a slash command's or an interaction's response
// URL.
func (a *Adapter) respond(ctx context.Context, responseURL string, resp plugin.Response) error {
	for _, msg := range responseMessages(resp) {
		opts := []slackapi.MsgOption{
			slackapi.MsgOptionResponseURL(responseURL, msg.ResponseType),
			slackapi.MsgOptionText(msg.Text, false),
		}
		if len(msg.Blocks) > 0 {
			opts = append(opts, slackapi.MsgOptionBlocks(msg.Blocks...))
		}
		if _, _, err := a.api.PostMessageContext(ctx, "", opts...); err != nil {
			return apiError("response_url", err)
		}
	}
	return nil
}

// commandResponse is a message as a slash command's acknowledgement or
// response URL takes it.
type commandResponse struct {
	ResponseType string           `json:"response_type"`
	Text         string           `json:"text"`
	Blocks       []slackapi.Block `json:"blocks,omitempty"`
}

// responseMessages renders a reply as the messages that carry it.
func responseMessages(resp plugin.Response) []commandResponse {
	typ := slackapi.ResponseTypeInChannel
	var tasks []int64
	if resp.Ephemeral {
		typ = slackapi.ResponseTypeEphemeral
	} else if resp.TaskNumber > 0 {
		tasks = []int64{resp.TaskNumber}
	}
	parts := render.Split(resp.Text, render.SlackTextLimit)
	out := make([]commandResponse, 0, len(parts))
	for i, part := range parts {
		var controls []int64
		if i == len(parts)-1 {
			controls = tasks
		}
		out = append(out, commandResponse{ResponseType: typ, Text: part, Blocks: messageBlocks(part, controls, buttons{}, nil)})
	}
	return out
}

// maxAckBytes keeps an answer in an acknowledgement well under Socket
// Mode's 20 KB limit on acks; a longer one goes to the response URL.
const maxAckBytes = 15000

// ackBody is the first message of resp as an acknowledgement's body, and
// whether it fits; the rest, if any, are returned to be sent after.
func ackBody(resp plugin.Response) (json.RawMessage, []commandResponse, bool) {
	msgs := responseMessages(resp)
	if len(msgs) == 0 {
		return nil, nil, true
	}
	raw, err := json.Marshal(msgs[0])
	if err != nil || len(raw) > maxAckBytes {
		return nil, msgs, false
	}
	return raw, msgs[1:], true
}

// messageBlocks lays text out as section blocks of at most SlackBlockLimit
// characters — except the summaries of tasks in summaries, which go in a
// markdown block each (see summaryBlocks) — then Approve / Deny per tool
// call waiting for a person, one row of control buttons per task and a
// Retry button per ended task, within Block Kit's 50 blocks (buttons go
// first, the text field still carries it all).
func messageBlocks(text string, tasks []int64, more buttons, summaries map[int64]string) []slackapi.Block {
	blocks := summaryBlocks(text, summaries)
	if blocks == nil {
		blocks = sectionBlocks(text)
	}
	if len(blocks) > maxBlocks {
		return nil // the text alone, unformatted, rather than a refused message
	}
	label := func(s string) *slackapi.TextBlockObject {
		return slackapi.NewTextBlockObject(slackapi.PlainTextType, s, true, false)
	}
	for _, ref := range more.approvals {
		if len(blocks) >= maxBlocks {
			break
		}
		num := strconv.FormatInt(ref.Task, 10)
		value := decisionValue(ref)
		blocks = append(blocks, slackapi.NewActionBlock("taskloom_approval_"+num,
			slackapi.NewButtonBlockElement(ActionApprove, value, label("✅ Approve #"+num)).WithStyle(slackapi.StylePrimary),
			slackapi.NewButtonBlockElement(ActionDeny, value, label("🚫 Deny #"+num)).WithStyle(slackapi.StyleDanger)))
	}
	for _, n := range tasks {
		if len(blocks) >= maxBlocks {
			break
		}
		blocks = append(blocks, controls(n))
	}
	for _, n := range more.ended {
		if len(blocks) >= maxBlocks {
			break
		}
		blocks = append(blocks, slackapi.NewActionBlock("taskloom_ended_"+strconv.FormatInt(n, 10), taskButton(ActionRetry, n)))
	}
	return blocks
}

// decisionValue is the value of an Approve or Deny button:
// "<task number>:<request id>", bound to the call it was shown with.
func decisionValue(ref plugin.ApprovalRef) string {
	return strconv.FormatInt(ref.Task, 10) + ":" + ref.Call
}

// pressText is the chat command a press of the button action with value
// stands for ("pause #12", "approve #12 call:5f0c…"), or false for a
// value that is not one of ours — an Approve or Deny without the id of
// its call among them, which would land on whatever the task asks now.
func pressText(action, value string) (string, int64, bool) {
	verb, known := controlVerb[action]
	if !known {
		return "", 0, false
	}
	return actions.PressText(verb, value)
}

// sectionBlocks lays text out as section blocks of at most
// SlackBlockLimit characters.
func sectionBlocks(text string) []slackapi.Block {
	var blocks []slackapi.Block
	for _, chunk := range render.Split(text, render.SlackBlockLimit) {
		if strings.TrimSpace(chunk) == "" {
			continue
		}
		blocks = append(blocks, slackapi.NewSectionBlock(slackapi.NewTextBlockObject(slackapi.MarkdownType, chunk, false, false), nil, nil))
	}
	return blocks
}

// controls is the Pause / Resume / Cancel row for task n.
func controls(n int64) slackapi.Block {
	return slackapi.NewActionBlock("taskloom_task_"+strconv.FormatInt(n, 10),
		taskButton(ActionPause, n), taskButton(ActionResume, n), taskButton(ActionCancel, n))
}

// taskButton is the button for one of the task actions (Pause, Resume,
// Cancel, Retry) of task n: the value is the number, and Cancel is red and
// asks first.
func taskButton(action string, n int64) *slackapi.ButtonBlockElement {
	num := strconv.FormatInt(n, 10)
	label := func(s string) *slackapi.TextBlockObject {
		return slackapi.NewTextBlockObject(slackapi.PlainTextType, s, true, false)
	}
	switch action {
	case ActionPause:
		return slackapi.NewButtonBlockElement(ActionPause, num, label("⏸ Pause #"+num))
	case ActionResume:
		return slackapi.NewButtonBlockElement(ActionResume, num, label("▶ Resume #"+num))
	case ActionRetry:
		return slackapi.NewButtonBlockElement(ActionRetry, num, label("🔁 Retry #"+num))
	}
	return slackapi.NewButtonBlockElement(ActionCancel, num, label("✖ Cancel #"+num)).
		WithStyle(slackapi.StyleDanger).
		WithConfirm(slackapi.NewConfirmationBlockObject(
			label("Cancel task #"+num+"?"),
			slackapi.NewTextBlockObject(slackapi.MarkdownType, "The task stops for good; it cannot be resumed.", false, false),
			label("Cancel it"), label("Keep it")))
}

// apiError wraps a Slack Web API error with the method, turning a rate
// limit into a *plugin.RateLimitedError.
func apiError(method string, err error) error {
	wrapped := fmt.Errorf("%s: %w", method, err)
	var rl *slackapi.RateLimitedError
	var sc slackapi.StatusCodeError
	var se slackapi.SlackErrorResponse
	switch {
	case errors.As(err, &rl):
		return &plugin.RateLimitedError{RetryAfter: rl.RetryAfter, Err: wrapped}
	case errors.As(err, &sc) && sc.Code == http.StatusTooManyRequests:
		return &plugin.RateLimitedError{Err: wrapped} // no Retry-After: the outbox's backoff
	case errors.As(err, &se) && se.Err == "ratelimited":
		return &plugin.RateLimitedError{Err: wrapped}
	}
	return wrapped
}

// replyOnce sends resp, a reply to a person, with fn once: a rate limit is
// not waited out in this process but returned, and the runtime puts the
// reply in the outbox at once (plugin.Runtime.HandleMessage), which sends
// it — on any replica, under the reply's key — when the limit allows. A
// replica killed meanwhile loses nothing. An ephemeral reply, which the
// outbox does not take, and one with no store to queue it in, wait it out
// here (retryRateLimited).
func (a *Adapter) replyOnce(ctx context.Context, resp plugin.Response, fn func() error) error {
	if resp.Ephemeral || a.rt.Store() == nil {
		return a.retryRateLimited(ctx, fn)
	}
	return fn()
}

// retryRateLimited runs fn, waiting out a rate limit (on the clock, at most
// maxReplyWait) up to replyAttempts times: for replies to people which no
// outbox retries (ephemeral ones, slash commands' answers).
func (a *Adapter) retryRateLimited(ctx context.Context, fn func() error) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = fn()
		var rl *plugin.RateLimitedError
		if !errors.As(err, &rl) || attempt >= replyAttempts {
			return err
		}
		wait := min(max(rl.RetryAfter, time.Second), maxReplyWait)
		a.log.Warn("reply rate limited; waiting", "retry_in", wait, "attempt", attempt)
		if err := clock.Sleep(ctx, a.clk, wait); err != nil {
			return errors.Join(err, fmt.Errorf("while rate limited: %w", rl))
		}
	}
}
