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

func (r room) String() string {
	if r.Thread == "" {
		return Platform + ":" + r.Channel
	}
	return Platform + ":" + r.Channel + ":" + r.Thread
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
	ids, err := a.post(ctx, r, m.Text, m.Tasks, buttons{ended: m.Ended, approvals: m.Approvals})
	if err != nil {
		return plugin.SentMessage{IDs: ids}, fmt.Errorf("slack: send to %s: %w", roomName, err)
	}
	return plugin.SentMessage{IDs: ids}, nil
}

// buttons are the task buttons a message carries besides the controls of
// its tasks: Retry for ended tasks, Approve / Deny for tool calls.
type buttons struct{ ended, approvals []int64 }

// post sends text to r as one or more messages and returns their ts; the
// last carries the controls of tasks and the other buttons.
func (a *Adapter) post(ctx context.Context, r room, text string, tasks []int64, more buttons) ([]string, error) {
	parts := render.Split(text, render.SlackTextLimit)
	var ids []string
	for i, part := range parts {
		var controls []int64
		var extra buttons
		if i == len(parts)-1 {
			controls, extra = tasks, more
		}
		opts := []slackapi.MsgOption{
			slackapi.MsgOptionText(part, false),
			slackapi.MsgOptionDisableLinkUnfurl(),
		}
		if blocks := messageBlocks(part, controls, extra); len(blocks) > 0 {
			opts = append(opts, slackapi.MsgOptionBlocks(blocks...))
		}
		if r.Thread != "" {
			opts = append(opts, slackapi.MsgOptionTS(r.Thread))
		}
		_, ts, err := a.api.PostMessageContext(ctx, r.Channel, opts...)
		if err != nil {
			return ids, apiError("chat.postMessage", err)
		}
		ids = append(ids, ts)
	}
	return ids, nil
}

// postEphemeral shows text to user only, in r.
func (a *Adapter) postEphemeral(ctx context.Context, r room, user, text string) error {
	for _, part := range render.Split(text, render.SlackTextLimit) {
		opts := []slackapi.MsgOption{slackapi.MsgOptionText(part, false)}
		if blocks := messageBlocks(part, nil, buttons{}); len(blocks) > 0 {
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
		out = append(out, commandResponse{ResponseType: typ, Text: part, Blocks: messageBlocks(part, controls, buttons{})})
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
// characters, then Approve / Deny per tool call waiting for a person, one
// row of control buttons per task and a Retry button per ended task,
// within Block Kit's 50 blocks (buttons go first, the text field still
// carries it all).
func messageBlocks(text string, tasks []int64, more buttons) []slackapi.Block {
	var blocks []slackapi.Block
	for _, chunk := range render.Split(text, render.SlackBlockLimit) {
		if strings.TrimSpace(chunk) == "" {
			continue
		}
		blocks = append(blocks, slackapi.NewSectionBlock(slackapi.NewTextBlockObject(slackapi.MarkdownType, chunk, false, false), nil, nil))
	}
	if len(blocks) > maxBlocks {
		return nil // the text alone, unformatted, rather than a refused message
	}
	label := func(s string) *slackapi.TextBlockObject {
		return slackapi.NewTextBlockObject(slackapi.PlainTextType, s, true, false)
	}
	for _, n := range more.approvals {
		if len(blocks) >= maxBlocks {
			break
		}
		num := strconv.FormatInt(n, 10)
		blocks = append(blocks, slackapi.NewActionBlock("taskloom_approval_"+num,
			slackapi.NewButtonBlockElement(ActionApprove, num, label("✅ Approve #"+num)).WithStyle(slackapi.StylePrimary),
			slackapi.NewButtonBlockElement(ActionDeny, num, label("🚫 Deny #"+num)).WithStyle(slackapi.StyleDanger)))
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
		num := strconv.FormatInt(n, 10)
		blocks = append(blocks, slackapi.NewActionBlock("taskloom_ended_"+num, slackapi.NewButtonBlockElement(ActionRetry, num,
			slackapi.NewTextBlockObject(slackapi.PlainTextType, "🔁 Retry #"+num, true, false))))
	}
	return blocks
}

// controls is the Pause / Resume / Cancel row for task n.
func controls(n int64) slackapi.Block {
	num := strconv.FormatInt(n, 10)
	label := func(s string) *slackapi.TextBlockObject {
		return slackapi.NewTextBlockObject(slackapi.PlainTextType, s, true, false)
	}
	pause := slackapi.NewButtonBlockElement(ActionPause, num, label("⏸ Pause #"+num))
	resume := slackapi.NewButtonBlockElement(ActionResume, num, label("▶ Resume #"+num))
	cancel := slackapi.NewButtonBlockElement(ActionCancel, num, label("✖ Cancel #"+num)).
		WithStyle(slackapi.StyleDanger).
		WithConfirm(slackapi.NewConfirmationBlockObject(
			label("Cancel task #"+num+"?"),
			slackapi.NewTextBlockObject(slackapi.MarkdownType, "The task stops for good; it cannot be resumed.", false, false),
			label("Cancel it"), label("Keep it")))
	return slackapi.NewActionBlock("taskloom_task_"+num, pause, resume, cancel)
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

// retryRateLimited runs fn, waiting out a rate limit (on the clock, at most
// maxReplyWait) up to replyAttempts times: for replies to people, which no
// outbox retries.
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
