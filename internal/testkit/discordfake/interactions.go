package discordfake

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
)

// Interaction names an interaction a builder dispatched: what the
// callback and webhook routes are addressed by.
type Interaction struct {
	ID    string
	Token string
}

// InteractionResponse is one accepted POST /interactions/{id}/{token}/callback.
type InteractionResponse struct {
	InteractionID string
	Type          discordgo.InteractionResponseType
	// Data is the response's data object as sent.
	Data json.RawMessage
	// MessageID is the message the response created (4, 5) or updated (7).
	MessageID string
	// After is the time from the INTERACTION_CREATE dispatch to the
	// response; Discord allows three seconds.
	After time.Duration
}

type interaction struct {
	id, token          string
	kind               discordgo.InteractionType
	channelID, guildID string
	user               User
	context            discordgo.InteractionContextType
	userInstall        bool                                   // the user installed the app (authorizing_integration_owners "1")
	focusedType        discordgo.ApplicationCommandOptionType // an autocomplete's focused option
	messageID          string                                 // the message a component is on
	created            time.Time
	acked              bool
	original           string // the message @original names
}

// SlashCommand is a user running a chat-input command, for SlashCommand.
type SlashCommand struct {
	ChannelID string
	// GuildID is "" for a DM with the bot, or for a group DM (AddGroupDM):
	// there the interaction's context is PRIVATE_CHANNEL, which Discord
	// offers only for commands that list USER_INSTALL in integration_types
	// and PRIVATE_CHANNEL in contexts.
	GuildID string
	User    User // ID required
	// UserInstall says the user installed the app to their account, so
	// authorizing_integration_owners has "1": the user's ID. It is implied
	// in a group DM.
	UserInstall bool
	Name        string // "task" when empty
	// Subcommand, when set, wraps Options in a subcommand option (type 1).
	Subcommand string
	Options    []CommandOption
}

// CommandOption is one option value of a command invocation.
type CommandOption struct {
	Name string
	// Type is the option type; when zero it follows Value: string 3,
	// int 4, bool 5, float64 10.
	Type  discordgo.ApplicationCommandOptionType
	Value any
}

// ButtonClick is a user clicking a button, for ButtonClick.
type ButtonClick struct {
	// MessageID is the bot message the button is on; the interaction
	// carries it. ChannelID and GuildID default to that message's.
	MessageID string
	CustomID  string
	User      User // ID required
	ChannelID string
	GuildID   string
}

// SlashCommand dispatches INTERACTION_CREATE of type 2
// (APPLICATION_COMMAND) and returns the interaction. The payload is
// Discord's: data {id, name, type 1, options}, with the command ID of a
// registered command of that name; in a guild a member with its
// permissions (see SetMember), in a DM a user.
func (s *Server) SlashCommand(c SlashCommand) Interaction {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.hasSessionLocked("INTERACTION_CREATE") {
		return Interaction{}
	}
	if c.Name == "" {
		c.Name = "task"
	}
	opts, resolved := s.wireOptionsLocked(c.Options)
	if c.Subcommand != "" {
		opts = []any{map[string]any{"name": c.Subcommand, "type": discordgo.ApplicationCommandOptionSubCommand, "options": opts}}
	}
	data := map[string]any{"id": s.newID(), "name": c.Name, "type": discordgo.ChatApplicationCommand, "options": opts}
	if len(resolved) > 0 {
		data["resolved"] = map[string]any{"users": resolved}
	}
	cmd := s.commandForLocked(data, c.GuildID, c.Name)
	in := s.newInteractionLocked(discordgo.InteractionApplicationCommand, c.ChannelID, c.GuildID, c.User)
	in.userInstall = c.UserInstall || in.context == discordgo.InteractionContextPrivateChannel
	if !offered(cmd, in.context) {
		s.t.Errorf("discordfake: /%s is not offered in interaction context %d: its contexts and integration_types leave it out, so Discord's client would not show it", c.Name, in.context)
		return Interaction{}
	}
	s.dispatchInteractionLocked(in, data, nil)
	return Interaction{ID: in.id, Token: in.token}
}

// commandForLocked finds the registered command an invocation names, a
// guild's before a global one, and puts its ID (and guild) in data.
func (s *Server) commandForLocked(data map[string]any, guildID, name string) *discordgo.ApplicationCommand {
	for _, scope := range []string{guildID, ""} {
		if cmd := findCommand(s.commands[scope], name, discordgo.ChatApplicationCommand); cmd != nil {
			data["id"] = cmd.ID
			if scope != "" {
				data["guild_id"] = scope
			}
			return cmd
		}
	}
	return nil
}

// offered reports whether Discord offers a registered command in an
// interaction context: contexts, when set, must list it (unset, a global
// command is offered in all); PRIVATE_CHANNEL also needs USER_INSTALL in
// integration_types (unset, the app's default: GUILD_INSTALL only). A
// command the fake does not know is let through, as before registration.
func offered(cmd *discordgo.ApplicationCommand, ctx discordgo.InteractionContextType) bool {
	if cmd == nil {
		return true
	}
	if cmd.Contexts != nil && !slices.Contains(*cmd.Contexts, ctx) {
		return false
	}
	if ctx == discordgo.InteractionContextPrivateChannel {
		return cmd.IntegrationTypes != nil && slices.Contains(*cmd.IntegrationTypes, discordgo.ApplicationIntegrationUserInstall)
	}
	return true
}

// ButtonClick dispatches INTERACTION_CREATE of type 3 (MESSAGE_COMPONENT)
// with data {custom_id, component_type 2} and the message the button is
// on, and returns the interaction.
func (s *Server) ButtonClick(b ButtonClick) Interaction {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.hasSessionLocked("INTERACTION_CREATE") {
		return Interaction{}
	}
	msg, ok := s.byID[b.MessageID]
	if ok {
		if b.ChannelID == "" {
			b.ChannelID = msg.ChannelID
		}
		if b.GuildID == "" {
			b.GuildID = msg.GuildID
		}
	}
	in := s.newInteractionLocked(discordgo.InteractionMessageComponent, b.ChannelID, b.GuildID, b.User)
	in.messageID = b.MessageID
	var wm map[string]any
	if ok {
		wm = s.wireMessageLocked(msg, false)
	} else {
		wm = map[string]any{"id": b.MessageID, "channel_id": b.ChannelID, "type": 0, "content": "",
			"author": wireUser(s.cfg.bot), "timestamp": s.cfg.now().UTC().Format(discordTime)}
	}
	data := map[string]any{"custom_id": b.CustomID, "component_type": discordgo.ButtonComponent}
	s.dispatchInteractionLocked(in, data, wm)
	return Interaction{ID: in.id, Token: in.token}
}

func (s *Server) newInteractionLocked(kind discordgo.InteractionType, channelID, guildID string, u User) *interaction {
	user := s.userLocked(u)
	s.ensureChannelLocked(channelID, guildID, user.ID)
	if guildID != "" {
		s.ensureMemberLocked(s.guilds[guildID], user.ID)
	}
	tok := make([]byte, 24)
	rand.Read(tok)
	in := &interaction{
		id: s.newID(), token: "fake-interaction-token-" + hex.EncodeToString(tok), kind: kind,
		channelID: channelID, guildID: guildID, user: user, created: time.Now(),
		context: discordgo.InteractionContextBotDM,
	}
	switch {
	case guildID != "":
		in.context = discordgo.InteractionContextGuild
	case s.channels[channelID].kind == discordgo.ChannelTypeGroupDM:
		in.context = discordgo.InteractionContextPrivateChannel
	}
	s.interactions[in.id] = in
	return in
}

func (s *Server) dispatchInteractionLocked(in *interaction, data, message map[string]any) {
	w := map[string]any{
		"id": in.id, "application_id": s.cfg.appID, "type": in.kind, "token": in.token, "version": 1,
		"channel_id": in.channelID, "data": data, "locale": "en-US", "entitlements": []any{},
		"app_permissions": strconv.FormatInt(everyonePermissions, 10),
	}
	if message != nil {
		w["message"] = message
	}
	owners := map[string]any{}
	if in.userInstall {
		owners["1"] = in.user.ID
	}
	w["channel"] = s.wireChannelLocked(s.channels[in.channelID])
	w["context"] = in.context
	switch in.context {
	case discordgo.InteractionContextGuild:
		g := s.guilds[in.guildID]
		mem := wireMember(g.members[in.user.ID], &in.user)
		mem["permissions"] = strconv.FormatInt(s.permissionsLocked(g, in.user.ID), 10)
		w["guild_id"] = in.guildID
		w["guild_locale"] = "en-US"
		w["guild"] = map[string]any{"id": in.guildID, "locale": "en-US", "features": []any{}}
		w["member"] = mem
		owners["0"] = in.guildID
	case discordgo.InteractionContextBotDM:
		w["user"] = wireUser(in.user)
		owners["0"] = "0"
	default: // a group DM: only the user's installation reaches it
		w["user"] = wireUser(in.user)
		w["app_permissions"] = strconv.FormatInt(discordgo.PermissionAttachFiles|discordgo.PermissionEmbedLinks|discordgo.PermissionMentionEveryone, 10)
	}
	w["authorizing_integration_owners"] = owners
	sent := false
	s.dispatchLocked("INTERACTION_CREATE", func(ss *session) any {
		if !ss.ownsGuild(in.guildID) {
			return nil
		}
		sent = true
		return w
	})
	if !sent {
		s.t.Logf("discordfake: INTERACTION_CREATE %s reached no session (shards)", in.id)
	}
}

func (s *Server) wireOptionsLocked(opts []CommandOption) ([]any, map[string]any) {
	out := []any{}
	resolved := map[string]any{}
	for _, o := range opts {
		t := o.Type
		if t == 0 {
			switch o.Value.(type) {
			case string:
				t = discordgo.ApplicationCommandOptionString
			case int, int64, int32:
				t = discordgo.ApplicationCommandOptionInteger
			case bool:
				t = discordgo.ApplicationCommandOptionBoolean
			case float64, float32:
				t = discordgo.ApplicationCommandOptionNumber
			}
		}
		if id, ok := o.Value.(string); ok && t == discordgo.ApplicationCommandOptionUser {
			resolved[id] = wireUser(s.ensureUserLocked(id))
		}
		out = append(out, map[string]any{"name": o.Name, "type": t, "value": o.Value})
	}
	return out, resolved
}

// Responses returns the accepted interaction responses, in order.
func (s *Server) Responses() []InteractionResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]InteractionResponse(nil), s.responses...)
}

// WaitResponses waits until n interaction responses have been accepted
// and returns them all.
func (s *Server) WaitResponses(ctx context.Context, n int) ([]InteractionResponse, error) {
	var rs []InteractionResponse
	err := s.waitFor(ctx, fmt.Sprintf("%d interaction responses", n), func() (bool, string) {
		rs = append([]InteractionResponse(nil), s.responses...)
		return len(rs) >= n, strconv.Itoa(len(rs))
	})
	return rs, err
}

func (s *Server) interactionCallback(w http.ResponseWriter, r *http.Request, c *Call) {
	var body struct {
		Type discordgo.InteractionResponseType `json:"type"`
		Data json.RawMessage                   `json:"data"`
	}
	if c.Decode(&body) != nil || body.Type == 0 {
		writeAPIError(w, formError("type", "BASE_TYPE_REQUIRED", "This field is required"))
		return
	}
	f, aerr := parseMessageFields(body.Data)
	if aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.interactions[r.PathValue("interaction")]
	switch {
	case !ok || in.token != r.PathValue("token"):
		writeError(w, http.StatusNotFound, 10062, "Unknown interaction")
		return
	case in.acked:
		writeError(w, http.StatusBadRequest, 40060, "Interaction has already been acknowledged.")
		return
	case s.cfg.deadline > 0 && time.Since(in.created) > s.cfg.deadline:
		writeError(w, http.StatusNotFound, 10062, "Unknown interaction")
		return
	}
	resp := InteractionResponse{InteractionID: in.id, Type: body.Type, Data: body.Data, After: time.Since(in.created)}
	component := in.kind == discordgo.InteractionMessageComponent
	invalid := formError("type", "INTERACTION_RESPONSE_TYPE_INVALID", "Invalid interaction response type")
	if in.kind == discordgo.InteractionApplicationCommandAutocomplete && body.Type != discordgo.InteractionApplicationCommandAutocompleteResult {
		// An autocomplete is answered with choices, and nothing else.
		writeAPIError(w, invalid)
		return
	}
	switch body.Type {
	case discordgo.InteractionResponseChannelMessageWithSource, discordgo.InteractionResponseDeferredChannelMessageWithSource:
		m := &Message{
			ID: s.newID(), ChannelID: in.channelID, GuildID: in.guildID, Author: s.cfg.bot,
			InteractionID: in.id, Files: c.Files, Created: s.cfg.now().UTC(),
		}
		if !component {
			m.kind = 20
		}
		f.reference = nil
		if body.Type == discordgo.InteractionResponseDeferredChannelMessageWithSource {
			// Only the flags count; the message shows "thinking" until
			// @original is edited.
			f = messageFields{flags: f.flags}
			f.apply(m)
			m.Flags |= discordgo.MessageFlagsLoading
		} else {
			f.apply(m)
		}
		if aerr := s.finishMessageLocked(m, f); aerr != nil {
			writeAPIError(w, aerr)
			return
		}
		in.original, resp.MessageID = m.ID, m.ID
		in.acked = true // before the echo, so a handler of it sees the state
		s.storeMessageLocked(m)
	case discordgo.InteractionResponseDeferredMessageUpdate, discordgo.InteractionResponseUpdateMessage:
		if !component {
			writeAPIError(w, invalid)
			return
		}
		in.original = in.messageID
		if body.Type == discordgo.InteractionResponseUpdateMessage {
			m, ok := s.byID[in.messageID]
			if !ok {
				writeError(w, http.StatusNotFound, 10008, "Unknown Message")
				return
			}
			edited := *m
			f.reference = nil
			f.apply(&edited)
			if aerr := s.finishMessageLocked(&edited, f); aerr != nil {
				writeAPIError(w, aerr)
				return
			}
			*m = edited
			resp.MessageID = m.ID
			s.editedLocked(m)
		}
	case discordgo.InteractionResponseModal:
	case discordgo.InteractionApplicationCommandAutocompleteResult:
		if in.kind != discordgo.InteractionApplicationCommandAutocomplete {
			writeAPIError(w, invalid)
			return
		}
		if aerr := validateChoices(body.Data, in.focusedType); aerr != nil {
			writeAPIError(w, aerr)
			return
		}
	case discordgo.InteractionResponsePong:
		writeAPIError(w, invalid) // no PING interactions here
		return
	default:
		writeAPIError(w, invalid)
		return
	}
	in.acked = true
	s.responses = append(s.responses, resp)
	s.notifyLocked()
	w.WriteHeader(http.StatusNoContent)
}

// webhookInteractionLocked finds the interaction a webhook route's
// application ID and token name, answering 404 Unknown Webhook if none.
func (s *Server) webhookInteractionLocked(w http.ResponseWriter, r *http.Request) *interaction {
	if r.PathValue("app") == s.cfg.appID {
		for _, in := range s.interactions {
			// Before the first response the interaction has no webhook.
			if in.token == r.PathValue("token") && in.acked {
				return in
			}
		}
	}
	writeError(w, http.StatusNotFound, 10015, "Unknown Webhook")
	return nil
}

func (s *Server) followup(w http.ResponseWriter, r *http.Request, c *Call) {
	f, aerr := parseMessageFields(c.JSON)
	if aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.webhookInteractionLocked(w, r)
	if in == nil {
		return
	}
	m := &Message{
		ID: s.newID(), ChannelID: in.channelID, GuildID: in.guildID, Author: s.cfg.bot,
		InteractionID: in.id, Files: c.Files, Created: s.cfg.now().UTC(),
	}
	f.reference = nil
	f.apply(m)
	if aerr := s.finishMessageLocked(m, f); aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	s.storeMessageLocked(m)
	if c.Query.Get("wait") != "true" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, http.StatusOK, s.wireMessageLocked(m, false))
}

// webhookMessageLocked finds the message a webhook message route names:
// @original or one of the interaction's follow-ups.
func (s *Server) webhookMessageLocked(w http.ResponseWriter, r *http.Request) *Message {
	in := s.webhookInteractionLocked(w, r)
	if in == nil {
		return nil
	}
	id := r.PathValue("message")
	if id == "@original" {
		id = in.original
	}
	m, ok := s.byID[id]
	if !ok || m.Deleted || (m.InteractionID != in.id && m.ID != in.original) {
		writeError(w, http.StatusNotFound, 10008, "Unknown Message")
		return nil
	}
	return m
}

func (s *Server) getWebhookMessage(w http.ResponseWriter, r *http.Request, _ *Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.webhookMessageLocked(w, r); m != nil {
		writeJSON(w, http.StatusOK, s.wireMessageLocked(m, false))
	}
}

func (s *Server) patchWebhookMessage(w http.ResponseWriter, r *http.Request, c *Call) {
	f, aerr := parseMessageFields(c.JSON)
	if aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.webhookMessageLocked(w, r); m != nil {
		f.flags = nil // flags cannot change on an edit here
		s.editLocked(w, m, f, c.Files)
	}
}

func (s *Server) deleteWebhookMessage(w http.ResponseWriter, r *http.Request, _ *Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.webhookMessageLocked(w, r); m != nil {
		s.deletedLocked(m)
		w.WriteHeader(http.StatusNoContent)
	}
}

// Commands returns the application commands registered globally
// (guildID "") or in a guild, as the API would list them.
func (s *Server) Commands(guildID string) []*discordgo.ApplicationCommand {
	s.mu.Lock()
	defer s.mu.Unlock()
	return copyCommands(s.commands[guildID])
}

func copyCommands(cmds []*discordgo.ApplicationCommand) []*discordgo.ApplicationCommand {
	var out []*discordgo.ApplicationCommand
	b, _ := json.Marshal(orEmpty(cmds))
	json.Unmarshal(b, &out)
	return out
}

func findCommand(cmds []*discordgo.ApplicationCommand, name string, t discordgo.ApplicationCommandType) *discordgo.ApplicationCommand {
	for _, c := range cmds {
		if c.Name == name && c.Type == t {
			return c
		}
	}
	return nil
}

func (s *Server) commandScope(w http.ResponseWriter, r *http.Request) (string, bool) {
	if r.PathValue("app") != s.cfg.appID {
		writeError(w, http.StatusForbidden, 50001, "Missing Access")
		return "", false
	}
	g := r.PathValue("guild")
	if g != "" {
		if _, ok := s.guilds[g]; !ok {
			writeError(w, http.StatusForbidden, 50001, "Missing Access")
			return "", false
		}
	}
	return g, true
}

func (s *Server) getCommands(w http.ResponseWriter, r *http.Request, _ *Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if scope, ok := s.commandScope(w, r); ok {
		writeJSON(w, http.StatusOK, orEmpty(s.commands[scope]))
	}
}

// putCommands is the bulk overwrite: the list replaces the registered
// commands; a command keeps its ID when one of the same name and type was
// registered, and its version unless its definition changed.
func (s *Server) putCommands(w http.ResponseWriter, r *http.Request, c *Call) {
	var cmds []*discordgo.ApplicationCommand
	if err := c.Decode(&cmds); err != nil {
		writeAPIError(w, formError("", "BASE_TYPE_BAD", err.Error()))
		return
	}
	if len(cmds) > 100 {
		writeAPIError(w, formError("", "BASE_TYPE_MAX_LENGTH", "Must be 100 or fewer in length."))
		return
	}
	seen := map[string]bool{}
	for i, cmd := range cmds {
		if aerr := validateCommand(cmd, strconv.Itoa(i)); aerr != nil {
			writeAPIError(w, aerr)
			return
		}
		key := fmt.Sprint(commandType(cmd), cmd.Name)
		if seen[key] {
			writeAPIError(w, formError(strconv.Itoa(i)+".name", "APPLICATION_COMMANDS_DUPLICATE_NAME", "Application command names must be unique"))
			return
		}
		seen[key] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	scope, ok := s.commandScope(w, r)
	if !ok {
		return
	}
	old := s.commands[scope]
	stored := []*discordgo.ApplicationCommand{}
	for _, cmd := range cmds {
		stored = append(stored, s.registerLocked(cmd, scope, old))
	}
	s.commands[scope] = stored
	s.notifyLocked()
	writeJSON(w, http.StatusOK, stored)
}

// postCommand creates a command, or overwrites the one of the same name.
func (s *Server) postCommand(w http.ResponseWriter, r *http.Request, c *Call) {
	var cmd *discordgo.ApplicationCommand
	if err := c.Decode(&cmd); err != nil || cmd == nil {
		writeAPIError(w, formError("", "BASE_TYPE_BAD", "Invalid command"))
		return
	}
	if aerr := validateCommand(cmd, ""); aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	scope, ok := s.commandScope(w, r)
	if !ok {
		return
	}
	old := s.commands[scope]
	stored := s.registerLocked(cmd, scope, old)
	status := http.StatusCreated
	var kept []*discordgo.ApplicationCommand
	for _, o := range old {
		if o.ID == stored.ID {
			status = http.StatusOK
			continue
		}
		kept = append(kept, o)
	}
	s.commands[scope] = append(kept, stored)
	s.notifyLocked()
	writeJSON(w, status, stored)
}

func (s *Server) deleteCommand(w http.ResponseWriter, r *http.Request, _ *Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	scope, ok := s.commandScope(w, r)
	if !ok {
		return
	}
	cmds := s.commands[scope]
	for i, c := range cmds {
		if c.ID == r.PathValue("command") {
			s.commands[scope] = append(cmds[:i:i], cmds[i+1:]...)
			s.notifyLocked()
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	writeError(w, http.StatusNotFound, 10063, "Unknown application command")
}

func commandType(c *discordgo.ApplicationCommand) discordgo.ApplicationCommandType {
	if c.Type == 0 {
		return discordgo.ChatApplicationCommand
	}
	return c.Type
}

func (s *Server) registerLocked(cmd *discordgo.ApplicationCommand, scope string, old []*discordgo.ApplicationCommand) *discordgo.ApplicationCommand {
	c := copyCommands([]*discordgo.ApplicationCommand{cmd})[0]
	c.Type = commandType(c)
	c.ID, c.Version, c.ApplicationID, c.GuildID = "", "", "", ""
	def, _ := json.Marshal(c)
	c.ApplicationID, c.GuildID = s.cfg.appID, scope
	if prev := findCommand(old, c.Name, c.Type); prev != nil {
		c.ID = prev.ID
		p := copyCommands([]*discordgo.ApplicationCommand{prev})[0]
		p.ID, p.Version, p.ApplicationID, p.GuildID = "", "", "", ""
		prevDef, _ := json.Marshal(p)
		c.Version = prev.Version
		if !bytes.Equal(def, prevDef) {
			c.Version = s.newID()
		}
		return c
	}
	c.ID = s.newID()
	c.Version = s.newID()
	return c
}

var commandName = regexp.MustCompile(`^[-_\p{L}\p{N}\p{Devanagari}\p{Thai}]{1,32}$`)

// validateCommand applies Discord's rules for a command definition; path
// prefixes the error's field path (the command's index in a bulk list).
func validateCommand(c *discordgo.ApplicationCommand, path string) *apiError {
	p := func(field string) string {
		if path == "" {
			return field
		}
		return path + "." + field
	}
	if commandType(c) != discordgo.ChatApplicationCommand {
		if n := utf8.RuneCountInString(c.Name); n < 1 || n > 32 {
			return formError(p("name"), "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 32 in length.")
		}
		if c.Description != "" {
			return formError(p("description"), "APPLICATION_COMMAND_CONTEXT_MENU_DESCRIPTION", "Context menu commands cannot have description")
		}
		return nil
	}
	if aerr := validateName(c.Name, p("name")); aerr != nil {
		return aerr
	}
	if c.Contexts != nil {
		for i, ctx := range *c.Contexts {
			if ctx > discordgo.InteractionContextPrivateChannel {
				return formError(fmt.Sprintf("%s.%d", p("contexts"), i), "BASE_TYPE_CHOICES", "Value must be one of {0, 1, 2}.")
			}
		}
	}
	if c.IntegrationTypes != nil {
		for i, it := range *c.IntegrationTypes {
			if it > discordgo.ApplicationIntegrationUserInstall {
				return formError(fmt.Sprintf("%s.%d", p("integration_types"), i), "BASE_TYPE_CHOICES", "Value must be one of {0, 1}.")
			}
		}
	}
	if n := utf8.RuneCountInString(c.Description); n < 1 || n > 100 {
		return formError(p("description"), "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
	}
	return validateOptions(c.Options, p("options"), 0)
}

func validateName(name, path string) *apiError {
	if !commandName.MatchString(name) || strings.ToLower(name) != name {
		return formError(path, "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid")
	}
	return nil
}

// validateOptions checks one level of options; depth 0 is the command's,
// 1 a subcommand group's, subcommands' options are leaves.
func validateOptions(opts []*discordgo.ApplicationCommandOption, path string, depth int) *apiError {
	if len(opts) > 25 {
		return formError(path, "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")
	}
	names := map[string]bool{}
	optional, subs, values := false, 0, 0
	for i, o := range opts {
		p := fmt.Sprintf("%s.%d", path, i)
		if aerr := validateName(o.Name, p+".name"); aerr != nil {
			return aerr
		}
		if names[o.Name] {
			return formError(p+".name", "APPLICATION_COMMAND_OPTION_NAME_ALREADY_EXISTS", "Option names must be unique")
		}
		names[o.Name] = true
		if n := utf8.RuneCountInString(o.Description); n < 1 || n > 100 {
			return formError(p+".description", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
		}
		if len(o.Choices) > 25 {
			return formError(p+".choices", "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")
		}
		if o.Autocomplete {
			switch {
			case len(o.Choices) > 0:
				return formError(p+".autocomplete", "APPLICATION_COMMAND_OPTION_AUTOCOMPLETE_CHOICES", "Autocomplete cannot be enabled on an option with choices")
			case o.Type != discordgo.ApplicationCommandOptionString && o.Type != discordgo.ApplicationCommandOptionInteger &&
				o.Type != discordgo.ApplicationCommandOptionNumber:
				return formError(p+".autocomplete", "APPLICATION_COMMAND_OPTION_AUTOCOMPLETE_TYPE", "Autocomplete is only available on string, integer and number options")
			}
		}
		switch o.Type {
		case discordgo.ApplicationCommandOptionSubCommandGroup:
			subs++
			if depth > 0 {
				return formError(p+".type", "APPLICATION_COMMAND_OPTION_TYPE_INVALID", "Subcommand groups cannot be nested")
			}
			for j, so := range o.Options {
				if so.Type != discordgo.ApplicationCommandOptionSubCommand {
					return formError(fmt.Sprintf("%s.options.%d.type", p, j), "APPLICATION_COMMAND_OPTION_TYPE_INVALID", "Subcommand groups can only contain subcommands")
				}
			}
			if aerr := validateOptions(o.Options, p+".options", 1); aerr != nil {
				return aerr
			}
		case discordgo.ApplicationCommandOptionSubCommand:
			subs++
			if depth > 1 {
				return formError(p+".type", "APPLICATION_COMMAND_OPTION_TYPE_INVALID", "Subcommands cannot contain subcommands")
			}
			if aerr := validateOptions(o.Options, p+".options", 2); aerr != nil {
				return aerr
			}
		default:
			values++
			if o.Required && optional {
				return formError(p+".required", "APPLICATION_COMMAND_OPTIONS_REQUIRED_INVALID", "Required options must be placed before non-required options")
			}
			optional = optional || !o.Required
		}
	}
	if subs > 0 && values > 0 {
		return formError(path, "APPLICATION_COMMAND_OPTIONS_TYPE_INVALID", "Sub-command and sub-command group option types are mutually exclusive to all other types")
	}
	return nil
}
