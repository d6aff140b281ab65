package slackfake

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
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
	Deleted   bool   // chat.delete took it out of the channel
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
	// Markdown is a markdown block's text: standard Markdown, which Slack
	// renders itself (its "text" is a string, not a text object).
	Markdown string `json:"-"`
	// Input blocks (modals and Home tabs): the label, the one element,
	// whether it may be left empty, and the hint under it.
	Label    *Text    `json:"label,omitempty"`
	Element  *Element `json:"element,omitempty"`
	Optional bool     `json:"optional,omitempty"`
	Hint     *Text    `json:"hint,omitempty"`
}

// UnmarshalJSON reads a block, whose "text" is a text object in most
// blocks and a plain string in a markdown block.
func (b *Block) UnmarshalJSON(raw []byte) error {
	type plain Block
	var aux struct {
		plain
		Text json.RawMessage `json:"text"`
	}
	if err := json.Unmarshal(raw, &aux); err != nil {
		return err
	}
	*b = Block(aux.plain)
	b.Text = nil
	if len(aux.Text) == 0 || string(aux.Text) == "null" {
		return nil
	}
	if aux.Text[0] == '"' {
		return json.Unmarshal(aux.Text, &b.Markdown)
	}
	b.Text = &Text{}
	return json.Unmarshal(aux.Text, b.Text)
}

// Text is a Block Kit text object.
type Text struct {
	Type     string `json:"type"` // "mrkdwn" or "plain_text"
	Text     string `json:"text"`
	Emoji    bool   `json:"emoji,omitempty"`
	Verbatim bool   `json:"verbatim,omitempty"`
}

// Element is a block element: a button, one of the input elements the
// fake knows (plain_text_input, static_select, number_input), or, in a
// context block, a text object.
type Element struct {
	Type     string          `json:"type"`
	ActionID string          `json:"action_id,omitempty"`
	Text     *Text           `json:"text,omitempty"`
	Value    string          `json:"value,omitempty"`
	Style    string          `json:"style,omitempty"`
	URL      string          `json:"url,omitempty"`
	Confirm  json.RawMessage `json:"confirm,omitempty"`
	// Content is the text of a context block's mrkdwn or plain_text
	// element, whose "text" is a string.
	Content string `json:"-"`

	// Input elements.
	Multiline        bool           `json:"multiline,omitempty"`
	MinLength        *int           `json:"min_length,omitempty"`
	MaxLength        *int           `json:"max_length,omitempty"`
	InitialValue     string         `json:"initial_value,omitempty"`
	Options          []SelectOption `json:"options,omitempty"`
	InitialOption    *SelectOption  `json:"initial_option,omitempty"`
	IsDecimalAllowed *bool          `json:"is_decimal_allowed,omitempty"`
	MinValue         string         `json:"min_value,omitempty"`
	MaxValue         string         `json:"max_value,omitempty"`
}

// UnmarshalJSON reads an element, whose "text" is a text object in a
// button and a plain string in a context block's text element.
func (e *Element) UnmarshalJSON(raw []byte) error {
	type plain Element
	var aux struct {
		plain
		Text json.RawMessage `json:"text"`
	}
	if err := json.Unmarshal(raw, &aux); err != nil {
		return err
	}
	*e = Element(aux.plain)
	e.Text = nil
	if len(aux.Text) == 0 || string(aux.Text) == "null" {
		return nil
	}
	if aux.Text[0] == '"' {
		return json.Unmarshal(aux.Text, &e.Content)
	}
	e.Text = &Text{}
	return json.Unmarshal(aux.Text, e.Text)
}

// SelectOption is an option of a select menu.
type SelectOption struct {
	Text  *Text  `json:"text"`
	Value string `json:"value"`
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

// MarkdownTexts lists the texts of the message's markdown blocks.
func (m Message) MarkdownTexts() []string {
	var out []string
	for _, b := range m.Blocks {
		if b.Type == "markdown" {
			out = append(out, b.Markdown)
		}
	}
	return out
}

// BlockText is the texts of the sections and markdown blocks, in order,
// joined with newlines: what Slack shows when the message has blocks.
func (m Message) BlockText() string {
	var out []string
	for _, b := range m.Blocks {
		switch {
		case b.Type == "section" && b.Text != nil:
			out = append(out, b.Text.Text)
		case b.Type == "markdown":
			out = append(out, b.Markdown)
		}
	}
	return strings.Join(out, "\n")
}

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
// <@U…>, <!subteam^…>) in its text and in its sections' and markdown
// blocks' text, and, when it
// was sent with link_names, every bare @channel, @here or @everyone.
func (m Message) Pings() []string {
	texts := []string{m.Text}
	texts = append(texts, m.SectionTexts()...)
	// A markdown block's text is Markdown, which Slack turns into its own
	// markup: a <!channel> in it is taken to ping as anywhere else.
	texts = append(texts, m.MarkdownTexts()...)
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

// CheckBlocks applies Block Kit's limits to a message's blocks: at most 50
// blocks with unique block IDs, each as checkBlock says, and at most
// 12,000 characters of markdown blocks in all.
func CheckBlocks(blocks []Block) error {
	return checkBlocks(blocks, MaxBlocks)
}

func checkBlocks(blocks []Block, maxBlocks int) error {
	if len(blocks) > maxBlocks {
		return badBlocks("%d blocks; at most %d", len(blocks), maxBlocks)
	}
	ids := map[string]bool{}
	markdown := 0
	for i, b := range blocks {
		if b.BlockID != "" {
			if ids[b.BlockID] {
				return badBlocks("block %d: duplicate block_id %q", i, b.BlockID)
			}
			if len(b.BlockID) > MaxIDLength {
				return badBlocks("block %d: block_id longer than %d", i, MaxIDLength)
			}
			ids[b.BlockID] = true
		}
		if err := checkBlock(i, b); err != nil {
			return err
		}
		if b.Type == "markdown" {
			markdown += utf8.RuneCountInString(b.Markdown)
		}
	}
	if markdown > MaxMarkdownText {
		return badBlocks("%d characters in markdown blocks; at most %d in all", markdown, MaxMarkdownText)
	}
	return nil
}

func badBlocks(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errInvalidBlocks, fmt.Sprintf(format, args...))
}

// checkBlock applies the rules of one block: a section's text 1–3000
// characters; an actions block 1–25 elements with action IDs unique within
// it, a button's label at most 75 characters of plain text and its value
// at most 2000; a markdown block's text not empty; a header's plain text
// 1–150 characters; a context block 1–10 elements; an input block a label
// of at most 2000 characters and one element the fake knows.
func checkBlock(i int, b Block) error {
	bad := func(format string, args ...any) error {
		return badBlocks("block %d: %s", i, fmt.Sprintf(format, args...))
	}
	switch b.Type {
	case "section":
		if b.Text == nil || b.Text.Text == "" {
			return bad("a section needs text")
		}
		if b.Text.Type != "mrkdwn" && b.Text.Type != "plain_text" {
			return bad("text type %q", b.Text.Type)
		}
		if n := utf8.RuneCountInString(b.Text.Text); n > MaxSectionText {
			return bad("section text is %d characters; at most %d", n, MaxSectionText)
		}
	case "actions":
		if len(b.Elements) == 0 || len(b.Elements) > MaxActionElements {
			return bad("%d elements; 1 to %d", len(b.Elements), MaxActionElements)
		}
		actions := map[string]bool{}
		for j, e := range b.Elements {
			if e.ActionID != "" {
				if actions[e.ActionID] {
					return bad("element %d: duplicate action_id %q", j, e.ActionID)
				}
				if len(e.ActionID) > MaxIDLength {
					return bad("element %d: action_id longer than %d", j, MaxIDLength)
				}
				actions[e.ActionID] = true
			}
			if e.Type != "button" {
				continue
			}
			if e.Text == nil || e.Text.Type != "plain_text" || e.Text.Text == "" {
				return bad("element %d: a button needs plain_text", j)
			}
			if n := utf8.RuneCountInString(e.Text.Text); n > MaxButtonText {
				return bad("element %d: button text is %d characters; at most %d", j, n, MaxButtonText)
			}
			if len(e.Value) > MaxButtonValue {
				return bad("element %d: button value longer than %d", j, MaxButtonValue)
			}
			if e.Style != "" && e.Style != "primary" && e.Style != "danger" {
				return bad("element %d: style %q", j, e.Style)
			}
		}
	case "markdown":
		if b.Markdown == "" {
			return bad("a markdown block needs text")
		}
	case "header":
		if b.Text == nil || b.Text.Type != "plain_text" || b.Text.Text == "" {
			return bad("a header needs plain_text")
		}
		if n := utf8.RuneCountInString(b.Text.Text); n > MaxHeaderText {
			return bad("header text is %d characters; at most %d", n, MaxHeaderText)
		}
	case "context":
		if len(b.Elements) == 0 || len(b.Elements) > MaxContextElements {
			return bad("%d elements; 1 to %d", len(b.Elements), MaxContextElements)
		}
	case "input":
		return checkInput(bad, b)
	case "divider", "image", "rich_text":
	default:
		return bad("unknown type %q", b.Type)
	}
	return nil
}

// checkInput applies the rules of an input block and its element: a
// plain_text_input's lengths within 0–3000 (min) and 1–3000 (max); a
// static_select's 1–100 options, each with plain text of at most 75
// characters and a value of at most 150; a number_input's
// is_decimal_allowed given, its bounds numbers.
func checkInput(bad func(string, ...any) error, b Block) error {
	if b.Label == nil || b.Label.Type != "plain_text" || b.Label.Text == "" {
		return bad("an input needs a plain_text label")
	}
	if n := utf8.RuneCountInString(b.Label.Text); n > MaxLabelText {
		return bad("label is %d characters; at most %d", n, MaxLabelText)
	}
	e := b.Element
	if e == nil {
		return bad("an input needs an element")
	}
	if len(e.ActionID) > MaxIDLength {
		return bad("action_id longer than %d", MaxIDLength)
	}
	switch e.Type {
	case "plain_text_input":
		if e.MinLength != nil && (*e.MinLength < 0 || *e.MinLength > MaxInputLength) {
			return bad("min_length %d; 0 to %d", *e.MinLength, MaxInputLength)
		}
		if e.MaxLength != nil && (*e.MaxLength < 1 || *e.MaxLength > MaxInputLength) {
			return bad("max_length %d; 1 to %d", *e.MaxLength, MaxInputLength)
		}
	case "static_select":
		if len(e.Options) == 0 || len(e.Options) > MaxSelectOptions {
			return bad("%d options; 1 to %d", len(e.Options), MaxSelectOptions)
		}
		for j, o := range e.Options {
			if o.Text == nil || o.Text.Type != "plain_text" || o.Text.Text == "" || utf8.RuneCountInString(o.Text.Text) > MaxOptionText {
				return bad("option %d: plain_text of 1 to %d characters", j, MaxOptionText)
			}
			if o.Value == "" || len(o.Value) > MaxOptionValue {
				return bad("option %d: a value of 1 to %d characters", j, MaxOptionValue)
			}
		}
		if e.InitialOption != nil && e.option(e.InitialOption.Value) == nil {
			return bad("initial_option %q is not an option", e.InitialOption.Value)
		}
	case "number_input":
		if e.IsDecimalAllowed == nil {
			return bad("a number_input needs is_decimal_allowed")
		}
		for _, v := range []string{e.MinValue, e.MaxValue} {
			if _, err := strconv.ParseFloat(v, 64); v != "" && err != nil {
				return bad("bound %q is not a number", v)
			}
		}
	case "checkboxes", "radio_buttons", "datepicker", "timepicker", "users_select", "conversations_select", "channels_select", "email_text_input", "url_text_input", "rich_text_input":
	default:
		return bad("unknown input element %q", e.Type)
	}
	return nil
}

// option returns the select's option with value, or nil.
func (e *Element) option(value string) *SelectOption {
	for i := range e.Options {
		if e.Options[i].Value == value {
			return &e.Options[i]
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
