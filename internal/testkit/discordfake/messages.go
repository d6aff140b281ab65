package discordfake

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
)

// Message is a message in a channel as the fake keeps it: one the bot
// posted (a channel message, an interaction response or follow-up), or
// one a builder dispatched for a user. Its slices are shared; treat them
// as read-only.
type Message struct {
	ID        string
	ChannelID string
	GuildID   string // "" in a DM
	Author    User
	Content   string
	Embeds    []*discordgo.MessageEmbed
	// Components are decoded with discordgo's own types (ActionsRow, Button…).
	Components []discordgo.MessageComponent
	Files      []File
	// AllowedMentions is the allowed_mentions the request carried, nil when
	// it carried none (Discord then pings everything the content mentions).
	AllowedMentions *discordgo.MessageAllowedMentions
	// Mentions, MentionRoles and MentionEveryone are who the message
	// pinged, computed as Discord does from the content, the replied-to
	// author and allowed_mentions.
	Mentions        []string
	MentionRoles    []string
	MentionEveryone bool
	ReplyTo         string // the message_reference's message ID
	Flags           discordgo.MessageFlags
	// Nonce is the nonce the create request carried, as a string (Discord
	// takes an integer or a string); "" when none.
	Nonce string
	// InteractionID is set on an interaction's response and follow-ups.
	InteractionID string
	Created       time.Time
	Edited        time.Time // zero until edited
	Edits         int
	Deleted       bool

	kind int // Discord's message type: 0 default, 19 reply, 20 command response
}

// File is a file a request uploaded (multipart/form-data, files[n]).
type File struct {
	Name        string
	ContentType string
	Data        []byte
}

// Ephemeral reports whether only the interaction's user sees the message.
func (m Message) Ephemeral() bool { return m.Flags&discordgo.MessageFlagsEphemeral != 0 }

// Buttons returns the message's buttons, row by row.
func (m Message) Buttons() []discordgo.Button {
	var bs []discordgo.Button
	for _, c := range m.Components {
		var row []discordgo.MessageComponent
		switch r := c.(type) {
		case discordgo.ActionsRow:
			row = r.Components
		case *discordgo.ActionsRow:
			row = r.Components
		}
		for _, c := range row {
			switch b := c.(type) {
			case discordgo.Button:
				bs = append(bs, b)
			case *discordgo.Button:
				bs = append(bs, *b)
			}
		}
	}
	return bs
}

// CustomIDs returns the custom IDs of the message's buttons, in order.
func (m Message) CustomIDs() []string {
	var ids []string
	for _, b := range m.Buttons() {
		if b.CustomID != "" {
			ids = append(ids, b.CustomID)
		}
	}
	return ids
}

// Messages returns the messages the bot posted in a channel, in order,
// including interaction responses, follow-ups and deleted ones (Deleted).
func (s *Server) Messages(channelID string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.messagesLocked(channelID)
}

func (s *Server) messagesLocked(channelID string) []Message {
	var ms []Message
	for _, m := range s.messages[channelID] {
		ms = append(ms, *m)
	}
	return ms
}

// Message returns a message the fake knows by ID: one the bot posted or
// one a builder dispatched.
func (s *Server) Message(id string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.byID[id]
	if !ok {
		return Message{}, false
	}
	return *m, true
}

// WaitMessages waits until the bot has posted at least n messages in a
// channel and returns them all.
func (s *Server) WaitMessages(ctx context.Context, channelID string, n int) ([]Message, error) {
	var ms []Message
	err := s.waitFor(ctx, fmt.Sprintf("%d messages in channel %s", n, channelID), func() (bool, string) {
		ms = s.messagesLocked(channelID)
		return len(ms) >= n, strconv.Itoa(len(ms))
	})
	return ms, err
}

// WaitText waits until the bot's messages in a channel, together, contain
// every one of texts, however they were batched into messages, and
// returns them all.
func (s *Server) WaitText(ctx context.Context, channelID string, texts ...string) ([]Message, error) {
	var ms []Message
	err := s.waitFor(ctx, fmt.Sprintf("%q in channel %s", texts, channelID), func() (bool, string) {
		ms = s.messagesLocked(channelID)
		var all strings.Builder
		for _, m := range ms {
			all.WriteString(m.Content)
			all.WriteString("\n")
		}
		for _, t := range texts {
			if !strings.Contains(all.String(), t) {
				return false, fmt.Sprintf("%d messages: %q", len(ms), all.String())
			}
		}
		return true, ""
	})
	return ms, err
}

// UserMessage is a message a user sends, for MessageCreateWith.
type UserMessage struct {
	ChannelID string
	GuildID   string // "" for a DM with the bot
	Author    User   // ID required; the rest defaults as in AddUser
	Content   string
	// Mentions are user IDs mentioned besides the <@id> in Content, which
	// are found as Discord finds them.
	Mentions []string
	// ReplyTo is the ID of the message this one replies to; the
	// dispatch then carries message_reference and referenced_message, and
	// pings the replied-to author, as Discord's client does by default.
	ReplyTo string
}

// MessageCreate dispatches MESSAGE_CREATE for a message a user sends
// (guildID "" for a DM) and returns its ID. See MessageCreateWith.
func (s *Server) MessageCreate(channelID, guildID, authorID, content string, mentions ...string) string {
	s.t.Helper()
	return s.MessageCreateWith(UserMessage{
		ChannelID: channelID, GuildID: guildID, Author: User{ID: authorID}, Content: content, Mentions: mentions,
	})
}

// MessageCreateWith dispatches MESSAGE_CREATE for a message a user sends
// and returns its ID. The channel, guild and user become known to the
// fake. As on Discord, a session receives a guild message only with the
// GUILD_MESSAGES intent and a DM only with DIRECT_MESSAGES, and without
// MESSAGE_CONTENT it receives the content, embeds and components only of
// DMs and of messages that mention the bot.
func (s *Server) MessageCreateWith(um UserMessage) string {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.hasSessionLocked("MESSAGE_CREATE") {
		return ""
	}
	author := s.userLocked(um.Author)
	s.ensureChannelLocked(um.ChannelID, um.GuildID, author.ID)
	if um.GuildID != "" {
		s.ensureMemberLocked(s.guilds[um.GuildID], author.ID)
	}
	m := &Message{
		ID: s.newID(), ChannelID: um.ChannelID, GuildID: um.GuildID, Author: author,
		Content: um.Content, Created: s.cfg.now().UTC(),
	}
	var replied string
	if um.ReplyTo != "" {
		m.ReplyTo, m.kind = um.ReplyTo, 19
		if ref, ok := s.byID[um.ReplyTo]; ok {
			replied = ref.Author.ID
		}
	}
	m.Mentions, m.MentionRoles, m.MentionEveryone = mentions(m.Content, nil, replied)
	for _, id := range um.Mentions {
		if !slices.Contains(m.Mentions, id) {
			m.Mentions = append(m.Mentions, id)
		}
	}
	s.byID[m.ID] = m
	s.dispatchMessageLocked("MESSAGE_CREATE", m)
	return m.ID
}

// dispatchMessageLocked sends MESSAGE_CREATE or MESSAGE_UPDATE to the
// sessions whose intents let it through, hiding the content from those
// without MESSAGE_CONTENT where Discord does.
func (s *Server) dispatchMessageLocked(event string, m *Message) {
	full := s.wireMessageLocked(m, true)
	var hidden map[string]any
	s.dispatchLocked(event, func(ss *session) any {
		need := discordgo.IntentGuildMessages
		if m.GuildID == "" {
			need = discordgo.IntentDirectMessages
		}
		if ss.intents&need == 0 || !ss.ownsGuild(m.GuildID) {
			s.t.Logf("discordfake: %s %s not sent to session %s: its intents lack %s", event, m.ID, ss.id, intentName(need))
			return nil
		}
		if ss.intents&discordgo.IntentMessageContent != 0 || m.GuildID == "" ||
			m.Author.ID == s.cfg.bot.ID || slices.Contains(m.Mentions, s.cfg.bot.ID) {
			return full
		}
		if hidden == nil {
			hidden = make(map[string]any, len(full))
			for k, v := range full {
				hidden[k] = v
			}
			hidden["content"] = ""
			hidden["embeds"] = []any{}
			hidden["attachments"] = []any{}
			hidden["components"] = []any{}
		}
		return hidden
	})
}

func intentName(i discordgo.Intent) string {
	switch i {
	case discordgo.IntentGuildMessages:
		return "GUILD_MESSAGES"
	case discordgo.IntentDirectMessages:
		return "DIRECT_MESSAGES"
	}
	return fmt.Sprintf("intent %d", i)
}

// storeMessageLocked keeps a message the bot posted and echoes it to the
// gateway, as Discord does, unless it is ephemeral.
func (s *Server) storeMessageLocked(m *Message) {
	s.messages[m.ChannelID] = append(s.messages[m.ChannelID], m)
	s.byID[m.ID] = m
	if !s.cfg.noEcho && !m.Ephemeral() {
		s.dispatchMessageLocked("MESSAGE_CREATE", m)
	}
	s.notifyLocked()
}

// editedLocked records an edit and echoes MESSAGE_UPDATE.
func (s *Server) editedLocked(m *Message) {
	m.Edits++
	m.Edited = s.cfg.now().UTC()
	if !s.cfg.noEcho && !m.Ephemeral() {
		s.dispatchMessageLocked("MESSAGE_UPDATE", m)
	}
	s.notifyLocked()
}

func (s *Server) deletedLocked(m *Message) {
	m.Deleted = true
	if !s.cfg.noEcho && !m.Ephemeral() {
		s.dispatchLocked("MESSAGE_DELETE", func(ss *session) any {
			need := discordgo.IntentGuildMessages
			if m.GuildID == "" {
				need = discordgo.IntentDirectMessages
			}
			if ss.intents&need == 0 || !ss.ownsGuild(m.GuildID) {
				return nil
			}
			d := map[string]any{"id": m.ID, "channel_id": m.ChannelID}
			if m.GuildID != "" {
				d["guild_id"] = m.GuildID
			}
			return d
		})
	}
	s.notifyLocked()
}

// messageFields is a message body as sent: the create, edit, interaction
// response and webhook bodies share these fields. The *Set flags tell an
// absent field (an edit keeps it) from a null one (an edit clears it).
type messageFields struct {
	content         *string
	embeds          []*discordgo.MessageEmbed
	embedsSet       bool
	components      []discordgo.MessageComponent
	componentsSet   bool
	allowed         *discordgo.MessageAllowedMentions
	allowedSet      bool
	reference       *discordgo.MessageReference
	flags           *discordgo.MessageFlags
	stickers        bool
	componentsError *apiError
	nonce           string // a create's nonce, as a string
	enforceNonce    bool   // a create's enforce_nonce
}

func parseMessageFields(raw json.RawMessage) (messageFields, *apiError) {
	var f messageFields
	if len(raw) == 0 {
		return f, nil
	}
	var p struct {
		Content          *string                     `json:"content"`
		Embeds           json.RawMessage             `json:"embeds"`
		Components       json.RawMessage             `json:"components"`
		AllowedMentions  json.RawMessage             `json:"allowed_mentions"`
		MessageReference *discordgo.MessageReference `json:"message_reference"`
		Flags            *discordgo.MessageFlags     `json:"flags"`
		StickerIDs       []string                    `json:"sticker_ids"`
		Nonce            json.RawMessage             `json:"nonce"`
		EnforceNonce     bool                        `json:"enforce_nonce"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return f, formError("", "BASE_TYPE_BAD", err.Error())
	}
	f.content, f.reference, f.flags, f.stickers = p.Content, p.MessageReference, p.Flags, len(p.StickerIDs) > 0
	if len(p.Nonce) > 0 && string(p.Nonce) != "null" {
		// An integer or a string of at most 25 characters.
		var str string
		var num json.Number
		switch {
		case json.Unmarshal(p.Nonce, &str) == nil:
			f.nonce = str
		case json.Unmarshal(p.Nonce, &num) == nil:
			f.nonce = num.String()
		default:
			return f, formError("nonce", "BASE_TYPE_BAD", "Must be a string or an integer.")
		}
		if utf8.RuneCountInString(f.nonce) > MaxNonceLength {
			return f, formError("nonce", "BASE_TYPE_MAX_LENGTH", fmt.Sprintf("Must be %d or fewer in length.", MaxNonceLength))
		}
	}
	f.enforceNonce = p.EnforceNonce
	if len(p.Embeds) > 0 {
		f.embedsSet = true
		if err := json.Unmarshal(p.Embeds, &f.embeds); err != nil {
			return f, formError("embeds", "BASE_TYPE_BAD", err.Error())
		}
	}
	if len(p.Components) > 0 {
		f.componentsSet = true
		var raws []json.RawMessage
		if err := json.Unmarshal(p.Components, &raws); err != nil {
			return f, formError("components", "BASE_TYPE_BAD", err.Error())
		}
		for i, r := range raws {
			c, err := discordgo.MessageComponentFromJSON(r)
			if err != nil {
				return f, formError(fmt.Sprintf("components.%d", i), "UNION_TYPE_CHOICES", err.Error())
			}
			f.components = append(f.components, c)
		}
	}
	if len(p.AllowedMentions) > 0 {
		f.allowedSet = true
		if err := json.Unmarshal(p.AllowedMentions, &f.allowed); err != nil {
			return f, formError("allowed_mentions", "BASE_TYPE_BAD", err.Error())
		}
	}
	return f, nil
}

// apply sets on m the fields the body carried.
func (f messageFields) apply(m *Message) {
	if f.content != nil {
		m.Content = *f.content
	}
	if f.embedsSet {
		m.Embeds = f.embeds
	}
	if f.componentsSet {
		m.Components = f.components
	}
	if f.allowedSet {
		m.AllowedMentions = f.allowed
	}
	if f.flags != nil {
		// Only these flags can be set by a bot; Discord ignores the others.
		const settable = discordgo.MessageFlagsSuppressEmbeds | discordgo.MessageFlagsEphemeral |
			discordgo.MessageFlagsSuppressNotifications | discordgo.MessageFlagsIsComponentsV2
		m.Flags = m.Flags&^settable | *f.flags&settable
	}
}

// finishMessageLocked validates a message the bot is posting or editing,
// resolves its reply and computes whom it pings.
func (s *Server) finishMessageLocked(m *Message, f messageFields) *apiError {
	if f.reference != nil && f.reference.MessageID != "" {
		ref, ok := s.byID[f.reference.MessageID]
		if !ok || ref.Deleted || ref.ChannelID != m.ChannelID {
			if f.reference.FailIfNotExists == nil || *f.reference.FailIfNotExists {
				return formError("message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message")
			}
		} else {
			m.ReplyTo, m.kind = ref.ID, 19
		}
	}
	if err := validateMessage(m, f.stickers); err != nil {
		return err
	}
	if am := m.AllowedMentions; am != nil {
		if slices.Contains(am.Parse, discordgo.AllowedMentionTypeUsers) && len(am.Users) > 0 {
			return formError("allowed_mentions", "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE",
				`parse:["users"] and users: [ids] are mutually exclusive.`)
		}
		if slices.Contains(am.Parse, discordgo.AllowedMentionTypeRoles) && len(am.Roles) > 0 {
			return formError("allowed_mentions", "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE",
				`parse:["roles"] and roles: [ids] are mutually exclusive.`)
		}
	}
	var replied string
	if ref, ok := s.byID[m.ReplyTo]; ok && m.ReplyTo != "" {
		replied = ref.Author.ID
	}
	m.Mentions, m.MentionRoles, m.MentionEveryone = mentions(m.Content, m.AllowedMentions, replied)
	if i := slices.Index(m.Mentions, s.cfg.bot.ID); i >= 0 && m.Author.ID == s.cfg.bot.ID {
		m.Mentions = slices.Delete(m.Mentions, i, i+1) // no one pings themselves
	}
	return nil
}

var (
	userMention = regexp.MustCompile(`<@!?(\d+)>`)
	roleMention = regexp.MustCompile(`<@&(\d+)>`)
)

// mentions computes whom a message pings: the users, roles and
// @everyone/@here its content names and, for a reply, the replied-to
// author — filtered by allowed_mentions when there is one.
func mentions(content string, am *discordgo.MessageAllowedMentions, repliedAuthor string) (users, roles []string, everyone bool) {
	parses := func(t discordgo.AllowedMentionType) bool { return am == nil || slices.Contains(am.Parse, t) }
	for _, sm := range userMention.FindAllStringSubmatch(content, -1) {
		id := sm[1]
		if (parses(discordgo.AllowedMentionTypeUsers) || slices.Contains(am.Users, id)) && !slices.Contains(users, id) {
			users = append(users, id)
		}
	}
	for _, sm := range roleMention.FindAllStringSubmatch(content, -1) {
		id := sm[1]
		if (parses(discordgo.AllowedMentionTypeRoles) || slices.Contains(am.Roles, id)) && !slices.Contains(roles, id) {
			roles = append(roles, id)
		}
	}
	everyone = parses(discordgo.AllowedMentionTypeEveryone) &&
		(strings.Contains(content, "@everyone") || strings.Contains(content, "@here"))
	if repliedAuthor != "" && (am == nil || am.RepliedUser) && !slices.Contains(users, repliedAuthor) {
		users = append(users, repliedAuthor)
	}
	return users, roles, everyone
}

// validateMessage applies the limits Discord enforces on a message, with
// its error codes.
func validateMessage(m *Message, stickers bool) *apiError {
	if n := utf8.RuneCountInString(m.Content); n > 2000 {
		return formError("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.")
	}
	if strings.TrimSpace(m.Content) == "" && len(m.Embeds) == 0 && len(m.Components) == 0 &&
		len(m.Files) == 0 && !stickers && m.Flags&discordgo.MessageFlagsLoading == 0 {
		return &apiError{status: 400, code: 50006, message: "Cannot send an empty message"}
	}
	if len(m.Embeds) > 10 {
		return formError("embeds", "BASE_TYPE_MAX_LENGTH", "Must be 10 or fewer in length.")
	}
	total := 0
	for i, e := range m.Embeds {
		if e == nil {
			continue
		}
		p := fmt.Sprintf("embeds.%d.", i)
		checks := []struct {
			field string
			text  string
			max   int
		}{{"title", e.Title, 256}, {"description", e.Description, 4096}}
		if e.Footer != nil {
			checks = append(checks, struct {
				field string
				text  string
				max   int
			}{"footer.text", e.Footer.Text, 2048})
		}
		if e.Author != nil {
			checks = append(checks, struct {
				field string
				text  string
				max   int
			}{"author.name", e.Author.Name, 256})
		}
		for _, c := range checks {
			n := utf8.RuneCountInString(c.text)
			total += n
			if n > c.max {
				return formError(p+c.field, "BASE_TYPE_MAX_LENGTH", fmt.Sprintf("Must be %d or fewer in length.", c.max))
			}
		}
		if len(e.Fields) > 25 {
			return formError(p+"fields", "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")
		}
		for j, fl := range e.Fields {
			fp := fmt.Sprintf("%sfields.%d.", p, j)
			if fl.Name == "" {
				return formError(fp+"name", "BASE_TYPE_REQUIRED", "This field is required")
			}
			if fl.Value == "" {
				return formError(fp+"value", "BASE_TYPE_REQUIRED", "This field is required")
			}
			if utf8.RuneCountInString(fl.Name) > 256 {
				return formError(fp+"name", "BASE_TYPE_MAX_LENGTH", "Must be 256 or fewer in length.")
			}
			if utf8.RuneCountInString(fl.Value) > 1024 {
				return formError(fp+"value", "BASE_TYPE_MAX_LENGTH", "Must be 1024 or fewer in length.")
			}
			total += utf8.RuneCountInString(fl.Name) + utf8.RuneCountInString(fl.Value)
		}
	}
	if total > 6000 {
		return formError("embeds", "MAX_EMBED_SIZE_EXCEEDED", "Embed size exceeds maximum size of 6000")
	}
	return validateComponents(m)
}

func validateComponents(m *Message) *apiError {
	if m.Flags&discordgo.MessageFlagsIsComponentsV2 != 0 {
		return nil // the newer layout components have rules of their own
	}
	if len(m.Components) > 5 {
		return formError("components", "BASE_TYPE_MAX_LENGTH", "Must be 5 or fewer in length.")
	}
	seen := map[string]bool{}
	for i, c := range m.Components {
		p := fmt.Sprintf("components.%d", i)
		var row []discordgo.MessageComponent
		switch r := c.(type) {
		case discordgo.ActionsRow:
			row = r.Components
		case *discordgo.ActionsRow:
			row = r.Components
		default:
			return formError(p, "UNION_TYPE_CHOICES", "Value of field \"type\" must be one of (1,).")
		}
		if len(row) == 0 || len(row) > 5 {
			return formError(p+".components", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 5 in length.")
		}
		for j, c := range row {
			cp := fmt.Sprintf("%s.components.%d", p, j)
			var customID string
			switch b := c.(type) {
			case discordgo.Button:
				if err := validateButton(b, cp); err != nil {
					return err
				}
				customID = b.CustomID
			case *discordgo.Button:
				if err := validateButton(*b, cp); err != nil {
					return err
				}
				customID = b.CustomID
			case discordgo.SelectMenu:
				customID = b.CustomID
			case *discordgo.SelectMenu:
				customID = b.CustomID
			}
			if customID == "" {
				continue
			}
			if seen[customID] {
				return formError(cp+".custom_id", "COMPONENT_CUSTOM_ID_DUPLICATED", "Component custom id cannot be duplicated")
			}
			seen[customID] = true
		}
	}
	return nil
}

func validateButton(b discordgo.Button, p string) *apiError {
	if utf8.RuneCountInString(b.Label) > 80 {
		return formError(p+".label", "BASE_TYPE_MAX_LENGTH", "Must be 80 or fewer in length.")
	}
	switch {
	case b.Style == discordgo.LinkButton:
		if b.URL == "" || b.CustomID != "" {
			return formError(p+".url", "BUTTON_COMPONENT_URL_REQUIRED", "A url is required, and a custom id is not allowed, on a link button")
		}
	case b.Style == discordgo.PremiumButton:
	case b.Style < discordgo.PrimaryButton || b.Style > discordgo.DangerButton:
		return formError(p+".style", "BASE_TYPE_CHOICES", "Value must be one of (1, 2, 3, 4, 5, 6).")
	case b.CustomID == "" || b.URL != "":
		return formError(p+".custom_id", "BUTTON_COMPONENT_CUSTOM_ID_REQUIRED", "A custom id is required")
	case utf8.RuneCountInString(b.CustomID) > 100:
		return formError(p+".custom_id", "BASE_TYPE_MAX_LENGTH", "Must be 100 or fewer in length.")
	}
	return nil
}

const discordTime = "2006-01-02T15:04:05.000000-07:00"

// wireMessageLocked is a message as Discord sends it; withGuild adds what
// the gateway carries and REST does not (guild_id, member).
func (s *Server) wireMessageLocked(m *Message, withGuild bool) map[string]any {
	mentioned := []any{}
	for _, id := range m.Mentions {
		mentioned = append(mentioned, wireUser(s.ensureUserLocked(id)))
	}
	attachments := []any{}
	for i, f := range m.Files {
		id := m.ID + strconv.Itoa(i)
		u := fmt.Sprintf("%sattachments/%s/%s/%s", s.URL(), m.ChannelID, id, f.Name)
		attachments = append(attachments, map[string]any{
			"id": id, "filename": f.Name, "size": len(f.Data), "content_type": f.ContentType,
			"url": u, "proxy_url": u,
		})
	}
	w := map[string]any{
		"id":               m.ID,
		"type":             m.kind,
		"channel_id":       m.ChannelID,
		"author":           wireUser(m.Author),
		"content":          m.Content,
		"timestamp":        m.Created.Format(discordTime),
		"edited_timestamp": nil,
		"tts":              false,
		"mention_everyone": m.MentionEveryone,
		"mentions":         mentioned,
		"mention_roles":    orEmpty(m.MentionRoles),
		"attachments":      attachments,
		"embeds":           orEmpty(m.Embeds),
		"components":       orEmpty(m.Components),
		"pinned":           false,
		"flags":            m.Flags,
	}
	if !m.Edited.IsZero() {
		w["edited_timestamp"] = m.Edited.Format(discordTime)
	}
	if m.Nonce != "" {
		w["nonce"] = m.Nonce
	}
	if m.ReplyTo != "" {
		ref := map[string]any{"type": 0, "message_id": m.ReplyTo, "channel_id": m.ChannelID}
		if m.GuildID != "" {
			ref["guild_id"] = m.GuildID
		}
		w["message_reference"] = ref
		w["referenced_message"] = nil
		if r, ok := s.byID[m.ReplyTo]; ok && !r.Deleted {
			rw := s.wireMessageLocked(&Message{
				ID: r.ID, ChannelID: r.ChannelID, GuildID: r.GuildID, Author: r.Author, Content: r.Content,
				Embeds: r.Embeds, Components: r.Components, Mentions: r.Mentions, MentionRoles: r.MentionRoles,
				MentionEveryone: r.MentionEveryone, Flags: r.Flags, Created: r.Created, Edited: r.Edited, kind: r.kind,
			}, false)
			w["referenced_message"] = rw
		}
	}
	if th, ok := s.threadFieldLocked(m); ok {
		w["thread"] = th
	}
	if m.InteractionID != "" {
		w["webhook_id"] = s.cfg.appID
		w["application_id"] = s.cfg.appID
		if in, ok := s.interactions[m.InteractionID]; ok {
			w["interaction_metadata"] = map[string]any{
				"id": in.id, "type": in.kind, "user": wireUser(in.user),
				"authorizing_integration_owners": map[string]any{},
			}
		}
	}
	if withGuild && m.GuildID != "" {
		w["guild_id"] = m.GuildID
		if g, ok := s.guilds[m.GuildID]; ok {
			if mem, ok := g.members[m.Author.ID]; ok && m.InteractionID == "" {
				w["member"] = wireMember(mem, nil)
			}
		}
	}
	return w
}

func wireUser(u User) map[string]any {
	w := map[string]any{
		"id": u.ID, "username": u.Username, "discriminator": "0", "global_name": nil,
		"avatar": nil, "public_flags": 0,
	}
	if u.Bot {
		w["bot"] = true
	}
	return w
}

// wireMember is a guild member; user is nil where Discord leaves it out
// (the member attached to a message).
func wireMember(m *member, user *User) map[string]any {
	w := map[string]any{
		"roles": orEmpty(m.roles), "joined_at": m.joined.Format(discordTime), "nick": nil, "avatar": nil,
		"deaf": false, "mute": false, "flags": 0, "pending": false, "premium_since": nil,
		"communication_disabled_until": nil,
	}
	if user != nil {
		w["user"] = wireUser(*user)
	}
	return w
}

func wireRole(r role, position int) map[string]any {
	return map[string]any{
		"id": r.id, "name": r.name, "permissions": strconv.FormatInt(r.permissions, 10),
		"position": position, "color": 0, "hoist": false, "managed": false, "mentionable": false,
		"icon": nil, "unicode_emoji": nil, "flags": 0,
	}
}

func wireChannel(c *channel, position int) map[string]any {
	return map[string]any{
		"id": c.id, "type": discordgo.ChannelTypeGuildText, "guild_id": c.guildID, "name": c.name,
		"position": position, "permission_overwrites": []any{}, "nsfw": false, "parent_id": nil,
		"topic": nil, "last_message_id": nil, "rate_limit_per_user": 0, "flags": 0,
	}
}

func (s *Server) wireChannelLocked(c *channel) map[string]any {
	switch {
	case c.isThread():
		return s.wireThread(c)
	case c.kind == discordgo.ChannelTypeGroupDM:
		return s.wireGroupDM(c)
	}
	if c.guildID != "" {
		g := s.guilds[c.guildID]
		return wireChannel(c, slices.Index(g.channels, c.id))
	}
	recipients := []any{}
	if c.recipient != "" {
		recipients = append(recipients, wireUser(s.ensureUserLocked(c.recipient)))
	}
	return map[string]any{
		"id": c.id, "type": discordgo.ChannelTypeDM, "recipients": recipients,
		"last_message_id": nil, "flags": 0,
	}
}

// wireGuildLocked is a guild as GET /guilds/{id} answers it or, with
// gateway set, as GUILD_CREATE carries it (channels, the bot's member).
func (s *Server) wireGuildLocked(g *guild, gateway bool) map[string]any {
	roles := []any{}
	for i, r := range g.roles {
		roles = append(roles, wireRole(r, i))
	}
	w := map[string]any{
		"id": g.id, "name": g.name, "icon": nil, "owner_id": g.ownerID, "roles": roles,
		"features": []any{}, "emojis": []any{}, "stickers": []any{}, "preferred_locale": "en-US",
		"afk_timeout": 300, "verification_level": 0, "default_message_notifications": 0,
		"explicit_content_filter": 0, "mfa_level": 0, "premium_tier": 0, "nsfw_level": 0,
		"system_channel_id": nil, "application_id": nil,
	}
	if gateway {
		channels := []any{}
		for i, id := range g.channels {
			channels = append(channels, wireChannel(s.channels[id], i))
		}
		bot := s.cfg.bot
		threads := []any{}
		for _, th := range s.threadsLocked(func(c *channel) bool { return c.guildID == g.id }) {
			threads = append(threads, s.wireThread(th))
		}
		w["channels"] = channels
		w["threads"] = threads
		w["members"] = []any{wireMember(g.members[bot.ID], &bot)}
		w["member_count"] = len(g.members)
		w["joined_at"] = g.joined.Format(discordTime)
		w["large"] = false
		w["unavailable"] = false
		w["voice_states"] = []any{}
		w["presences"] = []any{}
		w["stage_instances"] = []any{}
		w["guild_scheduled_events"] = []any{}
	}
	return w
}
