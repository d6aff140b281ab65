package discordfake

import (
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
)

// Threads, as Discord's Start Thread from Message makes them: a public
// thread whose ID is the starter message's, in the starter's channel
// (parent_id), started by the caller (owner_id). Messages in a thread are
// messages of a channel of its own (channel_id = the thread ID), and the
// gateway announces the thread with THREAD_CREATE to the sessions with the
// GUILDS intent and updates the starter message (MESSAGE_UPDATE, flag
// HAS_THREAD and a thread field).

// autoArchiveDurations are the values Discord takes for
// auto_archive_duration, in minutes.
var autoArchiveDurations = []int{60, 1440, 4320, 10080}

// Thread is a thread as the fake keeps it.
type Thread struct {
	ID, GuildID, ParentID, OwnerID, Name string
	// AutoArchiveDuration is in minutes.
	AutoArchiveDuration int
	Created             time.Time
}

// Threads returns the threads of a channel (parentID), oldest first.
func (s *Server) Threads(parentID string) []Thread {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Thread
	for _, c := range s.threadsLocked(func(c *channel) bool { return c.parentID == parentID }) {
		out = append(out, Thread{ID: c.id, GuildID: c.guildID, ParentID: c.parentID, OwnerID: c.ownerID, Name: c.name,
			AutoArchiveDuration: s.archiveAfter[c.id], Created: c.created})
	}
	return out
}

// AddThread makes a public thread in a guild text channel known, as a
// person who started it in Discord's client would: sessions that have its
// guild get THREAD_CREATE. Messages sent to threadID are then in the
// thread.
func (s *Server) AddThread(threadID, parentID, ownerID, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	parent, ok := s.channels[parentID]
	if !ok || parent.guildID == "" {
		s.t.Errorf("discordfake: AddThread(%s): %s is not a guild channel the fake knows", threadID, parentID)
		return
	}
	s.ensureUserLocked(ownerID)
	s.addThreadLocked(threadID, parent, ownerID, name, 1440)
}

// AddPrivateThread makes a private thread (GUILD_PRIVATE_THREAD) in a
// guild text channel known, with the bot among its members, as when a
// member started it in Discord's client and invited or mentioned the bot:
// only its members (and those who may manage threads) see it or read its
// messages, although they can all read the channel. Sessions that have
// its guild get THREAD_CREATE, which Discord sends a user added to a
// thread; messages sent to threadID are then in the thread.
func (s *Server) AddPrivateThread(threadID, parentID, ownerID, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	parent, ok := s.channels[parentID]
	if !ok || parent.guildID == "" || parent.kind != discordgo.ChannelTypeGuildText {
		// Discord makes private threads in text channels only.
		s.t.Errorf("discordfake: AddPrivateThread(%s): %s is not a guild text channel the fake knows", threadID, parentID)
		return
	}
	s.ensureUserLocked(ownerID)
	s.addThreadOfLocked(discordgo.ChannelTypeGuildPrivateThread, threadID, parent, ownerID, name, 1440)
}

// threadsLocked lists the threads that keep, by ID (creation order).
func (s *Server) threadsLocked(keep func(*channel) bool) []*channel {
	var out []*channel
	for _, c := range s.channels {
		if c.isThread() && keep(c) {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b *channel) int { return compareIDs(a.id, b.id) })
	return out
}

func compareIDs(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

// addThreadLocked records a thread and announces it.
func (s *Server) addThreadLocked(id string, parent *channel, ownerID, name string, archiveAfter int) *channel {
	kind := discordgo.ChannelTypeGuildPublicThread
	if parent.kind == discordgo.ChannelTypeGuildNews {
		kind = discordgo.ChannelTypeGuildNewsThread
	}
	return s.addThreadOfLocked(kind, id, parent, ownerID, name, archiveAfter)
}

// addThreadOfLocked records a thread of a type and announces it.
func (s *Server) addThreadOfLocked(kind discordgo.ChannelType, id string, parent *channel, ownerID, name string, archiveAfter int) *channel {
	th := &channel{id: id, guildID: parent.guildID, name: name, kind: kind, parentID: parent.id, ownerID: ownerID,
		created: s.cfg.now().UTC()}
	s.channels[id] = th
	s.archiveAfter[id] = archiveAfter
	s.dispatchLocked("THREAD_CREATE", func(ss *session) any {
		if !ss.wantsGuild(th.guildID, discordgo.IntentGuilds) {
			return nil
		}
		w := s.wireChannelLocked(th)
		w["newly_created"] = true
		return w
	})
	s.notifyLocked()
	return th
}

// startThread is POST /channels/{channel}/messages/{message}/threads.
func (s *Server) startThread(w http.ResponseWriter, r *http.Request, c *Call) {
	var body struct {
		Name                *string `json:"name"`
		AutoArchiveDuration *int    `json:"auto_archive_duration"`
		RateLimitPerUser    *int    `json:"rate_limit_per_user"`
	}
	if c.Decode(&body) != nil || body.Name == nil {
		writeAPIError(w, formError("name", "BASE_TYPE_REQUIRED", "This field is required"))
		return
	}
	if n := utf8.RuneCountInString(*body.Name); n < 1 || n > 100 || strings.TrimSpace(*body.Name) == "" {
		writeAPIError(w, formError("name", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length."))
		return
	}
	archiveAfter := 1440 // the channel's default, as Discord's is a day
	if d := body.AutoArchiveDuration; d != nil {
		if !slices.Contains(autoArchiveDurations, *d) {
			writeAPIError(w, formError("auto_archive_duration", "BASE_TYPE_CHOICES", "Value must be one of {60, 1440, 4320, 10080}."))
			return
		}
		archiveAfter = *d
	}
	if d := body.RateLimitPerUser; d != nil && (*d < 0 || *d > 21600) {
		writeAPIError(w, formError("rate_limit_per_user", "NUMBER_TYPE_MAX", "int value should be less than or equal to 21600."))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.channels[r.PathValue("channel")]
	switch {
	case !ok:
		writeError(w, http.StatusNotFound, 10003, "Unknown Channel")
		return
	case s.denied[ch.id] || ch.kind == discordgo.ChannelTypeGroupDM:
		writeError(w, http.StatusForbidden, 50001, "Missing Access")
		return
	}
	m := s.channelMessageLocked(w, r)
	if m == nil {
		return
	}
	switch {
	case ch.kind != discordgo.ChannelTypeGuildText && ch.kind != discordgo.ChannelTypeGuildNews:
		// DMs and threads cannot have threads.
		writeError(w, http.StatusBadRequest, 50024, "Cannot execute action on this channel type")
		return
	case s.botPermissionsLocked(ch)&discordgo.PermissionCreatePublicThreads == 0:
		writeError(w, http.StatusForbidden, 50013, "Missing Permissions")
		return
	case m.Flags&discordgo.MessageFlagsHasThread != 0:
		writeError(w, http.StatusBadRequest, 160004, "A thread has already been created for this message")
		return
	}
	th := s.addThreadLocked(m.ID, ch, s.cfg.bot.ID, *body.Name, archiveAfter)
	m.Flags |= discordgo.MessageFlagsHasThread
	if !s.cfg.noEcho {
		s.dispatchMessageLocked("MESSAGE_UPDATE", m)
	}
	writeJSON(w, http.StatusCreated, s.wireChannelLocked(th))
}

// botPermissionsLocked is what the bot may do in a guild channel (a
// thread's are its parent's): its guild permissions less what
// DenyPermissions took there.
func (s *Server) botPermissionsLocked(ch *channel) int64 {
	g, ok := s.guilds[ch.guildID]
	if !ok {
		return 0
	}
	denied := s.deniedPerms[ch.id]
	if ch.parentID != "" {
		denied |= s.deniedPerms[ch.parentID]
	}
	return s.permissionsLocked(g, s.cfg.bot.ID) &^ denied
}

// wireThread is a thread channel object, as GET /channels/{id},
// THREAD_CREATE and GUILD_CREATE's threads carry it.
func (s *Server) wireThread(c *channel) map[string]any {
	w := map[string]any{
		"id": c.id, "type": c.kind, "guild_id": c.guildID, "parent_id": c.parentID, "owner_id": c.ownerID,
		"name": c.name, "last_message_id": nil, "rate_limit_per_user": 0, "flags": 0,
		"message_count": len(s.messages[c.id]), "total_message_sent": len(s.messages[c.id]), "member_count": 1,
		"thread_metadata": map[string]any{
			"archived": false, "auto_archive_duration": s.archiveAfter[c.id], "locked": false,
			"archive_timestamp": c.created.Format(discordTime), "create_timestamp": c.created.Format(discordTime),
		},
	}
	if c.kind == discordgo.ChannelTypeGuildPrivateThread {
		// Whether members other than moderators may invite others: private
		// threads only.
		w["thread_metadata"].(map[string]any)["invitable"] = true
	}
	return w
}

// wireGroupDM is a group DM channel object.
func (s *Server) wireGroupDM(c *channel) map[string]any {
	recipients := []any{}
	for _, id := range c.recipients {
		recipients = append(recipients, wireUser(s.ensureUserLocked(id)))
	}
	owner := ""
	if len(c.recipients) > 0 {
		owner = c.recipients[0]
	}
	return map[string]any{
		"id": c.id, "type": discordgo.ChannelTypeGroupDM, "name": nil, "icon": nil, "owner_id": owner,
		"recipients": recipients, "last_message_id": nil, "flags": 0,
	}
}

// AddGroupDM makes a group DM among users known: a channel the bot is not
// in, where the app can be used only when users install it (interactions
// of context PRIVATE_CHANNEL). The bot cannot post there: Discord answers
// 403 Missing Access.
func (s *Server) AddGroupDM(channelID string, userIDs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range userIDs {
		s.ensureUserLocked(id)
	}
	s.channels[channelID] = &channel{id: channelID, kind: discordgo.ChannelTypeGroupDM, recipients: slices.Clone(userIDs)}
}

// threadField is the thread object a starter message carries once its
// thread exists.
func (s *Server) threadFieldLocked(m *Message) (map[string]any, bool) {
	if m.Flags&discordgo.MessageFlagsHasThread == 0 {
		return nil, false
	}
	th, ok := s.channels[m.ID]
	if !ok || !th.isThread() {
		return nil, false
	}
	return s.wireThread(th), true
}
