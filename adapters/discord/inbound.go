package discord

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/bwmarrin/discordgo"

	"github.com/taskloom/taskloom/plugin"
)

// adminPermissions are the guild permissions that make a member an admin
// of the workspace: Manage Server, or Administrator (which implies it).
const adminPermissions = discordgo.PermissionManageGuild | discordgo.PermissionAdministrator

// sorryFailed is said when a message could not be handled at all.
const sorryFailed = "Sorry — that could not be handled. It has been logged; please try again."

// onMessageCreate hands messages addressed to the bot to the runtime.
// discordgo runs it in a goroutine of its own.
func (a *Adapter) onMessageCreate(_ *discordgo.Session, mc *discordgo.MessageCreate) {
	msg, ok := a.incoming(mc.Message)
	if !ok {
		return
	}
	ctx, ok := a.begin()
	if !ok {
		return
	}
	defer a.inflight.Done()
	if !msg.DM {
		msg.Room = a.roomOf(ctx, mc.ChannelID, mc.GuildID)
		msg.Admin = a.memberIsAdmin(ctx, mc.GuildID, mc.Author.ID, mc.Member)
		// In a task's thread, addressing the bot is answering the task
		// there, as a reply to its question is: without the privileged
		// MESSAGE_CONTENT intent the bot reads nothing else.
		if msg.Mentioned && !msg.ReplyToBot && a.taskReportsIn(ctx, msg.Room) {
			msg.ReplyToBot = true
		}
	}
	defer a.takeCreated(mc.ID) // a task created without a reply gets no thread
	reply := func(ctx context.Context, r plugin.Response) error {
		first, err := a.reply(ctx, mc.ChannelID, mc.ID, r)
		if err != nil {
			return err
		}
		a.acknowledged(ctx, mc.ID, r, msg.Room, msg.DM, func() (string, error) { return first, nil })
		return nil
	}
	if err := a.rt.HandleMessage(ctx, msg, reply); err != nil {
		a.log.Error("handling a message failed", "channel", mc.ChannelID, "message", mc.ID, "err", err)
	}
}

// incoming turns a Discord message into a runtime message, when it is
// addressed to the bot: a DM, a mention, or a reply to the bot. The bot's
// own messages (Discord echoes them), other bots' and webhooks' are not.
func (a *Adapter) incoming(m *discordgo.Message) (plugin.Message, bool) {
	bot := a.botID()
	if m == nil || m.Author == nil || m.Author.Bot || m.WebhookID != "" || bot == "" || m.Author.ID == bot {
		return plugin.Message{}, false
	}
	if m.Type != discordgo.MessageTypeDefault && m.Type != discordgo.MessageTypeReply {
		return plugin.Message{}, false // joins, pins, thread starters…
	}
	dm := m.GuildID == ""
	mentioned := false
	for _, u := range m.Mentions {
		if u != nil && u.ID == bot {
			mentioned = true
		}
	}
	replyToBot := m.ReferencedMessage != nil && m.ReferencedMessage.Author != nil && m.ReferencedMessage.Author.ID == bot
	if !dm && !mentioned && !replyToBot {
		return plugin.Message{}, false
	}
	text := stripMention(m.Content, bot)
	if !dm && !mentioned && strings.TrimSpace(text) == "" {
		// A reply that does not ping the bot: without the MESSAGE_CONTENT
		// intent Discord withholds its text, so there is nothing to act on.
		return plugin.Message{}, false
	}
	msg := plugin.Message{
		ID:          m.ID,
		Platform:    Name,
		Room:        Name + ":" + m.ChannelID,
		WorkspaceID: m.GuildID,
		AuthorID:    m.Author.ID,
		AuthorName:  displayName(m.Author, m.Member),
		Text:        text,
		DM:          dm,
		Mentioned:   mentioned,
		ReplyToBot:  replyToBot,
		Time:        a.clk.Now(),
	}
	if m.MessageReference != nil {
		msg.ReplyToID = m.MessageReference.MessageID
	}
	return msg, true
}

// stripMention removes the bot's own mentions (<@id>, <@!id>) from text,
// keeping its lines.
func stripMention(text, bot string) string {
	for _, m := range []string{"<@" + bot + ">", "<@!" + bot + ">"} {
		text = strings.ReplaceAll(text, m, "")
	}
	return strings.TrimSpace(text)
}

func displayName(u *discordgo.User, m *discordgo.Member) string {
	switch {
	case m != nil && m.Nick != "":
		return m.Nick
	case u.GlobalName != "":
		return u.GlobalName
	}
	return u.Username
}

// memberIsAdmin reports whether a guild member may control any task of
// the guild: its owner, or a member whose roles grant Manage Server or
// Administrator. The guild comes from the gateway's state (GUILDS keeps
// its roles current), or from the REST API before its GUILD_CREATE.
func (a *Adapter) memberIsAdmin(ctx context.Context, guildID, userID string, m *discordgo.Member) bool {
	owner, roles, ok := a.stateGuild(guildID)
	if !ok {
		g, err := a.sess.Guild(guildID, discordgo.WithContext(ctx))
		if err != nil {
			a.log.Warn("cannot read the guild's roles; treating the author as a member", "guild", guildID, "err", err)
			return false
		}
		owner, roles = g.OwnerID, map[string]int64{}
		for _, r := range g.Roles {
			roles[r.ID] = r.Permissions
		}
	}
	if userID == owner {
		return true
	}
	if m == nil {
		var err error
		if m, err = a.sess.GuildMember(guildID, userID, discordgo.WithContext(ctx)); err != nil {
			a.log.Warn("cannot read the member's roles; treating the author as a member", "guild", guildID, "user", userID, "err", err)
			return false
		}
	}
	perms := roles[guildID] // @everyone's role has the guild's ID
	for _, id := range m.Roles {
		perms |= roles[id]
	}
	return perms&adminPermissions != 0
}

// stateGuild reads a guild's owner and role permissions from the state,
// under its lock (the gateway updates it in place).
func (a *Adapter) stateGuild(guildID string) (owner string, roles map[string]int64, ok bool) {
	st := a.sess.State
	st.RLock()
	defer st.RUnlock()
	for _, g := range st.Guilds {
		if g.ID != guildID || len(g.Roles) == 0 {
			continue
		}
		roles = make(map[string]int64, len(g.Roles))
		for _, r := range g.Roles {
			roles[r.ID] = r.Permissions
		}
		return g.OwnerID, roles, true
	}
	return "", nil, false
}

// onInteractionCreate answers /task, its autocompletes and the task
// buttons. discordgo runs it in a goroutine of its own.
func (a *Adapter) onInteractionCreate(_ *discordgo.Session, ic *discordgo.InteractionCreate) {
	in := ic.Interaction
	if in == nil {
		return
	}
	switch in.Type {
	case discordgo.InteractionApplicationCommand, discordgo.InteractionMessageComponent, discordgo.InteractionApplicationCommandAutocomplete:
	default:
		return
	}
	ctx, ok := a.begin()
	if !ok {
		return
	}
	defer a.inflight.Done()
	if in.Type == discordgo.InteractionApplicationCommandAutocomplete {
		a.autocomplete(ctx, in)
		return
	}
	a.handleInteraction(ctx, in)
}

// handleInteraction runs an interaction through the runtime and answers
// it within Discord's three seconds: with the reply itself when it is
// ready within DeferAfter, else with a deferred response that the reply
// then completes.
func (a *Adapter) handleInteraction(ctx context.Context, in *discordgo.Interaction) {
	r := &interactionReply{a: a, in: in, component: in.Type == discordgo.InteractionMessageComponent}
	msg, refusal := a.interactionMessage(ctx, in)
	r.room, r.dm = msg.Room, msg.DM
	defer a.takeCreated(in.ID) // a task created without a reply gets no thread
	if refusal != "" {
		if err := r.reply(ctx, plugin.Response{Text: refusal, Ephemeral: true}); err != nil {
			a.log.Error("answering an interaction failed", "interaction", in.ID, "err", err)
		}
		return
	}
	// The timer starts before the work, so that the window counts from
	// here.
	timer := a.clk.NewTimer(a.opts.DeferAfter)
	defer timer.Stop()
	done := make(chan error, 1)
	go func() { done <- a.rt.HandleMessage(ctx, msg, r.reply) }()
	var err error
	select {
	case err = <-done:
	case <-timer.C():
		r.deferResponse(ctx)
		err = <-done
	}
	r.finish(ctx, err)
}

// caller is who invoked an interaction, and what the bot can do where it
// came from.
type caller struct {
	user  *discordgo.User
	admin bool // Manage Server (or Administrator) in the guild
	// away: the bot is not where the interaction came from — a group DM,
	// someone else's DM, or a server the app is installed in only by the
	// user — so it can answer the interaction but not post there later.
	away bool
	// dm: a DM with the bot, or away; either way the tasks made there are
	// the caller's own, seen by no one else.
	dm bool
}

// caller reads who invoked an interaction: the member in a guild, the
// user elsewhere (DMs, group DMs); false when neither is there.
func (a *Adapter) caller(in *discordgo.Interaction) (caller, bool) {
	c := caller{user: in.User}
	if in.Member != nil { // in a guild: the member, with its permissions there
		if in.Member.User != nil {
			c.user = in.Member.User
		}
		c.admin = in.Member.Permissions&adminPermissions != 0
	}
	if c.user == nil {
		return caller{}, false
	}
	c.away = !botPresent(in)
	c.dm = in.GuildID == "" || c.away
	if c.away {
		c.admin = false // the bot's server is not this one
	}
	return c, true
}

// botPresent reports whether the bot is where an interaction came from: a
// DM with it, or a server the app is installed to. A group DM (context
// PRIVATE_CHANNEL) never has it, nor a server whose
// authorizing_integration_owners lacks GUILD_INSTALL (the app installed
// there only to the user's account).
func botPresent(in *discordgo.Interaction) bool {
	if in.Context == discordgo.InteractionContextPrivateChannel {
		return false
	}
	if in.GuildID != "" && in.AuthorizingIntegrationOwners != nil {
		_, ok := in.AuthorizingIntegrationOwners[discordgo.ApplicationIntegrationGuildInstall]
		return ok
	}
	return true
}

// interactionRoom is the room an interaction's tasks report in: its
// channel or thread, or — where the bot cannot post — the caller's DM
// with the bot.
func (a *Adapter) interactionRoom(ctx context.Context, in *discordgo.Interaction, who caller) string {
	switch {
	case who.away:
		ch, err := a.dmChannel(ctx, who.user.ID)
		if err != nil {
			a.log.Warn("cannot open a DM with the user, where the bot would report: its messages for this channel will not be delivered",
				"user", who.user.ID, "channel", in.ChannelID, "err", err)
			return Name + ":" + in.ChannelID
		}
		return Name + ":" + ch
	case in.GuildID != "":
		return a.roomOf(ctx, in.ChannelID, in.GuildID)
	}
	return Name + ":" + in.ChannelID
}

// dmChannel is the DM channel between the bot and a user, opened once.
func (a *Adapter) dmChannel(ctx context.Context, userID string) (string, error) {
	a.mu.Lock()
	id, ok := a.dms[userID]
	a.mu.Unlock()
	if ok {
		return id, nil
	}
	ch, err := a.sess.UserChannelCreate(userID, discordgo.WithContext(ctx))
	if err != nil {
		return "", rateLimited(err)
	}
	a.mu.Lock()
	a.dms[userID] = ch.ID
	a.mu.Unlock()
	return ch.ID, nil
}

// interactionMessage turns an interaction into a Command message, or
// says why it cannot be one.
func (a *Adapter) interactionMessage(ctx context.Context, in *discordgo.Interaction) (plugin.Message, string) {
	who, ok := a.caller(in)
	if !ok {
		return plugin.Message{}, "I cannot tell who you are, so I cannot do that."
	}
	var (
		text   string
		action string
		params json.RawMessage
	)
	switch in.Type {
	case discordgo.InteractionApplicationCommand:
		t, err := commandText(in.ApplicationCommandData())
		if err != nil {
			a.log.Warn("unknown application command", "interaction", in.ID, "err", err)
			return plugin.Message{}, "I only know `/task`; try `/task list`."
		}
		text = t
		action, params = commandAction(in.ApplicationCommandData())
	case discordgo.InteractionMessageComponent:
		t, ok := buttonText(in.MessageComponentData().CustomID)
		if !ok {
			return plugin.Message{}, "That button is not one of mine any more; try `/task list`."
		}
		text = t
	}
	return plugin.Message{
		ID:          in.ID, // a replayed interaction is acted on once
		Platform:    Name,
		Room:        a.interactionRoom(ctx, in, who),
		WorkspaceID: in.GuildID,
		AuthorID:    who.user.ID,
		AuthorName:  displayName(who.user, in.Member),
		Text:        text,
		DM:          who.dm,
		Command:     true,
		Admin:       who.admin,
		Time:        a.clk.Now(),
		Action:      action,
		Params:      params,
	}, ""
}

// interactionReply delivers the runtime's replies to an interaction: the
// first as its response (or as the completion of its deferred response),
// the rest as follow-ups. Button presses are answered ephemerally, to the
// presser only.
type interactionReply struct {
	a         *Adapter
	in        *discordgo.Interaction
	component bool
	room      string // the room of the interaction's message
	dm        bool   // and whether it is a DM's

	mu                sync.Mutex
	state             replyState
	deferredEphemeral bool
}

type replyState int

const (
	unanswered replyState = iota
	deferred              // "thinking…" shown; @original waits for the reply
	answered
)

func (r *interactionReply) reply(ctx context.Context, resp plugin.Response) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	parts := splitText(resp.Text)
	if len(parts) == 0 {
		return nil
	}
	ephemeral := resp.Ephemeral || r.component
	var flags discordgo.MessageFlags
	if ephemeral {
		flags = discordgo.MessageFlagsEphemeral
	}
	controls := r.a.controls(ctx, nil, taskNumbers(resp.TaskNumber))
	last := func(i int) []discordgo.MessageComponent {
		if i == len(parts)-1 {
			return controls
		}
		return nil
	}
	opt := discordgo.WithContext(ctx)
	next := 0
	// first is the reply's first message, once its ID is known: a
	// response's is not until it is asked for (@original).
	var first string
	switch r.state {
	case unanswered:
		err := r.a.sess.InteractionRespond(r.in, &discordgo.InteractionResponse{
			Type: discordgo.InteractionResponseChannelMessageWithSource,
			Data: &discordgo.InteractionResponseData{
				Content: parts[0], Flags: flags, AllowedMentions: noMentions(), Components: last(0),
			},
		}, opt)
		if err != nil {
			id, made := r.madeDespite(ctx, err)
			if !made {
				return interactionError("respond to", r.in, err)
			}
			first = id
		}
		next = 1
	case deferred:
		if ephemeral == r.deferredEphemeral {
			content, comps := parts[0], last(0)
			if comps == nil {
				comps = []discordgo.MessageComponent{}
			}
			m, err := r.a.sess.InteractionResponseEdit(r.in, &discordgo.WebhookEdit{
				Content: &content, Components: &comps, AllowedMentions: noMentions(),
			}, opt)
			if err != nil {
				return interactionError("complete the deferred response to", r.in, err)
			}
			first, next = m.ID, 1
		} else if err := r.a.sess.InteractionResponseDelete(r.in, opt); err != nil {
			// A deferred response cannot become ephemeral: its place is
			// taken by an ephemeral follow-up.
			return interactionError("delete the deferred response to", r.in, err)
		}
	}
	r.state = answered
	for i := next; i < len(parts); i++ {
		m, err := r.a.sess.FollowupMessageCreate(r.in, true, &discordgo.WebhookParams{
			Content: parts[i], Flags: flags, AllowedMentions: noMentions(), Components: last(i),
		}, opt)
		if err != nil {
			return interactionError("follow up on", r.in, err)
		}
		if i == 0 {
			first = m.ID
		}
	}
	ack := resp
	ack.Ephemeral = ephemeral
	r.a.acknowledged(ctx, r.in.ID, ack, r.room, r.dm, func() (string, error) {
		if first != "" {
			return first, nil
		}
		m, err := r.a.sess.InteractionResponse(r.in, opt)
		if err != nil {
			return "", interactionError("read the response to", r.in, err)
		}
		return m.ID, nil
	})
	return nil
}

// madeDespite reports whether the interaction's response was made although
// creating it failed with err, and its message's ID: a server error or a
// lost answer may come after Discord did the work, and an interaction
// response carries no nonce to make a second attempt harmless, so its
// @original is asked for. A refusal (4xx) made nothing.
func (r *interactionReply) madeDespite(ctx context.Context, err error) (string, bool) {
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode < http.StatusInternalServerError {
		return "", false
	}
	if ctx.Err() != nil {
		return "", false
	}
	m, gerr := r.a.sess.InteractionResponse(r.in, discordgo.WithContext(ctx))
	if gerr != nil || m == nil || m.ID == "" {
		return "", false
	}
	r.a.log.Info("an interaction's response was made although Discord answered an error", "interaction", r.in.ID, "err", err)
	return m.ID, true
}

// deferResponse acknowledges the interaction with "thinking…", when no
// reply has been sent yet. A command's deferral is public, as most
// replies are; a button's is ephemeral, as its reply will be.
func (r *interactionReply) deferResponse(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state != unanswered {
		return
	}
	var flags discordgo.MessageFlags
	if r.component {
		flags = discordgo.MessageFlagsEphemeral
	}
	err := r.a.sess.InteractionRespond(r.in, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseDeferredChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Flags: flags},
	}, discordgo.WithContext(ctx))
	if err != nil {
		if _, made := r.madeDespite(ctx, err); !made {
			r.a.log.Error("deferring an interaction failed", "interaction", r.in.ID, "err", err)
			return
		}
	}
	r.state, r.deferredEphemeral = deferred, r.component
	r.a.log.Debug("interaction deferred", "interaction", r.in.ID, "after", r.a.opts.DeferAfter)
}

// finish closes what the runtime left open: an error gets an apology; a
// deferred response nothing completed (an interaction delivered twice)
// is removed.
func (r *interactionReply) finish(ctx context.Context, err error) {
	if err != nil {
		r.a.log.Error("handling an interaction failed", "interaction", r.in.ID, "err", err)
		r.mu.Lock()
		state := r.state
		r.mu.Unlock()
		if state != answered {
			if err := r.reply(ctx, plugin.Response{Text: sorryFailed, Ephemeral: true}); err != nil {
				r.a.log.Error("apologising for an interaction failed", "interaction", r.in.ID, "err", err)
			}
		}
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state == deferred {
		if err := r.a.sess.InteractionResponseDelete(r.in, discordgo.WithContext(ctx)); err != nil {
			r.a.log.Warn("removing an unanswered deferred response failed", "interaction", r.in.ID, "err", err)
		}
		r.state = answered
	}
}
