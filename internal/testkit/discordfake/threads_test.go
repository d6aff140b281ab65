package discordfake_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/taskloom/taskloom/internal/testkit/discordfake"
)

// restCode is the Discord error code of a discordgo REST error, 0 if none.
func restCode(err error) int {
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Message != nil {
		return re.Message.Code
	}
	return 0
}

func TestStartThreadFromMessage(t *testing.T) {
	t.Parallel()
	srv := discordfake.New(t, discordfake.WithGuild(discordfake.Guild{ID: guildID, ChannelIDs: []string{channelID}}))
	s := newSession(t, srv)
	threads := make(chan *discordgo.ThreadCreate, 4)
	s.AddHandler(func(_ *discordgo.Session, tc *discordgo.ThreadCreate) { threads <- tc })
	updates := make(chan *discordgo.MessageUpdate, 4)
	s.AddHandler(func(_ *discordgo.Session, mu *discordgo.MessageUpdate) { updates <- mu })
	msgs := make(chan *discordgo.MessageCreate, 16)
	s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) { msgs <- m })
	open(t, s)

	starter, err := s.ChannelMessageSend(channelID, "Created task #1")
	if err != nil {
		t.Fatal(err)
	}
	receive(t, msgs, "the starter's echo")
	th, err := s.MessageThreadStartComplex(channelID, starter.ID, &discordgo.ThreadStart{Name: "#1 Build auth", AutoArchiveDuration: 10080})
	if err != nil {
		t.Fatal(err)
	}
	if th.ID != starter.ID || th.Type != discordgo.ChannelTypeGuildPublicThread || th.ParentID != channelID || th.GuildID != guildID ||
		th.OwnerID != srv.BotUser().ID || th.Name != "#1 Build auth" || th.ThreadMetadata == nil || th.ThreadMetadata.AutoArchiveDuration != 10080 {
		t.Errorf("thread = %+v (metadata %+v)", th, th.ThreadMetadata)
	}
	if cs := srv.CallsTo("POST", "/channels/"+channelID+"/messages/"+starter.ID+"/threads"); len(cs) != 1 || cs[0].Status != http.StatusCreated {
		t.Errorf("calls = %+v", cs)
	}
	tc := receive(t, threads, "THREAD_CREATE")
	if tc.ID != th.ID || tc.ParentID != channelID || !tc.NewlyCreated {
		t.Errorf("THREAD_CREATE = %+v", tc.Channel)
	}
	if mu := receive(t, updates, "MESSAGE_UPDATE"); mu.ID != starter.ID || mu.Flags&discordgo.MessageFlagsHasThread == 0 || mu.Thread == nil || mu.Thread.ID != th.ID {
		t.Errorf("MESSAGE_UPDATE = %+v", mu.Message)
	}
	if st, err := s.State.Channel(th.ID); err != nil || !st.IsThread() || st.ParentID != channelID {
		t.Errorf("discordgo's state has the thread as %+v, %v", st, err)
	}
	if got, err := s.Channel(th.ID); err != nil || got.ParentID != channelID || !got.IsThread() {
		t.Errorf("GET the thread = %+v, %v", got, err)
	}

	// Messages in the thread are the thread channel's.
	in, err := s.ChannelMessageSend(th.ID, "Progress: 10%")
	if err != nil || in.ChannelID != th.ID {
		t.Fatalf("message in the thread = %+v, %v", in, err)
	}
	if ms := srv.Messages(th.ID); len(ms) != 1 || ms[0].GuildID != guildID {
		t.Errorf("Messages(thread) = %+v", ms)
	}
	if ms := srv.Messages(channelID); len(ms) != 1 {
		t.Errorf("the channel has %d messages, want only the starter", len(ms))
	}
	receive(t, msgs, "the echo in the thread")
	srv.MessageCreate(th.ID, guildID, userID, "<@"+srv.BotUser().ID+"> use JWT")
	if m := receive(t, msgs, "a person's message in the thread"); m.ChannelID != th.ID || m.GuildID != guildID || m.Content == "" {
		t.Errorf("MESSAGE_CREATE in the thread = %+v", m.Message)
	}

	// What Discord refuses.
	dm, err := s.UserChannelCreate(userID)
	if err != nil {
		t.Fatal(err)
	}
	inDM, err := s.ChannelMessageSend(dm.ID, "hello")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name             string
		channel, message string
		start            discordgo.ThreadStart
		code             int
	}{
		{"twice", channelID, starter.ID, discordgo.ThreadStart{Name: "again"}, discordgo.ErrCodeThreadAlreadyCreatedForThisMessage},
		{"in a thread", th.ID, in.ID, discordgo.ThreadStart{Name: "nested"}, discordgo.ErrCodeCannotExecuteActionOnThisChannelType},
		{"in a DM", dm.ID, inDM.ID, discordgo.ThreadStart{Name: "dm"}, discordgo.ErrCodeCannotExecuteActionOnThisChannelType},
		{"no name", channelID, starter.ID, discordgo.ThreadStart{}, discordgo.ErrCodeInvalidFormBody},
		{"long name", channelID, starter.ID, discordgo.ThreadStart{Name: strings.Repeat("x", 101)}, discordgo.ErrCodeInvalidFormBody},
		{"bad archive", channelID, starter.ID, discordgo.ThreadStart{Name: "x", AutoArchiveDuration: 30}, discordgo.ErrCodeInvalidFormBody},
		{"unknown message", channelID, "1", discordgo.ThreadStart{Name: "x"}, discordgo.ErrCodeUnknownMessage},
	} {
		if _, err := s.MessageThreadStartComplex(tc.channel, tc.message, &tc.start); restCode(err) != tc.code {
			t.Errorf("%s: %v, want code %d", tc.name, err, tc.code)
		}
	}
	other, err := s.ChannelMessageSend(channelID, "Created task #2")
	if err != nil {
		t.Fatal(err)
	}
	srv.DenyPermissions(channelID, discordgo.PermissionCreatePublicThreads)
	if _, err := s.MessageThreadStart(channelID, other.ID, "#2", 60); restCode(err) != discordgo.ErrCodeMissingPermissions {
		t.Errorf("without Create Public Threads: %v, want 50013", err)
	}
	srv.DenyPermissions(channelID, discordgo.PermissionSendMessagesInThreads)
	if _, err := s.ChannelMessageSend(th.ID, "more"); restCode(err) != discordgo.ErrCodeMissingPermissions {
		t.Errorf("posting in a thread without Send Messages in Threads: %v, want 50013", err)
	}
	srv.AllowChannel(channelID)
	if _, err := s.MessageThreadStart(channelID, other.ID, "#2", 60); err != nil {
		t.Errorf("allowed again: %v", err)
	}
	if got := srv.Threads(channelID); len(got) != 2 || got[0].ID != th.ID || got[1].Name != "#2" {
		t.Errorf("Threads = %+v", got)
	}
}

func TestGuildCreateListsActiveThreads(t *testing.T) {
	t.Parallel()
	srv := discordfake.New(t, discordfake.WithGuild(discordfake.Guild{ID: guildID, ChannelIDs: []string{channelID}}))
	srv.AddThread("1300000000000000099", channelID, userID, "planning")
	s := newSession(t, srv)
	guilds := make(chan *discordgo.GuildCreate, 1)
	s.AddHandler(func(_ *discordgo.Session, g *discordgo.GuildCreate) { guilds <- g })
	open(t, s)
	g := receive(t, guilds, "GUILD_CREATE")
	if len(g.Threads) != 1 || g.Threads[0].ID != "1300000000000000099" || g.Threads[0].ParentID != channelID || g.Threads[0].OwnerID != userID {
		t.Errorf("GUILD_CREATE threads = %+v", g.Threads)
	}
	if len(g.Channels) != 1 {
		t.Errorf("GUILD_CREATE channels = %+v, want the text channel only", g.Channels)
	}
}

// TestPrivateThread: a private thread is a channel of type
// GUILD_PRIVATE_THREAD (12) whose parent is the text channel, announced to
// the bot (a member) with THREAD_CREATE, readable with GET /channels, its
// messages its own; invitable is in its metadata, as only private threads
// have it.
func TestPrivateThread(t *testing.T) {
	t.Parallel()
	srv := discordfake.New(t, discordfake.WithGuild(discordfake.Guild{ID: guildID, ChannelIDs: []string{channelID}}))
	s := newSession(t, srv)
	threads := make(chan *discordgo.ThreadCreate, 2)
	s.AddHandler(func(_ *discordgo.Session, tc *discordgo.ThreadCreate) { threads <- tc })
	msgs := make(chan *discordgo.MessageCreate, 4)
	s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) { msgs <- m })
	open(t, s)

	const private = "1300000000000000098"
	srv.AddPrivateThread(private, channelID, userID, "deal")
	if tc := receive(t, threads, "THREAD_CREATE"); tc.ID != private || tc.Type != discordgo.ChannelTypeGuildPrivateThread ||
		tc.ParentID != channelID || tc.ThreadMetadata == nil || !tc.ThreadMetadata.Invitable {
		t.Errorf("THREAD_CREATE = %+v (metadata %+v)", tc.Channel, tc.ThreadMetadata)
	}
	got, err := s.Channel(private)
	if err != nil || got.Type != discordgo.ChannelTypeGuildPrivateThread || got.ParentID != channelID || !got.IsThread() {
		t.Errorf("GET the private thread = %+v, %v", got, err)
	}
	srv.MessageCreate(private, guildID, userID, "<@"+srv.BotUser().ID+"> hi")
	if m := receive(t, msgs, "a message in the private thread"); m.ChannelID != private || m.GuildID != guildID {
		t.Errorf("MESSAGE_CREATE = %+v", m.Message)
	}
	if th := srv.Threads(channelID); len(th) != 1 || th[0].ID != private {
		t.Errorf("Threads = %+v", th)
	}
}

func TestAutocompleteAndContexts(t *testing.T) {
	t.Parallel()
	srv := discordfake.New(t, discordfake.WithGuild(discordfake.Guild{ID: guildID, ChannelIDs: []string{channelID}}))
	s := newSession(t, srv)
	one := 1.0
	types := []discordgo.ApplicationIntegrationType{discordgo.ApplicationIntegrationGuildInstall, discordgo.ApplicationIntegrationUserInstall}
	contexts := []discordgo.InteractionContextType{discordgo.InteractionContextGuild, discordgo.InteractionContextBotDM, discordgo.InteractionContextPrivateChannel}
	cmd := &discordgo.ApplicationCommand{Name: "task", Description: "Tasks", IntegrationTypes: &types, Contexts: &contexts,
		Options: []*discordgo.ApplicationCommandOption{{
			Type: discordgo.ApplicationCommandOptionSubCommand, Name: "status", Description: "One task",
			Options: []*discordgo.ApplicationCommandOption{{
				Type: discordgo.ApplicationCommandOptionInteger, Name: "number", Description: "Its number",
				Required: true, MinValue: &one, Autocomplete: true,
			}},
		}}}
	if _, err := s.ApplicationCommandBulkOverwrite(srv.ApplicationID(), "", []*discordgo.ApplicationCommand{cmd}); err != nil {
		t.Fatal(err)
	}
	listed, err := s.ApplicationCommands(srv.ApplicationID(), "")
	if err != nil || len(listed) != 1 || listed[0].IntegrationTypes == nil || !slices.Equal(*listed[0].IntegrationTypes, types) ||
		listed[0].Contexts == nil || !slices.Equal(*listed[0].Contexts, contexts) || !listed[0].Options[0].Options[0].Autocomplete {
		t.Errorf("listed = %+v, %v", listed, err)
	}
	bad := *cmd
	bad.Options = []*discordgo.ApplicationCommandOption{{Type: discordgo.ApplicationCommandOptionString, Name: "q", Description: "q",
		Autocomplete: true, Choices: []*discordgo.ApplicationCommandOptionChoice{{Name: "a", Value: "a"}}}}
	if _, err := s.ApplicationCommandBulkOverwrite(srv.ApplicationID(), "", []*discordgo.ApplicationCommand{&bad}); restCode(err) != discordgo.ErrCodeInvalidFormBody {
		t.Errorf("autocomplete with choices: %v, want 50035", err)
	}

	got := make(chan *discordgo.InteractionCreate, 4)
	s.AddHandler(func(_ *discordgo.Session, i *discordgo.InteractionCreate) { got <- i })
	open(t, s)

	// Typing a number: type 4, the focused option's partial value.
	srv.Autocomplete(discordfake.Autocomplete{ChannelID: channelID, GuildID: guildID, User: discordfake.User{ID: userID},
		Subcommand: "status", Focused: "number", Typed: "1"})
	i := receive(t, got, "autocomplete")
	data := i.ApplicationCommandData()
	if i.Type != discordgo.InteractionApplicationCommandAutocomplete || len(data.Options) != 1 || len(data.Options[0].Options) != 1 ||
		!data.Options[0].Options[0].Focused || data.Options[0].Options[0].Value != 1.0 {
		t.Fatalf("autocomplete = %+v", i.Interaction)
	}
	if err := s.InteractionRespond(i.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: "no"}}); restCode(err) != discordgo.ErrCodeInvalidFormBody {
		t.Errorf("a message answering an autocomplete: %v, want 50035", err)
	}
	var choices []*discordgo.ApplicationCommandOptionChoice
	for n := range 26 {
		choices = append(choices, &discordgo.ApplicationCommandOptionChoice{Name: "#" + strings.Repeat("1", n+1), Value: n + 1})
	}
	if err := s.InteractionRespond(i.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionApplicationCommandAutocompleteResult,
		Data: &discordgo.InteractionResponseData{Choices: choices}}); restCode(err) != discordgo.ErrCodeInvalidFormBody {
		t.Errorf("26 choices: %v, want 50035", err)
	}
	if err := s.InteractionRespond(i.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionApplicationCommandAutocompleteResult,
		Data: &discordgo.InteractionResponseData{Choices: []*discordgo.ApplicationCommandOptionChoice{{Name: "#1", Value: "one"}}}}); restCode(err) != discordgo.ErrCodeInvalidFormBody {
		t.Errorf("a string for an integer option: %v, want 50035", err)
	}
	if err := s.InteractionRespond(i.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionApplicationCommandAutocompleteResult,
		Data: &discordgo.InteractionResponseData{Choices: choices[:25]}}); err != nil {
		t.Fatal(err)
	}
	rs := srv.Responses()
	if cs, err := rs[len(rs)-1].Choices(); err != nil || len(cs) != 25 || rs[len(rs)-1].Type != discordgo.InteractionApplicationCommandAutocompleteResult {
		t.Errorf("recorded choices = %d, %v", len(cs), err)
	}

	// A group DM: context PRIVATE_CHANNEL, a user and no guild, the
	// user's installation only; the bot cannot post there.
	const group = "1300000000000000050"
	srv.AddGroupDM(group, userID, "1300000000000000031")
	srv.SlashCommand(discordfake.SlashCommand{ChannelID: group, User: discordfake.User{ID: userID}, Subcommand: "status",
		Options: []discordfake.CommandOption{{Name: "number", Value: 1}}})
	i = receive(t, got, "group DM command")
	if i.Context != discordgo.InteractionContextPrivateChannel || i.GuildID != "" || i.Member != nil || i.User == nil || i.User.ID != userID ||
		i.AuthorizingIntegrationOwners[discordgo.ApplicationIntegrationUserInstall] != userID ||
		i.AuthorizingIntegrationOwners[discordgo.ApplicationIntegrationGuildInstall] != "" {
		t.Errorf("group DM interaction = %+v", i.Interaction)
	}
	if err := s.InteractionRespond(i.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: "Task #1"}}); err != nil {
		t.Errorf("answering in the group DM: %v", err)
	}
	if _, err := s.ChannelMessageSend(group, "hello"); restCode(err) != discordgo.ErrCodeMissingAccess {
		t.Errorf("posting in the group DM: %v, want 50001", err)
	}
	// A DM with the bot: context BOT_DM.
	srv.SlashCommand(discordfake.SlashCommand{ChannelID: dmID, User: discordfake.User{ID: userID}, Subcommand: "status",
		Options: []discordfake.CommandOption{{Name: "number", Value: 1}}})
	if i = receive(t, got, "DM command"); i.Context != discordgo.InteractionContextBotDM || i.User == nil || i.Member != nil {
		t.Errorf("DM interaction = %+v", i.Interaction)
	}
}
