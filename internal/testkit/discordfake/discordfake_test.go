package discordfake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/taskloom/taskloom/internal/testkit/discordfake"
)

const (
	guildID   = "1300000000000000010"
	channelID = "1300000000000000020"
	userID    = "1300000000000000030"
	dmID      = "1300000000000000040"
)

// newSession returns a discordgo session for the fake's bot, pointed at it,
// not yet opened.
func newSession(t *testing.T, srv *discordfake.Server) *discordgo.Session {
	t.Helper()
	s, err := discordgo.New("Bot " + srv.Token())
	if err != nil {
		t.Fatal(err)
	}
	srv.Point(s)
	return s
}

// open opens the gateway and closes it when the test ends (discordgo's
// Close takes a second).
func open(t *testing.T, s *discordgo.Session) {
	t.Helper()
	if err := s.Open(); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { closeSession(s) })
}

// closeSession closes a discordgo session for good. Close alone is not
// enough: when it comes before the heartbeat goroutine's first beat, that
// beat fails on the closed socket and discordgo reconnects, forever. The
// flag is set under the session's lock, which Open holds while it runs.
func closeSession(s *discordgo.Session) {
	s.Lock()
	s.ShouldReconnectOnError = false
	s.Unlock()
	s.Close()
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// receive waits for the next value on ch.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func TestIdentifyReadyAndMessageCreate(t *testing.T) {
	t.Parallel()
	srv := discordfake.New(t, discordfake.WithGuild(discordfake.Guild{ID: guildID, Name: "Test", ChannelIDs: []string{channelID}}))
	s := newSession(t, srv)
	guilds := make(chan *discordgo.GuildCreate, 4)
	s.AddHandler(func(_ *discordgo.Session, g *discordgo.GuildCreate) { guilds <- g })
	msgs := make(chan *discordgo.MessageCreate, 16)
	s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) { msgs <- m })
	open(t, s)

	ids := srv.Identifies()
	if len(ids) != 1 {
		t.Fatalf("Identifies() = %d, want 1", len(ids))
	}
	id := ids[0]
	if id.Token != "Bot "+discordfake.DefaultToken || id.Intents != discordgo.IntentsAllWithoutPrivileged ||
		id.Shard != [2]int{0, 1} || !id.Compress || id.SessionID == "" {
		t.Errorf("IDENTIFY = %+v", id)
	}
	if id.Query.Get("v") != "9" || id.Query.Get("encoding") != "json" {
		t.Errorf("gateway query = %v, want v=9&encoding=json", id.Query)
	}
	if u := s.State.User; u == nil || u.ID != discordfake.DefaultBotID || !u.Bot {
		t.Errorf("State.User = %+v, want the bot", u)
	}
	if s.State.Application == nil || s.State.Application.ID != srv.ApplicationID() {
		t.Errorf("State.Application = %+v", s.State.Application)
	}
	g := receive(t, guilds, "GUILD_CREATE")
	if g.ID != guildID || g.Name != "Test" || len(g.Channels) != 1 || g.Channels[0].ID != channelID {
		t.Errorf("GUILD_CREATE = %+v", g.Guild)
	}

	bot := discordfake.DefaultBotID
	srv.MessageCreate(channelID, guildID, userID, "<@"+bot+"> build auth")
	m := receive(t, msgs, "MESSAGE_CREATE")
	if m.Content != "<@"+bot+"> build auth" || m.Author.ID != userID || m.Author.Bot || m.GuildID != guildID ||
		m.ChannelID != channelID || len(m.Mentions) != 1 || m.Mentions[0].ID != bot || m.Member == nil {
		t.Errorf("MESSAGE_CREATE = %+v", m.Message)
	}

	// Without MESSAGE_CONTENT a guild message that does not mention the
	// bot arrives without its content; a DM keeps it.
	srv.MessageCreate(channelID, guildID, userID, "just chatting")
	if m := receive(t, msgs, "MESSAGE_CREATE"); m.Content != "" || m.Author.ID != userID {
		t.Errorf("unmentioned guild message: content %q, want it hidden", m.Content)
	}
	srv.MessageCreate(dmID, "", userID, "status 3")
	if m := receive(t, msgs, "MESSAGE_CREATE"); m.Content != "status 3" || m.GuildID != "" {
		t.Errorf("DM = %+v", m.Message)
	}
	// The bot's own messages come back, as on Discord; a DM channel for a
	// user is the one the user wrote from.
	dm, err := s.UserChannelCreate(userID)
	if err != nil || dm.ID != dmID || dm.Type != discordgo.ChannelTypeDM {
		t.Fatalf("UserChannelCreate = %+v, %v", dm, err)
	}
	if _, err := s.ChannelMessageSend(dm.ID, "Task #1 done"); err != nil {
		t.Fatal(err)
	}
	if m := receive(t, msgs, "echo"); m.Author.ID != bot || m.Content != "Task #1 done" {
		t.Errorf("echo = %+v", m.Message)
	}
	if srv.Heartbeats() < 1 {
		t.Errorf("Heartbeats() = 0; discordgo sends one at once")
	}
}

func TestMessageContentIntentIsPrivileged(t *testing.T) {
	t.Parallel()
	srv := discordfake.New(t)
	s := newSession(t, srv)
	s.Identify.Intents |= discordgo.IntentMessageContent
	err := s.Open()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != 4014 {
		t.Fatalf("Open with MESSAGE_CONTENT not enabled = %v, want close 4014", err)
	}

	srv = discordfake.New(t, discordfake.WithPrivilegedIntents(discordgo.IntentMessageContent))
	s = newSession(t, srv)
	s.Identify.Intents |= discordgo.IntentMessageContent
	msgs := make(chan *discordgo.MessageCreate, 4)
	s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) { msgs <- m })
	open(t, s)
	srv.MessageCreate(channelID, guildID, userID, "just chatting")
	if m := receive(t, msgs, "MESSAGE_CREATE"); m.Content != "just chatting" {
		t.Errorf("content = %q with MESSAGE_CONTENT", m.Content)
	}
}

func TestChannelMessageSendComplex(t *testing.T) {
	t.Parallel()
	srv := discordfake.New(t)
	srv.AddChannel(channelID, guildID)
	s := newSession(t, srv)

	sent, err := s.ChannelMessageSendComplex(channelID, &discordgo.MessageSend{
		Content:         "Task #1 created by <@" + userID + ">: ping @everyone",
		AllowedMentions: &discordgo.MessageAllowedMentions{Users: []string{userID}},
		Components: []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
			discordgo.Button{Label: "Pause", Style: discordgo.SecondaryButton, CustomID: "task:1:pause"},
			discordgo.Button{Label: "Cancel", Style: discordgo.DangerButton, CustomID: "task:1:cancel"},
		}}},
		Embeds: []*discordgo.MessageEmbed{{Title: "Build auth", Description: "80%"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if sent.ID == "" || sent.ChannelID != channelID || sent.Author.ID != discordfake.DefaultBotID ||
		len(sent.Components) != 1 || len(sent.Embeds) != 1 || sent.MentionEveryone {
		t.Errorf("returned message = %+v", sent)
	}

	ms := srv.Messages(channelID)
	if len(ms) != 1 {
		t.Fatalf("Messages() = %d, want 1", len(ms))
	}
	m := ms[0]
	if m.ID != sent.ID || m.AllowedMentions == nil || !slices.Equal(m.AllowedMentions.Users, []string{userID}) {
		t.Errorf("stored message = %+v", m)
	}
	if !slices.Equal(m.Mentions, []string{userID}) || m.MentionEveryone {
		t.Errorf("pinged %v, everyone %v; want only the user", m.Mentions, m.MentionEveryone)
	}
	if got := m.CustomIDs(); !slices.Equal(got, []string{"task:1:pause", "task:1:cancel"}) {
		t.Errorf("CustomIDs() = %v", got)
	}

	calls := srv.CallsTo("POST", "/channels/"+channelID+"/messages")
	if len(calls) != 1 {
		t.Fatalf("calls = %d", len(calls))
	}
	c := calls[0]
	var body struct {
		AllowedMentions struct {
			Parse []string `json:"parse"`
			Users []string `json:"users"`
		} `json:"allowed_mentions"`
	}
	if err := c.Decode(&body); err != nil || c.Authorization != "Bot "+srv.Token() || c.Status != http.StatusOK ||
		len(body.AllowedMentions.Parse) != 0 || !slices.Equal(body.AllowedMentions.Users, []string{userID}) {
		t.Errorf("call = %+v, body %+v, err %v", c, body, err)
	}

	// Edit, reply, and Discord's refusals.
	content := "Task #1 paused"
	if _, err := s.ChannelMessageEditComplex(&discordgo.MessageEdit{ID: sent.ID, Channel: channelID, Content: &content}); err != nil {
		t.Fatal(err)
	}
	if m, _ := srv.Message(sent.ID); m.Content != content || m.Edits != 1 || len(m.Components) != 1 {
		t.Errorf("after edit: %+v", m)
	}
	reply, err := s.ChannelMessageSendReply(channelID, "done", sent.Reference())
	if err != nil || reply.MessageReference == nil || reply.MessageReference.MessageID != sent.ID || reply.ReferencedMessage == nil {
		t.Errorf("reply = %+v, %v", reply, err)
	}
	restErr := func(err error) *discordgo.RESTError {
		var re *discordgo.RESTError
		if !errors.As(err, &re) || re.Message == nil {
			t.Fatalf("err = %v, want a *discordgo.RESTError with a message", err)
		}
		return re
	}
	_, err = s.ChannelMessageSend(channelID, strings.Repeat("x", 2001))
	if re := restErr(err); re.Response.StatusCode != 400 || re.Message.Code != 50035 {
		t.Errorf("2001 characters: %v", err)
	}
	_, err = s.ChannelMessageSend("999", "hello")
	if re := restErr(err); re.Response.StatusCode != 404 || re.Message.Code != discordgo.ErrCodeUnknownChannel {
		t.Errorf("unknown channel: %v", err)
	}
	_, err = s.ChannelMessageSendComplex(channelID, &discordgo.MessageSend{Components: []discordgo.MessageComponent{
		discordgo.ActionsRow{Components: []discordgo.MessageComponent{
			discordgo.Button{Label: "A", Style: discordgo.PrimaryButton, CustomID: "same"},
			discordgo.Button{Label: "B", Style: discordgo.PrimaryButton, CustomID: "same"},
		}}}})
	if re := restErr(err); re.Message.Code != 50035 || !strings.Contains(string(re.ResponseBody), "COMPONENT_CUSTOM_ID_DUPLICATED") {
		t.Errorf("duplicate custom IDs: %v", err)
	}
	_, err = s.Request("GET", discordgo.EndpointAPI+"no/such/route", nil)
	if re := restErr(err); re.Response.StatusCode != 404 || re.Message.Message != "404: Not Found" {
		t.Errorf("unknown route: %v", err)
	}
	if cs := srv.CallsTo("GET", "/no/such/route"); len(cs) != 1 || cs[0].Status != 404 {
		t.Errorf("unknown route recorded as %+v", cs)
	}

	// Files go multipart, with the message in payload_json.
	_, err = s.ChannelMessageSendComplex(channelID, &discordgo.MessageSend{
		Content: "log attached",
		Files:   []*discordgo.File{{Name: "log.txt", ContentType: "text/plain", Reader: strings.NewReader("line 1\n")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ms = srv.Messages(channelID)
	if last := ms[len(ms)-1]; last.Content != "log attached" || len(last.Files) != 1 || string(last.Files[0].Data) != "line 1\n" {
		t.Errorf("message with a file = %+v", last)
	}
}

// fakeClock is a clock for WithNow that moves only when advanced.
func fakeClock(start time.Time) (now func() time.Time, advance func(time.Duration)) {
	var mu sync.Mutex
	t := start
	now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return t
	}
	advance = func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(d)
	}
	return now, advance
}

// TestNonce: with enforce_nonce, a message the bot created with the same
// nonce in the past few minutes comes back instead of a new one, as
// Discord's Create Message documents.
func TestNonce(t *testing.T) {
	t.Parallel()
	clock, advance := fakeClock(time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC))
	srv := discordfake.New(t, discordfake.WithNow(clock))
	srv.AddChannel(channelID, guildID)
	s := newSession(t, srv)
	// discordgo's MessageSend has no nonce; the request is made as the
	// adapter makes it.
	var lastNonce string
	post := func(content string, nonce any, enforce bool) (*discordgo.Message, error) {
		body := map[string]any{"content": content, "enforce_nonce": enforce}
		if nonce != nil {
			body["nonce"] = nonce
		}
		ep := discordgo.EndpointChannelMessages(channelID)
		raw, err := s.RequestWithBucketID("POST", ep, body, ep)
		if err != nil {
			return nil, err
		}
		var m discordgo.Message // it has no nonce field
		var n struct {
			Nonce string `json:"nonce"`
		}
		err = errors.Join(json.Unmarshal(raw, &m), json.Unmarshal(raw, &n))
		lastNonce = n.Nonce
		return &m, err
	}

	first, err := post("part 1", "12-abc.0", true)
	if err != nil || lastNonce != "12-abc.0" {
		t.Fatalf("create = %+v with nonce %q, %v", first, lastNonce, err)
	}
	again, err := post("part 1, composed again", "12-abc.0", true)
	if err != nil || again.ID != first.ID || again.Content != "part 1" {
		t.Fatalf("the same nonce again = %+v, %v; want the first message back", again, err)
	}
	if ms := srv.Messages(channelID); len(ms) != 1 || ms[0].Nonce != "12-abc.0" {
		t.Fatalf("messages = %+v, want one with the nonce", ms)
	}
	if cs := srv.CallsTo("POST", "/channels/"+channelID+"/messages"); len(cs) != 2 || cs[1].Status != http.StatusOK {
		t.Errorf("calls = %+v", cs)
	}

	// Without enforce_nonce the nonce is only echoed; an integer nonce is
	// a nonce too.
	if m, err := post("part 1", "12-abc.0", false); err != nil || m.ID == first.ID {
		t.Errorf("without enforce_nonce = %+v, %v; want a new message", m, err)
	}
	n1, err := post("numbered", 42, true)
	if err != nil {
		t.Fatal(err)
	}
	if n2, err := post("numbered", "42", true); err != nil || n2.ID != n1.ID {
		t.Errorf("nonce 42 as a string after 42 as a number = %+v, %v; want the same message", n2, err)
	}

	// The window passes: the nonce is free again.
	advance(discordfake.DefaultNonceWindow)
	if m, err := post("part 1", "12-abc.0", true); err != nil || m.ID == first.ID {
		t.Errorf("after the window = %+v, %v; want a new message", m, err)
	}
	if got := len(srv.Messages(channelID)); got != 4 {
		t.Errorf("%d messages, want 4", got)
	}

	var re *discordgo.RESTError
	if _, err := post("long", strings.Repeat("n", discordfake.MaxNonceLength+1), true); !errors.As(err, &re) ||
		re.Response.StatusCode != http.StatusBadRequest || re.Message.Code != 50035 {
		t.Errorf("a 26-character nonce: %v, want 400 Invalid Form Body", err)
	}
}

// TestChannelMessages: Get Channel Messages, through discordgo's
// ChannelMessages, gives the channel's messages newest first — the
// latest, or the ones just before or after a message — with each one's
// author and timestamp; a guild channel whose history the bot may not
// read gives none, and one it may not see 403 Missing Access.
func TestChannelMessages(t *testing.T) {
	t.Parallel()
	clock, advance := fakeClock(time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC))
	srv := discordfake.New(t, discordfake.WithNow(clock))
	srv.AddChannel(channelID, guildID)
	s := newSession(t, srv)
	var sent []*discordgo.Message
	for i := range 5 {
		advance(time.Second)
		m, err := s.ChannelMessageSend(channelID, fmt.Sprintf("message %d", i))
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, m)
	}
	contents := func(ms []*discordgo.Message) string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Content)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		name          string
		limit         int
		before, after string
		want          string
	}{
		{"latest", 0, "", "", "message 4,message 3,message 2,message 1,message 0"},
		{"latest two", 2, "", "", "message 4,message 3"},
		{"before the fourth", 2, sent[3].ID, "", "message 2,message 1"},
		{"after the first", 2, "", sent[0].ID, "message 2,message 1"},
		{"after the last", 0, "", sent[4].ID, ""},
	} {
		ms, err := s.ChannelMessages(channelID, tc.limit, tc.before, tc.after, "")
		if err != nil || contents(ms) != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, contents(ms), err, tc.want)
		}
	}
	ms, err := s.ChannelMessages(channelID, 1, "", "", "")
	if err != nil || len(ms) != 1 || ms[0].Author == nil || ms[0].Author.ID != sent[4].Author.ID || !ms[0].Timestamp.Equal(sent[4].Timestamp) {
		t.Errorf("the latest message = %+v, %v; want its author and timestamp", ms, err)
	}

	srv.DenyPermissions(channelID, discordgo.PermissionReadMessageHistory)
	if ms, err := s.ChannelMessages(channelID, 0, "", "", ""); err != nil || len(ms) != 0 {
		t.Errorf("without Read Message History: %d messages, %v; want none and no error", len(ms), err)
	}
	srv.DenyChannel(channelID)
	var re *discordgo.RESTError
	if _, err := s.ChannelMessages(channelID, 0, "", "", ""); !errors.As(err, &re) || re.Response.StatusCode != http.StatusForbidden {
		t.Errorf("a channel the bot may not see: %v; want 403", err)
	}
}

// TestChannelGoneOrDenied: a deleted channel answers 404 Unknown Channel,
// one the bot may not see 403 Missing Access.
func TestChannelGoneOrDenied(t *testing.T) {
	t.Parallel()
	srv := discordfake.New(t)
	const other = "1300000000000000021"
	srv.AddChannel(channelID, guildID)
	srv.AddChannel(other, guildID)
	s := newSession(t, srv)
	if _, err := s.ChannelMessageSend(channelID, "hello"); err != nil {
		t.Fatal(err)
	}
	srv.RemoveChannel(channelID)
	srv.DenyChannel(other)
	for _, tc := range []struct {
		channel      string
		status, code int
	}{
		{channelID, http.StatusNotFound, discordgo.ErrCodeUnknownChannel},
		{other, http.StatusForbidden, discordgo.ErrCodeMissingAccess},
	} {
		_, err := s.ChannelMessageSend(tc.channel, "hello again")
		var re *discordgo.RESTError
		if !errors.As(err, &re) || re.Response.StatusCode != tc.status || re.Message == nil || re.Message.Code != tc.code {
			t.Errorf("send to %s: %v; want %d with code %d", tc.channel, err, tc.status, tc.code)
		}
		if _, err := s.Channel(tc.channel); !errors.As(err, &re) || re.Response.StatusCode != tc.status {
			t.Errorf("get %s: %v; want %d", tc.channel, err, tc.status)
		}
	}
	srv.AllowChannel(other)
	if _, err := s.ChannelMessageSend(other, "allowed again"); err != nil {
		t.Errorf("send after AllowChannel: %v", err)
	}
}

func TestSetEndpoints(t *testing.T) {
	// Not parallel: SetEndpoints changes discordgo's package variables.
	srv := discordfake.New(t)
	srv.AddChannel(channelID, guildID)
	t.Cleanup(discordfake.SetEndpoints(srv.URL()))
	if want := srv.URL() + "api/v9/"; discordgo.EndpointAPI != want {
		t.Fatalf("EndpointAPI = %q, want %q", discordgo.EndpointAPI, want)
	}
	s, err := discordgo.New("Bot " + srv.Token())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ChannelMessageSend(channelID, "hello"); err != nil {
		t.Fatal(err)
	}
	if u, err := s.User("@me"); err != nil || u.ID != discordfake.DefaultBotID {
		t.Errorf("User(@me) = %+v, %v", u, err)
	}
	if g, err := s.Gateway(); err != nil || g != srv.GatewayURL()+"/" {
		t.Errorf("Gateway() = %q, %v", g, err)
	}
	discordfake.SetEndpoints("https://discord.com/")()
	if discordgo.EndpointChannels != srv.URL()+"api/v9/channels/" {
		t.Errorf("restore of a restore changed EndpointChannels to %q", discordgo.EndpointChannels)
	}
}

func TestCommandsBulkOverwrite(t *testing.T) {
	t.Parallel()
	srv := discordfake.New(t)
	s := newSession(t, srv)
	cmds := []*discordgo.ApplicationCommand{{
		Name: "task", Description: "Manage tasks",
		Options: []*discordgo.ApplicationCommandOption{
			{Type: discordgo.ApplicationCommandOptionSubCommand, Name: "create", Description: "Create a task",
				Options: []*discordgo.ApplicationCommandOption{{Type: discordgo.ApplicationCommandOptionString, Name: "goal", Description: "The goal", Required: true}}},
			{Type: discordgo.ApplicationCommandOptionSubCommand, Name: "list", Description: "List tasks"},
		},
	}}
	first, err := s.ApplicationCommandBulkOverwrite(srv.ApplicationID(), "", cmds)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 1 || first[0].ID == "" || first[0].ApplicationID != srv.ApplicationID() || first[0].Version == "" {
		t.Fatalf("first overwrite = %+v", first)
	}
	second, err := s.ApplicationCommandBulkOverwrite(srv.ApplicationID(), "", cmds)
	if err != nil {
		t.Fatal(err)
	}
	if second[0].ID != first[0].ID || second[0].Version != first[0].Version {
		t.Errorf("identical overwrite changed id/version: %s/%s → %s/%s", first[0].ID, first[0].Version, second[0].ID, second[0].Version)
	}
	listed, err := s.ApplicationCommands(srv.ApplicationID(), "")
	if err != nil || len(listed) != 1 || listed[0].ID != first[0].ID || len(listed[0].Options) != 2 {
		t.Errorf("ApplicationCommands = %+v, %v", listed, err)
	}
	if got := srv.Commands(""); len(got) != 1 || got[0].Name != "task" {
		t.Errorf("Commands() = %+v", got)
	}

	bad := []*discordgo.ApplicationCommand{{Name: "Task", Description: "Upper case is refused"}}
	_, err = s.ApplicationCommandBulkOverwrite(srv.ApplicationID(), "", bad)
	var re *discordgo.RESTError
	if !errors.As(err, &re) || re.Message.Code != 50035 || !strings.Contains(string(re.ResponseBody), "APPLICATION_COMMAND_INVALID_NAME") {
		t.Errorf("invalid name: %v", err)
	}
	if _, err := s.ApplicationCommandBulkOverwrite("42", "", cmds); !errors.As(err, &re) || re.Response.StatusCode != 403 {
		t.Errorf("another application's commands: %v", err)
	}
}

func TestInteractions(t *testing.T) {
	t.Parallel()
	srv := discordfake.New(t, discordfake.WithGuild(discordfake.Guild{ID: guildID, ChannelIDs: []string{channelID}}))
	srv.SetMember(guildID, userID, discordgo.PermissionManageGuild)
	s := newSession(t, srv)
	if _, err := s.ApplicationCommandBulkOverwrite(srv.ApplicationID(), "", []*discordgo.ApplicationCommand{{Name: "task", Description: "Tasks"}}); err != nil {
		t.Fatal(err)
	}
	got := make(chan *discordgo.InteractionCreate, 4)
	s.AddHandler(func(_ *discordgo.Session, i *discordgo.InteractionCreate) { got <- i })
	open(t, s)

	// A slash command, answered at once.
	in := srv.SlashCommand(discordfake.SlashCommand{
		ChannelID: channelID, GuildID: guildID, User: discordfake.User{ID: userID, Username: "ada"},
		Subcommand: "create", Options: []discordfake.CommandOption{{Name: "goal", Value: "Build auth"}},
	})
	i := receive(t, got, "INTERACTION_CREATE")
	if i.ID != in.ID || i.Token != in.Token || i.Type != discordgo.InteractionApplicationCommand || i.GuildID != guildID ||
		i.Member == nil || i.Member.User.ID != userID || i.Member.Permissions&discordgo.PermissionManageGuild == 0 {
		t.Fatalf("interaction = %+v", i.Interaction)
	}
	data := i.ApplicationCommandData()
	if data.Name != "task" || data.ID != srv.Commands("")[0].ID || len(data.Options) != 1 || data.Options[0].Name != "create" ||
		data.Options[0].Type != discordgo.ApplicationCommandOptionSubCommand || data.Options[0].Options[0].StringValue() != "Build auth" {
		t.Errorf("data = %+v", data)
	}
	err := s.InteractionRespond(i.Interaction, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: "Task #1 created", Flags: discordgo.MessageFlagsEphemeral},
	})
	if err != nil {
		t.Fatal(err)
	}
	if cs := srv.CallsTo("POST", "/interactions/"+in.ID+"/"+in.Token+"/callback"); len(cs) != 1 || cs[0].Status != http.StatusNoContent {
		t.Errorf("callback calls = %+v", cs)
	}
	rs := srv.Responses()
	if len(rs) != 1 || rs[0].InteractionID != in.ID || rs[0].Type != discordgo.InteractionResponseChannelMessageWithSource ||
		rs[0].After <= 0 || rs[0].After > discordfake.DefaultInteractionDeadline {
		t.Errorf("Responses() = %+v", rs)
	}
	if m, ok := srv.Message(rs[0].MessageID); !ok || m.Content != "Task #1 created" || !m.Ephemeral() || m.InteractionID != in.ID {
		t.Errorf("response message = %+v", m)
	}
	err = s.InteractionRespond(i.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource})
	var re *discordgo.RESTError
	if !errors.As(err, &re) || re.Message.Code != discordgo.ErrCodeInteractionHasAlreadyBeenAcknowledged {
		t.Errorf("second response: %v, want 40060", err)
	}

	// A deferred answer, completed by editing @original, then a follow-up.
	srv.SlashCommand(discordfake.SlashCommand{ChannelID: channelID, GuildID: guildID, User: discordfake.User{ID: userID}, Subcommand: "list"})
	i = receive(t, got, "INTERACTION_CREATE")
	if err := s.InteractionRespond(i.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource}); err != nil {
		t.Fatal(err)
	}
	list := "#1 Build auth"
	edited, err := s.InteractionResponseEdit(i.Interaction, &discordgo.WebhookEdit{Content: &list})
	if err != nil || edited.Content != list || edited.Flags&discordgo.MessageFlagsLoading != 0 {
		t.Errorf("edit @original = %+v, %v", edited, err)
	}
	if _, err := s.FollowupMessageCreate(i.Interaction, true, &discordgo.WebhookParams{Content: "and more"}); err != nil {
		t.Error(err)
	}

	// A button on a bot message, answered by updating that message.
	post, err := s.ChannelMessageSendComplex(channelID, &discordgo.MessageSend{
		Content: "Task #1 running",
		Components: []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
			discordgo.Button{Label: "Pause", Style: discordgo.SecondaryButton, CustomID: "task:1:pause"},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.ButtonClick(discordfake.ButtonClick{MessageID: post.ID, CustomID: "task:1:pause", User: discordfake.User{ID: userID}})
	i = receive(t, got, "INTERACTION_CREATE")
	if i.Type != discordgo.InteractionMessageComponent || i.MessageComponentData().CustomID != "task:1:pause" ||
		i.MessageComponentData().ComponentType != discordgo.ButtonComponent || i.Message == nil || i.Message.ID != post.ID {
		t.Fatalf("button interaction = %+v", i.Interaction)
	}
	err = s.InteractionRespond(i.Interaction, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseUpdateMessage,
		Data: &discordgo.InteractionResponseData{Content: "Task #1 paused", Components: []discordgo.MessageComponent{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := srv.Message(post.ID); m.Content != "Task #1 paused" || len(m.Components) != 0 || m.Edits != 1 {
		t.Errorf("updated message = %+v", m)
	}

	// discordgo computes the member's permissions from the fake's guild.
	perms, err := s.UserChannelPermissions(userID, channelID)
	if err != nil || perms&discordgo.PermissionManageGuild == 0 {
		t.Errorf("UserChannelPermissions = %b, %v", perms, err)
	}
}

func TestInteractionDeadline(t *testing.T) {
	t.Parallel()
	srv := discordfake.New(t, discordfake.WithInteractionDeadline(time.Nanosecond))
	s := newSession(t, srv)
	open(t, s)
	in := srv.SlashCommand(discordfake.SlashCommand{ChannelID: dmID, User: discordfake.User{ID: userID}})
	err := s.InteractionRespond(&discordgo.Interaction{ID: in.ID, Token: in.Token},
		&discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource})
	var re *discordgo.RESTError
	if !errors.As(err, &re) || re.Message.Code != discordgo.ErrCodeUnknownInteraction {
		t.Errorf("late response: %v, want 10062", err)
	}
}

func TestResumeReplaysMissedDispatchesOnce(t *testing.T) {
	t.Parallel()
	srv := discordfake.New(t)
	s := newSession(t, srv)
	s.SyncEvents = true // handlers in order, on the read loop
	s.Compress = false
	contents := make(chan string, 16)
	s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) { contents <- m.Content })
	open(t, s)

	srv.MessageCreate(dmID, "", userID, "before")
	if got := receive(t, contents, "first message"); got != "before" {
		t.Fatalf("got %q", got)
	}
	if err := srv.WaitHeartbeats(ctx(t), 1); err != nil {
		t.Fatal(err)
	}
	srv.Disconnect(4000)
	srv.MessageCreate(dmID, "", userID, "while away")
	if err := srv.WaitResumed(ctx(t), 1); err != nil {
		t.Fatal(err)
	}
	srv.MessageCreate(dmID, "", userID, "after")
	for _, want := range []string{"while away", "after"} {
		if got := receive(t, contents, want); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	select {
	case got := <-contents:
		t.Errorf("extra message %q", got)
	default:
	}
	rs := srv.Resumes()
	if len(rs) != 1 || !rs[0].Resumed || rs[0].Replayed != 1 || rs[0].SessionID != srv.Identifies()[0].SessionID {
		t.Errorf("Resumes() = %+v", rs)
	}
	if n := len(srv.Identifies()); n != 1 {
		t.Errorf("Identifies() = %d, want 1: discordgo resumes", n)
	}

	// 4009 ends the session: the RESUME gets INVALID_SESSION and discordgo
	// identifies on the same connection.
	// The resumed connection's first heartbeat (WaitHeartbeats).
	if err := srv.WaitHeartbeats(ctx(t), 2); err != nil {
		t.Fatal(err)
	}
	srv.Disconnect(4009)
	if err := srv.WaitIdentified(ctx(t), 2); err != nil {
		t.Fatal(err)
	}
	if rs := srv.Resumes(); len(rs) != 2 || rs[1].Resumed {
		t.Errorf("Resumes() = %+v, want a refused second RESUME", rs)
	}
	srv.MessageCreate(dmID, "", userID, "new session")
	if got := receive(t, contents, "new session"); got != "new session" {
		t.Errorf("got %q", got)
	}
}

func TestReconnectAndInvalidSession(t *testing.T) {
	t.Parallel()
	srv := discordfake.New(t)
	s := newSession(t, srv)
	// discordgo takes the session ID from READY before typed handlers
	// run, so a READY seen here means the next RESUME carries it.
	readies := make(chan struct{}, 8)
	s.AddHandler(func(*discordgo.Session, *discordgo.Ready) { readies <- struct{}{} })
	open(t, s)
	waitReady := func() {
		t.Helper()
		select {
		case <-readies:
		case <-ctx(t).Done():
			t.Fatal("no READY handled")
		}
	}
	waitReady()

	if err := srv.WaitHeartbeats(ctx(t), 1); err != nil {
		t.Fatal(err)
	}
	srv.Reconnect() // op 7: discordgo closes and resumes
	if err := srv.WaitResumed(ctx(t), 1); err != nil {
		t.Fatal(err)
	}
	srv.InvalidateSession(false) // op 9: discordgo identifies again
	if err := srv.WaitIdentified(ctx(t), 2); err != nil {
		t.Fatal(err)
	}
	ids := srv.Identifies()
	if ids[1].SessionID == ids[0].SessionID {
		t.Errorf("new IDENTIFY kept session %s", ids[0].SessionID)
	}
	waitReady() // discordgo has taken the new session ID
	// The resumed connection's first heartbeat (WaitHeartbeats).
	if err := srv.WaitHeartbeats(ctx(t), 2); err != nil {
		t.Fatal(err)
	}
	srv.DropWithoutClose() // a network failure: discordgo resumes the new session
	if err := srv.WaitResumed(ctx(t), 2); err != nil {
		t.Fatal(err)
	}
	// discordgo may identify more than once around op 9 (it can also
	// reconnect); what matters is that it resumed a live session, not the
	// invalidated one.
	if rs := srv.Resumes(); rs[1].SessionID == ids[0].SessionID || !rs[1].Resumed {
		t.Errorf("second RESUME = %+v; want an accepted resume of a new session (not %s)", rs[1], ids[0].SessionID)
	}
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	srv := discordfake.New(t)
	for _, c := range []string{"1", "2", "3", "4"} {
		srv.AddChannel(c, guildID)
	}
	path := func(c string) string { return "/channels/" + c + "/messages" }

	// By default discordgo sleeps retry_after and tries again, as often as
	// it is told to.
	s := newSession(t, srv)
	limited := make(chan *discordgo.RateLimit, 1)
	s.AddHandler(func(_ *discordgo.Session, r *discordgo.RateLimit) { limited <- r })
	srv.RateLimitNext("POST", path("1"), 2, 20*time.Millisecond, false)
	if _, err := s.ChannelMessageSend("1", "hello"); err != nil {
		t.Fatal(err)
	}
	var statuses []int
	for _, c := range srv.CallsTo("POST", path("1")) {
		statuses = append(statuses, c.Status)
	}
	if !slices.Equal(statuses, []int{429, 429, 200}) {
		t.Errorf("statuses = %v, want 429 429 200", statuses)
	}
	if r := receive(t, limited, "RateLimit event"); r.RetryAfter != 20*time.Millisecond || !strings.HasSuffix(r.URL, path("1")) {
		t.Errorf("RateLimit event = %+v %+v", r, r.TooManyRequests)
	}

	// With ShouldRetryOnRateLimit false the call returns *RateLimitError.
	s.ShouldRetryOnRateLimit = false
	srv.RateLimitNext("POST", path("2"), 1, 1500*time.Millisecond, false)
	_, err := s.ChannelMessageSend("2", "hello")
	var rle *discordgo.RateLimitError
	if !errors.As(err, &rle) || rle.RetryAfter != 1500*time.Millisecond || rle.Message != "You are being rate limited." ||
		!strings.HasSuffix(rle.URL, path("2")) {
		t.Fatalf("err = %#v, want *discordgo.RateLimitError with RetryAfter 1.5s", err)
	}

	// The same bucket then waits out X-RateLimit-Reset-After by itself.
	srv.RateLimitNext("POST", path("3"), 1, 100*time.Millisecond, false)
	if _, err := s.ChannelMessageSend("3", "hello"); !errors.As(err, &rle) {
		t.Fatalf("err = %v", err)
	}
	start := time.Now()
	if _, err := s.ChannelMessageSend("3", "again"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 80*time.Millisecond {
		t.Errorf("next call in the bucket took %v, want discordgo to wait ~100ms", d)
	}

	// The wire: body and headers as Discord sends them.
	srv.RateLimitNext("", path("4"), 1, 1500*time.Millisecond, true)
	req, _ := http.NewRequest("POST", srv.URL()+"api/v9"+path("4"), bytes.NewReader([]byte(`{"content":"x"}`)))
	req.Header.Set("Authorization", "Bot "+srv.Token())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var body map[string]any
	json.Unmarshal(b, &body)
	h := resp.Header
	if resp.StatusCode != 429 || body["retry_after"] != 1.5 || body["global"] != true || body["message"] != "You are being rate limited." ||
		h.Get("Retry-After") != "2" || h.Get("X-RateLimit-Remaining") != "0" || h.Get("X-RateLimit-Reset-After") != "1.500" ||
		h.Get("X-RateLimit-Global") != "true" || h.Get("X-RateLimit-Scope") != "global" || h.Get("X-RateLimit-Bucket") == "" ||
		h.Get("X-RateLimit-Limit") == "" || h.Get("X-RateLimit-Reset") == "" {
		t.Errorf("429: %d %s %v", resp.StatusCode, b, h)
	}
}

// TestSnowflakesTellTheirTime: a message's ID is a snowflake of the time
// it was posted, on the fake's clock, as Discord's are (discordgo reads
// the time back), and IDs made in the same millisecond still increase.
func TestSnowflakesTellTheirTime(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	clock, advance := fakeClock(start)
	srv := discordfake.New(t, discordfake.WithNow(clock))
	srv.AddChannel(channelID, guildID)
	s := newSession(t, srv)
	var last uint64
	for i, step := range []time.Duration{0, 0, 1500 * time.Millisecond, time.Hour} {
		advance(step)
		m, err := s.ChannelMessageSend(channelID, fmt.Sprintf("message %d", i))
		if err != nil {
			t.Fatal(err)
		}
		at, err := discordgo.SnowflakeTimestamp(m.ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := clock().Truncate(time.Millisecond); !at.Equal(want) || !m.Timestamp.Equal(clock()) {
			t.Fatalf("message %d: ID %s says %v, timestamp %v; want both %v", i, m.ID, at.UTC(), m.Timestamp, want)
		}
		id, err := strconv.ParseUint(m.ID, 10, 64)
		if err != nil || id <= last {
			t.Fatalf("message %d: ID %s after %d, want a larger one (%v)", i, m.ID, last, err)
		}
		last = id
	}
}

// TestEnforceLimits: with limits enforced, a channel's sixth message
// within its window is refused with a 429 of scope "user" and the
// channel's bucket headers count down as discordgo reads them; requests
// beyond the global limit in one second are refused with a global 429,
// whatever their channel. Throttled counts the refusals.
func TestEnforceLimits(t *testing.T) {
	t.Parallel()
	srv := discordfake.New(t)
	for _, c := range []string{"1", "2", "3"} {
		srv.AddChannel(c, guildID)
	}
	srv.EnforceLimits(discordfake.Limits{Global: 8, PerChannel: 5, ChannelWindow: time.Minute})
	post := func(channel string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL()+"api/v9/channels/"+channel+"/messages", bytes.NewReader([]byte(`{"content":"x"}`)))
		req.Header.Set("Authorization", "Bot "+srv.Token())
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for i := range 5 {
		resp := post("1")
		if resp.StatusCode != 200 || resp.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(4-i) || resp.Header.Get("X-RateLimit-Limit") != "5" {
			t.Fatalf("message %d: %d, remaining %q", i+1, resp.StatusCode, resp.Header.Get("X-RateLimit-Remaining"))
		}
	}
	if resp := post("1"); resp.StatusCode != 429 || resp.Header.Get("X-RateLimit-Scope") != "user" || resp.Header.Get("X-RateLimit-Global") != "" {
		t.Fatalf("sixth message in the channel: %d %v", resp.StatusCode, resp.Header)
	}
	// Five made; three more go in other channels, the ninth is global.
	for _, c := range []string{"2", "2", "3"} {
		if resp := post(c); resp.StatusCode != 200 {
			t.Fatalf("message to %s: %d", c, resp.StatusCode)
		}
	}
	resp := post("3")
	if resp.StatusCode != 429 || resp.Header.Get("X-RateLimit-Global") != "true" || resp.Header.Get("X-RateLimit-Scope") != "global" {
		t.Fatalf("ninth request in a second: %d %v", resp.StatusCode, resp.Header)
	}
	if all, global := srv.Throttled(); all != 2 || global != 1 {
		t.Errorf("Throttled = %d, %d global; want 2, 1 global", all, global)
	}
}

// TestStallNext: a stalled call hangs until the client's timeout, and is
// carried out or not as asked; one the client waits out gets a 504.
func TestStallNext(t *testing.T) {
	t.Parallel()
	srv := discordfake.New(t)
	srv.AddChannel(channelID, guildID)
	s := newSession(t, srv)
	s.MaxRestRetries = 0
	s.Client.Timeout = 100 * time.Millisecond // Point's transport kept
	path := "/channels/" + channelID + "/messages"

	srv.StallNext("POST", path, 1, time.Minute, true)
	start := time.Now()
	if _, err := s.ChannelMessageSend(channelID, "made"); err == nil {
		t.Fatal("a stalled call succeeded")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the stalled call was held %s, past its client's timeout", d)
	}
	srv.StallNext("POST", path, 1, time.Minute, false)
	if _, err := s.ChannelMessageSend(channelID, "not made"); err == nil {
		t.Fatal("a stalled call succeeded")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := srv.WaitCalls(ctx, "POST", path, 2); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range srv.Messages(channelID) {
		texts = append(texts, m.Content)
	}
	if !slices.Equal(texts, []string{"made"}) {
		t.Errorf("messages = %q, want only the one carried out", texts)
	}

	s.Client.Timeout = 10 * time.Second
	srv.StallNext("POST", path, 1, 50*time.Millisecond, false)
	start = time.Now()
	_, err := s.ChannelMessageSend(channelID, "waited")
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("a call stalled for 50ms answered in %s", d)
	}
	var re *discordgo.RESTError
	if !errors.As(err, &re) || re.Response.StatusCode != http.StatusGatewayTimeout {
		t.Errorf("a call waited out: %v, want a 504", err)
	}
}
