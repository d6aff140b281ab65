package slackfake

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Kinds of message.
const (
	KindPost      = "post"      // chat.postMessage
	KindEphemeral = "ephemeral" // chat.postEphemeral: shown to User only
	KindResponse  = "response"  // posted to a response URL
	KindAck       = "ack"       // an immediate answer in an acknowledgement (ParseResponse)
)

// Message is a message the app sent, as Slack would show it.
type Message struct {
	Kind     string
	Channel  string
	TS       string // "" for response-URL messages, which Slack gives no ID back for
	ThreadTS string // the thread it was posted in, "" at the top level
	// User is who sees an ephemeral message (or the command's user, for a
	// response).
	User string
	Text string
	// Blocks are the message's Block Kit blocks; RawBlocks is their JSON
	// as sent.
	Blocks    []Block
	RawBlocks json.RawMessage
	// ResponseType is a response's "ephemeral" or "in_channel".
	ResponseType string
	// LinkNames is set when the message asked Slack to turn @names into
	// mentions.
	LinkNames bool
	Unfurl    string // the unfurl_links parameter as sent
	Edits     int    // chat.update calls it has had
	// Metadata is the message metadata it was posted (or last updated)
	// with; nil when none.
	Metadata *Metadata
	Time     time.Time
}

// Metadata is message metadata, as chat.postMessage takes it and
// conversations.history returns it with include_all_metadata: an event
// type and a JSON object of the app's own.
type Metadata struct {
	EventType    string         `json:"event_type"`
	EventPayload map[string]any `json:"event_payload"`
}

func (m *Message) clone() Message {
	c := *m
	c.Blocks = slices.Clone(m.Blocks)
	c.RawBlocks = slices.Clone(m.RawBlocks)
	if m.Metadata != nil {
		md := *m.Metadata
		c.Metadata = &md
	}
	return c
}

// parseMetadata reads a metadata parameter as Slack does: JSON, an
// event_type string and an event_payload object, or the error Slack
// answers.
func parseMetadata(raw string) (*Metadata, string) {
	if strings.TrimSpace(raw) == "" {
		return nil, ""
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &fields); err != nil {
		return nil, "invalid_metadata_format"
	}
	var md Metadata
	if json.Unmarshal(fields["event_type"], &md.EventType) != nil || md.EventType == "" ||
		json.Unmarshal(fields["event_payload"], &md.EventPayload) != nil || md.EventPayload == nil {
		return nil, "invalid_metadata_schema"
	}
	return &md, ""
}

// Visible reports whether everyone in the channel sees the message.
func (m Message) Visible() bool {
	switch m.Kind {
	case KindPost:
		return true
	case KindResponse, KindAck:
		return m.ResponseType == "in_channel"
	}
	return false
}

// Block is a Block Kit block, as much of it as the fake reads.
type Block struct {
	Type     string    `json:"type"`
	BlockID  string    `json:"block_id,omitempty"`
	Text     *Text     `json:"text,omitempty"`
	Elements []Element `json:"elements,omitempty"`
}

// Text is a Block Kit text object.
type Text struct {
	Type     string `json:"type"` // "mrkdwn" or "plain_text"
	Text     string `json:"text"`
	Emoji    bool   `json:"emoji,omitempty"`
	Verbatim bool   `json:"verbatim,omitempty"`
}

// Element is a block element; the fake knows buttons.
type Element struct {
	Type     string          `json:"type"`
	ActionID string          `json:"action_id,omitempty"`
	Text     *Text           `json:"text,omitempty"`
	Value    string          `json:"value,omitempty"`
	Style    string          `json:"style,omitempty"`
	URL      string          `json:"url,omitempty"`
	Confirm  json.RawMessage `json:"confirm,omitempty"`
}

// Button is a button of a message, with the block it is in.
type Button struct {
	BlockID  string
	ActionID string
	Value    string
	Label    string
	Style    string
	Confirm  bool
}

// Buttons lists the message's buttons in order.
func (m Message) Buttons() []Button {
	var out []Button
	for _, b := range m.Blocks {
		if b.Type != "actions" {
			continue
		}
		for _, e := range b.Elements {
			if e.Type != "button" {
				continue
			}
			label := ""
			if e.Text != nil {
				label = e.Text.Text
			}
			out = append(out, Button{BlockID: b.BlockID, ActionID: e.ActionID, Value: e.Value, Label: label, Style: e.Style, Confirm: len(e.Confirm) > 0})
		}
	}
	return out
}

// SectionTexts lists the texts of the message's section blocks.
func (m Message) SectionTexts() []string {
	var out []string
	for _, b := range m.Blocks {
		if b.Type == "section" && b.Text != nil {
			out = append(out, b.Text.Text)
		}
	}
	return out
}

// BlockText is the sections' texts joined with newlines: what Slack shows
// when the message has blocks.
func (m Message) BlockText() string { return strings.Join(m.SectionTexts(), "\n") }

// Shown is what people read: the blocks' text when there are blocks, else
// the text.
func (m Message) Shown() string {
	if len(m.Blocks) > 0 {
		return m.BlockText()
	}
	return m.Text
}

// Special mentions: <!channel>, <!here>, <!everyone>, <@U…>, <!subteam^…>.
var (
	reSpecial   = regexp.MustCompile(`<(!channel|!here|!everyone|!subteam\^[A-Z0-9]+|@[UW][A-Z0-9]+)(?:\|[^>]*)?>`)
	reLinkNames = regexp.MustCompile(`(?i)(?:^|[^\w])@(channel|here|everyone)\b`)
)

// Pings lists whom the message would notify beyond its channel's usual
// notifications: every special mention (<!channel>, <!here>, <!everyone>,
// <@U…>, <!subteam^…>) in its text and in its blocks' text, and, when it
// was sent with link_names, every bare @channel, @here or @everyone.
func (m Message) Pings() []string {
	texts := []string{m.Text}
	texts = append(texts, m.SectionTexts()...)
	var out []string
	for _, s := range texts {
		for _, sm := range reSpecial.FindAllStringSubmatch(s, -1) {
			out = append(out, sm[1])
		}
		if m.LinkNames {
			for _, sm := range reLinkNames.FindAllStringSubmatch(s, -1) {
				out = append(out, "!"+strings.ToLower(sm[1]))
			}
		}
	}
	return out
}

// errInvalidBlocks is Slack's answer to blocks that break its rules.
var errInvalidBlocks = errors.New("invalid_blocks")

// parseBlocks reads and checks a message's blocks as Slack does.
func parseBlocks(raw string) ([]Block, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	var blocks []Block
	if err := json.Unmarshal([]byte(raw), &blocks); err != nil {
		return nil, fmt.Errorf("%w: not a JSON array of blocks: %v", errInvalidBlocks, err)
	}
	if err := CheckBlocks(blocks); err != nil {
		return nil, err
	}
	return blocks, nil
}

// CheckBlocks applies Block Kit's limits: at most 50 blocks with unique
// block IDs; a section's text 1–3000 characters; an actions block 1–25
// elements with action IDs unique within it; a button's label at most 75
// characters of plain text and its value at most 2000.
func CheckBlocks(blocks []Block) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", errInvalidBlocks, fmt.Sprintf(format, args...))
	}
	if len(blocks) > MaxBlocks {
		return bad("%d blocks; at most %d", len(blocks), MaxBlocks)
	}
	ids := map[string]bool{}
	for i, b := range blocks {
		if b.BlockID != "" {
			if ids[b.BlockID] {
				return bad("block %d: duplicate block_id %q", i, b.BlockID)
			}
			if len(b.BlockID) > MaxIDLength {
				return bad("block %d: block_id longer than %d", i, MaxIDLength)
			}
			ids[b.BlockID] = true
		}
		switch b.Type {
		case "section":
			if b.Text == nil || b.Text.Text == "" {
				return bad("block %d: a section needs text", i)
			}
			if b.Text.Type != "mrkdwn" && b.Text.Type != "plain_text" {
				return bad("block %d: text type %q", i, b.Text.Type)
			}
			if n := utf8.RuneCountInString(b.Text.Text); n > MaxSectionText {
				return bad("block %d: section text is %d characters; at most %d", i, n, MaxSectionText)
			}
		case "actions":
			if len(b.Elements) == 0 || len(b.Elements) > MaxActionElements {
				return bad("block %d: %d elements; 1 to %d", i, len(b.Elements), MaxActionElements)
			}
			actions := map[string]bool{}
			for j, e := range b.Elements {
				if e.ActionID != "" {
					if actions[e.ActionID] {
						return bad("block %d element %d: duplicate action_id %q", i, j, e.ActionID)
					}
					if len(e.ActionID) > MaxIDLength {
						return bad("block %d element %d: action_id longer than %d", i, j, MaxIDLength)
					}
					actions[e.ActionID] = true
				}
				if e.Type != "button" {
					continue
				}
				if e.Text == nil || e.Text.Type != "plain_text" || e.Text.Text == "" {
					return bad("block %d element %d: a button needs plain_text", i, j)
				}
				if n := utf8.RuneCountInString(e.Text.Text); n > MaxButtonText {
					return bad("block %d element %d: button text is %d characters; at most %d", i, j, n, MaxButtonText)
				}
				if len(e.Value) > MaxButtonValue {
					return bad("block %d element %d: button value longer than %d", i, j, MaxButtonValue)
				}
				if e.Style != "" && e.Style != "primary" && e.Style != "danger" {
					return bad("block %d element %d: style %q", i, j, e.Style)
				}
			}
		case "divider", "context", "header", "image", "rich_text", "markdown":
		default:
			return bad("block %d: unknown type %q", i, b.Type)
		}
	}
	return nil
}

// ParseResponse reads an immediate answer — the body of an HTTP
// acknowledgement of a slash command, or a Socket Mode ack's payload — as
// the message Slack would show. An empty body is no message (ok false).
func ParseResponse(raw []byte) (Message, bool, error) {
	if len(strings.TrimSpace(string(raw))) == 0 || string(raw) == "null" {
		return Message{}, false, nil
	}
	var body struct {
		Text         string          `json:"text"`
		Blocks       json.RawMessage `json:"blocks"`
		ResponseType string          `json:"response_type"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return Message{}, false, fmt.Errorf("immediate response is not a JSON message: %w", err)
	}
	blocks, err := parseBlocks(string(body.Blocks))
	if err != nil {
		return Message{}, false, err
	}
	if body.Text == "" && len(blocks) == 0 {
		return Message{}, false, errors.New("no_text")
	}
	if n := utf8.RuneCountInString(body.Text); n > MaxTextLength {
		return Message{}, false, fmt.Errorf("msg_too_long: %d characters", n)
	}
	rt := body.ResponseType
	if rt == "" {
		rt = defaultResponseType
	}
	return Message{Kind: KindAck, Text: body.Text, Blocks: blocks, RawBlocks: body.Blocks, ResponseType: rt}, true, nil
}
