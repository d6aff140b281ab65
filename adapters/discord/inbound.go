package discord

import (
	"context"
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
		msg.Admin = a.memberIsAdmin(ctx, mc.GuildID, mc.Author.ID, mc.Member)
	}
	reply := func(ctx context.Context, r plugin.Response) error {
		return a.reply(ctx, mc.ChannelID, mc.GuildID, mc.ID, r)
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

// onInteractionCreate answers /task and the task buttons. discordgo runs
// it in a goroutine of its own.
func (a *Adapter) onInteractionCreate(_ *discordgo.Session, ic *discordgo.InteractionCreate) {
	in := ic.Interaction
	if in == nil || (in.Type != discordgo.InteractionApplicationCommand && in.Type != discordgo.InteractionMessageComponent) {
		return
	}
	ctx, ok := a.begin()
	if !ok {
		return
	}
	defer a.inflight.Done()
	a.handleInteraction(ctx, in)
}

// handleInteraction runs an interaction through the runtime and answers
// it within Discord's three seconds: with the reply itself when it is
// ready within DeferAfter, else with a deferred response that the reply
// then completes.
func (a *Adapter) handleInteraction(ctx context.Context, in *discordgo.Interaction) {
	r := &interactionReply{a: a, in: in, component: in.Type == discordgo.InteractionMessageComponent}
	msg, refusal := a.interactionMessage(in)
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

// interactionMessage turns an interaction into a Command message, or
// says why it cannot be one.
func (a *Adapter) interactionMessage(in *discordgo.Interaction) (plugin.Message, string) {
	user := in.User
	admin := false
	if in.Member != nil { // in a guild: the member, with its permissions there
		if in.Member.User != nil {
			user = in.Member.User
		}
		admin = in.Member.Permissions&adminPermissions != 0
	}
	if user == nil {
		return plugin.Message{}, "I cannot tell who you are, so I cannot do that."
	}
	var text string
	switch in.Type {
	case discordgo.InteractionApplicationCommand:
		t, err := commandText(in.ApplicationCommandData())
		if err != nil {
			a.log.Warn("unknown application command", "interaction", in.ID, "err", err)
			return plugin.Message{}, "I only know `/task`; try `/task list`."
		}
		text = t
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
		Room:        Name + ":" + in.ChannelID,
		WorkspaceID: in.GuildID,
		AuthorID:    user.ID,
		AuthorName:  displayName(user, in.Member),
		Text:        text,
		DM:          in.GuildID == "",
		Command:     true,
		Admin:       admin,
		Time:        a.clk.Now(),
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
	controls := r.a.controls(ctx, taskNumbers(resp.TaskNumber))
	last := func(i int) []discordgo.MessageComponent {
		if i == len(parts)-1 {
			return controls
		}
		return nil
	}
	opt := discordgo.WithContext(ctx)
	next := 0
	switch r.state {
	case unanswered:
		err := r.a.sess.InteractionRespond(r.in, &discordgo.InteractionResponse{
			Type: discordgo.InteractionResponseChannelMessageWithSource,
			Data: &discordgo.InteractionResponseData{
				Content: parts[0], Flags: flags, AllowedMentions: noMentions(), Components: last(0),
			},
		}, opt)
		if err != nil {
			return interactionError("respond to", r.in, err)
		}
		next = 1
	case deferred:
		if ephemeral == r.deferredEphemeral {
			content, comps := parts[0], last(0)
			if comps == nil {
				comps = []discordgo.MessageComponent{}
			}
			_, err := r.a.sess.InteractionResponseEdit(r.in, &discordgo.WebhookEdit{
				Content: &content, Components: &comps, AllowedMentions: noMentions(),
			}, opt)
			if err != nil {
				return interactionError("complete the deferred response to", r.in, err)
			}
			next = 1
		} else if err := r.a.sess.InteractionResponseDelete(r.in, opt); err != nil {
			// A deferred response cannot become ephemeral: its place is
			// taken by an ephemeral follow-up.
			return interactionError("delete the deferred response to", r.in, err)
		}
	}
	r.state = answered
	for i := next; i < len(parts); i++ {
		_, err := r.a.sess.FollowupMessageCreate(r.in, true, &discordgo.WebhookParams{
			Content: parts[i], Flags: flags, AllowedMentions: noMentions(), Components: last(i),
		}, opt)
		if err != nil {
			return interactionError("follow up on", r.in, err)
		}
	}
	return nil
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
		r.a.log.Error("deferring an interaction failed", "interaction", r.in.ID, "err", err)
		return
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
