package discordfake

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
)

// Defaults for the bot the fake plays against.
const (
	// DefaultToken is the bot token the fake accepts unless WithToken says
	// otherwise. It is the token as the developer portal shows it; REST
	// calls carry it as "Bot " + DefaultToken.
	DefaultToken = "fake-bot-token"
	// DefaultBotID is the bot user's ID and, unless WithApplicationID says
	// otherwise, the application's ID, as it is for every application
	// created since 2020.
	DefaultBotID = "1200000000000000001"
	// DefaultBotName is the bot user's username.
	DefaultBotName = "taskloom"
	// DefaultHeartbeatInterval is what HELLO asks for, Discord's usual value.
	DefaultHeartbeatInterval = 41250 * time.Millisecond
	// DefaultInteractionDeadline is how long after an INTERACTION_CREATE the
	// fake accepts its first response, Discord's three seconds.
	DefaultInteractionDeadline = 3 * time.Second

	apiPrefix   = "/api/v9"
	gatewayPath = "/gateway"
)

// everyonePermissions is what the @everyone role of a guild the fake makes
// up allows: what a new server gives its members, threads included, and
// no more.
const everyonePermissions = discordgo.PermissionViewChannel |
	discordgo.PermissionSendMessages |
	discordgo.PermissionReadMessageHistory |
	discordgo.PermissionAddReactions |
	discordgo.PermissionEmbedLinks |
	discordgo.PermissionAttachFiles |
	discordgo.PermissionUseSlashCommands |
	discordgo.PermissionCreatePublicThreads |
	discordgo.PermissionCreatePrivateThreads |
	discordgo.PermissionSendMessagesInThreads

// privilegedIntents need a switch in the developer portal; IDENTIFY asking
// for one that is not switched on is closed with 4014.
const privilegedIntents = discordgo.IntentGuildMembers |
	discordgo.IntentGuildPresences |
	discordgo.IntentMessageContent

// User is a Discord user as the fake knows it.
type User struct {
	ID       string
	Username string
	Bot      bool
}

// Guild describes a guild (a Discord server) the bot is in from the start.
type Guild struct {
	ID   string
	Name string // "Guild <ID>" when empty
	// OwnerID is the guild owner, who has every permission. When empty the
	// fake makes one up, so no user of the test is the owner by accident.
	OwnerID string
	// ChannelIDs are the guild's text channels.
	ChannelIDs []string
}

// Option configures a Server.
type Option func(*config)

type config struct {
	token      string
	bot        User
	appID      string
	heartbeat  time.Duration
	deadline   time.Duration
	guilds     []Guild
	privileged discordgo.Intent
	noEcho     bool
	now        func() time.Time
	nonceTTL   time.Duration
}

// WithToken sets the bot token the fake accepts (without the "Bot " prefix).
func WithToken(token string) Option { return func(c *config) { c.token = token } }

// WithBotUser sets the bot user's ID and username. The application ID
// follows the bot ID unless WithApplicationID sets it.
func WithBotUser(id, username string) Option {
	return func(c *config) { c.bot.ID, c.bot.Username = id, username }
}

// WithApplicationID sets the application's ID, which READY announces and
// the command and interaction routes check.
func WithApplicationID(id string) Option { return func(c *config) { c.appID = id } }

// WithHeartbeatInterval sets the interval HELLO asks for.
func WithHeartbeatInterval(d time.Duration) Option { return func(c *config) { c.heartbeat = d } }

// WithInteractionDeadline sets how long after an INTERACTION_CREATE the
// first response is accepted; a later one gets 404 "Unknown interaction",
// as from Discord. Zero turns the check off.
func WithInteractionDeadline(d time.Duration) Option { return func(c *config) { c.deadline = d } }

// WithGuild puts the bot in a guild from the start: READY lists it and
// GUILD_CREATE follows. Guilds the builders name that were not declared are
// joined on first use (GUILD_CREATE then).
func WithGuild(g Guild) Option { return func(c *config) { c.guilds = append(c.guilds, g) } }

// WithPrivilegedIntents switches privileged intents on, as the developer
// portal does. Without it an IDENTIFY asking for GUILD_MEMBERS,
// GUILD_PRESENCES or MESSAGE_CONTENT is closed with 4014 "Disallowed
// intent(s)".
func WithPrivilegedIntents(i discordgo.Intent) Option {
	return func(c *config) { c.privileged |= i & privilegedIntents }
}

// WithoutEcho stops the fake from sending the bot's own messages back as
// MESSAGE_CREATE / MESSAGE_UPDATE / MESSAGE_DELETE, which Discord does.
func WithoutEcho() Option { return func(c *config) { c.noEcho = true } }

// WithNow sets the clock that stamps the messages the bot posts and
// measures the nonce window, e.g. a fake clock's Now; the wall clock by
// default.
func WithNow(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithNonceWindow sets how long a nonce sent with enforce_nonce is
// remembered; DefaultNonceWindow when not set.
func WithNonceWindow(d time.Duration) Option { return func(c *config) { c.nonceTTL = d } }

// DefaultNonceWindow is how long the fake remembers a message's nonce.
// Discord says "the past few minutes" without a number; the fake takes
// the low end, so that code relying on the window is tested against a
// short one.
const DefaultNonceWindow = 2 * time.Minute

// MaxNonceLength is Discord's limit on a message nonce.
const MaxNonceLength = 25

// Server is a fake Discord: the REST API (v9) and the gateway on one
// httptest server. It is safe for concurrent use.
type Server struct {
	t     testing.TB
	cfg   config
	hs    *httptest.Server
	mux   *http.ServeMux
	wsURL string

	ids atomic.Uint64 // the latest snowflake made
	wg  sync.WaitGroup

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change a Wait* watches
	closed  bool

	users        map[string]User
	guilds       map[string]*guild
	guildOrder   []string
	channels     map[string]*channel
	dms          map[string]string // recipient ID → DM channel ID
	messages     map[string][]*Message
	byID         map[string]*Message // bot and user messages
	commands     map[string][]*discordgo.ApplicationCommand
	interactions map[string]*interaction
	responses    []InteractionResponse
	calls        []Call
	faults       []*fault
	limits       *limiter            // nil until EnforceLimits
	nonces       map[string]*Message // author and nonce → the message created with them
	denied       map[string]bool     // channels the bot has lost access to
	deniedPerms  map[string]int64    // channel → permissions an overwrite denies there
	archiveAfter map[string]int      // thread → auto_archive_duration

	conns      map[*conn]struct{}
	sessions   map[string]*session
	identifies []Identify
	resumes    []Resume
	heartbeats int
}

type guild struct {
	id, name, ownerID string
	joined            time.Time
	roles             []role
	channels          []string
	members           map[string]*member
}

type role struct {
	id, name    string
	permissions int64
}

type member struct {
	roles  []string
	joined time.Time
}

type channel struct {
	id, guildID, name string
	recipient         string // DMs with the bot
	// kind is the channel's type: GUILD_TEXT for guild channels, DM,
	// GROUP_DM, or a thread: PUBLIC_THREAD, ANNOUNCEMENT_THREAD or
	// PRIVATE_THREAD (AddPrivateThread).
	kind discordgo.ChannelType
	// Threads: the channel they are in and who started them.
	parentID, ownerID string
	created           time.Time
	// recipients are a group DM's members; the bot is never one.
	recipients []string
}

// isThread reports whether the channel is a thread.
func (c *channel) isThread() bool {
	return c.kind == discordgo.ChannelTypeGuildPublicThread || c.kind == discordgo.ChannelTypeGuildPrivateThread ||
		c.kind == discordgo.ChannelTypeGuildNewsThread
}

// New starts a fake Discord and closes it when the test ends.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	cfg := config{
		token:     DefaultToken,
		bot:       User{ID: DefaultBotID, Username: DefaultBotName, Bot: true},
		heartbeat: DefaultHeartbeatInterval,
		deadline:  DefaultInteractionDeadline,
		now:       time.Now,
		nonceTTL:  DefaultNonceWindow,
	}
	for _, o := range opts {
		o(&cfg)
	}
	cfg.bot.Bot = true
	if cfg.appID == "" {
		cfg.appID = cfg.bot.ID
	}
	s := &Server{
		t:            t,
		cfg:          cfg,
		changed:      make(chan struct{}),
		users:        map[string]User{cfg.bot.ID: cfg.bot},
		guilds:       map[string]*guild{},
		channels:     map[string]*channel{},
		dms:          map[string]string{},
		messages:     map[string][]*Message{},
		byID:         map[string]*Message{},
		commands:     map[string][]*discordgo.ApplicationCommand{},
		interactions: map[string]*interaction{},
		nonces:       map[string]*Message{},
		denied:       map[string]bool{},
		deniedPerms:  map[string]int64{},
		archiveAfter: map[string]int{},
		conns:        map[*conn]struct{}{},
		sessions:     map[string]*session{},
	}
	for _, g := range cfg.guilds {
		gd := s.ensureGuildLocked(g.ID)
		if g.Name != "" {
			gd.name = g.Name
		}
		if g.OwnerID != "" {
			gd.ownerID = g.OwnerID
			s.ensureUserLocked(g.OwnerID)
		}
		for _, c := range g.ChannelIDs {
			s.ensureChannelLocked(c, g.ID, "")
		}
	}
	s.routes()
	s.hs = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.wsURL = "ws" + strings.TrimPrefix(s.hs.URL, "http") + gatewayPath
	t.Cleanup(s.close)
	return s
}

func (s *Server) close() {
	s.mu.Lock()
	s.closed = true
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.ws.Close()
	}
	s.hs.Close()
	s.wg.Wait()
}

// URL returns the site root, e.g. "http://127.0.0.1:41234/": what
// DISCORD_API_URL takes. REST is under URL()+"api/v9/".
func (s *Server) URL() string { return s.hs.URL + "/" }

// GatewayURL returns the websocket URL GET /gateway answers with.
func (s *Server) GatewayURL() string { return s.wsURL }

// Token returns the bot token the fake accepts, without "Bot ".
func (s *Server) Token() string { return s.cfg.token }

// BotUser returns the bot's own user.
func (s *Server) BotUser() User { return s.cfg.bot }

// ApplicationID returns the application's ID.
func (s *Server) ApplicationID() string { return s.cfg.appID }

// Point makes sess send its REST calls to the fake, whatever host
// discordgo's Endpoint variables name: it replaces sess.Client with one
// whose transport rewrites the scheme and host of every request. The
// gateway needs nothing more, since discordgo asks GET /gateway where it is.
// Point touches no package variable, so tests using it may run in parallel.
func (s *Server) Point(sess *discordgo.Session) {
	u, _ := url.Parse(s.hs.URL)
	sess.Client = &http.Client{
		Timeout:   20 * time.Second,
		Transport: rewriteHost{to: u, next: s.hs.Client().Transport},
	}
}

type rewriteHost struct {
	to   *url.URL
	next http.RoundTripper
}

func (rt rewriteHost) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host, r.Host = rt.to.Scheme, rt.to.Host, rt.to.Host
	return rt.next.RoundTrip(r)
}

// SetEndpoints points discordgo's package-level Endpoint variables at root,
// a site root such as URL() or DISCORD_API_URL, deriving each from it as
// discordgo's own initialisation does from "https://discord.com/"; the
// endpoint functions read these variables, so they follow. It returns a
// function that puts the previous values back, for t.Cleanup.
//
// The variables are process-wide: a test that calls SetEndpoints must not
// run in parallel with another that uses discordgo (go test runs a test
// without t.Parallel alone). Point is the per-session alternative.
func SetEndpoints(root string) (restore func()) {
	if !strings.HasSuffix(root, "/") {
		root += "/"
	}
	vars := []*string{
		&discordgo.EndpointDiscord, &discordgo.EndpointAPI,
		&discordgo.EndpointGuilds, &discordgo.EndpointChannels, &discordgo.EndpointUsers,
		&discordgo.EndpointGateway, &discordgo.EndpointGatewayBot, &discordgo.EndpointWebhooks,
		&discordgo.EndpointStickers, &discordgo.EndpointStageInstances, &discordgo.EndpointSKUs,
		&discordgo.EndpointVoice, &discordgo.EndpointVoiceRegions, &discordgo.EndpointNitroStickersPacks,
		&discordgo.EndpointGuildCreate, &discordgo.EndpointApplications,
		&discordgo.EndpointOAuth2, &discordgo.EndpointOAuth2Applications,
		&discordgo.EndpointOauth2, &discordgo.EndpointOauth2Applications,
	}
	old := make([]string, len(vars))
	for i, v := range vars {
		old[i] = *v
	}
	api := root + "api/v" + discordgo.APIVersion + "/"
	// The same expressions as discordgo's endpoints.go, in its order.
	discordgo.EndpointDiscord = root
	discordgo.EndpointAPI = api
	discordgo.EndpointGuilds = api + "guilds/"
	discordgo.EndpointChannels = api + "channels/"
	discordgo.EndpointUsers = api + "users/"
	discordgo.EndpointGateway = api + "gateway"
	discordgo.EndpointGatewayBot = discordgo.EndpointGateway + "/bot"
	discordgo.EndpointWebhooks = api + "webhooks/"
	discordgo.EndpointStickers = api + "stickers/"
	discordgo.EndpointStageInstances = api + "stage-instances"
	discordgo.EndpointSKUs = api + "skus"
	discordgo.EndpointVoice = api + "/voice/"
	discordgo.EndpointVoiceRegions = discordgo.EndpointVoice + "regions"
	discordgo.EndpointNitroStickersPacks = api + "/sticker-packs"
	discordgo.EndpointGuildCreate = api + "guilds"
	discordgo.EndpointApplications = api + "applications"
	discordgo.EndpointOAuth2 = api + "oauth2/"
	discordgo.EndpointOAuth2Applications = discordgo.EndpointOAuth2 + "applications"
	discordgo.EndpointOauth2 = discordgo.EndpointOAuth2
	discordgo.EndpointOauth2Applications = discordgo.EndpointOAuth2Applications
	return func() {
		for i, v := range vars {
			*v = old[i]
		}
	}
}

// AddUser tells the fake a user's name and whether it is a bot. Users the
// fake has not been told about are called "user<ID>".
func (s *Server) AddUser(u User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u.Username == "" {
		u.Username = "user" + u.ID
	}
	s.users[u.ID] = u
}

// AddChannel makes a text channel in a guild known (joining the guild if
// the bot is not in it). Posting to a channel the fake does not know gets
// 404 "Unknown Channel", as from Discord; the builders add the channels
// they name.
func (s *Server) AddChannel(channelID, guildID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ensureChannelLocked(channelID, guildID, "")
}

// RemoveChannel deletes a guild channel, as when someone deletes it in
// Discord: sessions that have its guild get CHANNEL_DELETE, and requests
// to it answer 404 Unknown Channel (10003).
func (s *Server) RemoveChannel(channelID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.channels[channelID]
	if !ok {
		return
	}
	delete(s.channels, channelID)
	if g, ok := s.guilds[c.guildID]; ok {
		pos := slices.Index(g.channels, channelID)
		g.channels = slices.DeleteFunc(g.channels, func(id string) bool { return id == channelID })
		s.dispatchLocked("CHANNEL_DELETE", func(ss *session) any {
			if !ss.wantsGuild(c.guildID, discordgo.IntentGuilds) {
				return nil
			}
			return wireChannel(c, pos)
		})
	}
	s.notifyLocked()
}

// DenyChannel takes the bot's access to a channel away, as a permission
// overwrite denying View Channel does: requests to it answer 403 Missing
// Access (50001).
func (s *Server) DenyChannel(channelID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.denied[channelID] = true
}

// AllowChannel gives the bot back its access to a channel DenyChannel
// took, and the permissions DenyPermissions took there.
func (s *Server) AllowChannel(channelID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.denied, channelID)
	delete(s.deniedPerms, channelID)
}

// DenyPermissions takes permissions away from everyone in a guild channel,
// the bot included, as a permission overwrite on @everyone denying them
// does: e.g. discordgo.PermissionCreatePublicThreads, after which starting
// a thread there answers 403 Missing Permissions (50013).
func (s *Server) DenyPermissions(channelID string, perms int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deniedPerms[channelID] |= perms
}

// AddDM makes the DM channel between the bot and a user known, so that
// POST /users/@me/channels for that user answers with channelID.
func (s *Server) AddDM(channelID, userID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ensureChannelLocked(channelID, "", userID)
}

// SetMember makes a user a member of a guild with the given permissions:
// the fake gives the member a role that grants them (on top of @everyone)
// and announces the role with GUILD_ROLE_CREATE if the guild is already
// known to connected sessions. GET /guilds/{id}, GET .../members/{user}
// and the permissions in interactions agree with it. Set members before
// dispatching the events that depend on them.
func (s *Server) SetMember(guildID, userID string, permissions int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.ensureGuildLocked(guildID)
	s.ensureUserLocked(userID)
	m := s.ensureMemberLocked(g, userID)
	r := role{id: s.newID(), name: "perms-" + userID, permissions: permissions}
	g.roles = append(g.roles, r)
	m.roles = []string{r.id}
	s.dispatchLocked("GUILD_ROLE_CREATE", func(ss *session) any {
		if !ss.wantsGuild(guildID, discordgo.IntentGuilds) {
			return nil
		}
		return map[string]any{"guild_id": guildID, "role": wireRole(r, len(g.roles)-1)}
	})
	s.notifyLocked()
}

// newID returns a fresh snowflake made now, on the fake's clock: as
// Discord's, its top 42 bits are the milliseconds since Discord's epoch
// (2015-01-01), which discordgo.SnowflakeTimestamp reads back, and IDs
// increase, so they sort by creation — those made in the same
// millisecond by their low bits.
func (s *Server) newID() string {
	const discordEpoch = 1420070400000 // ms since 1970
	made := uint64(max(s.cfg.now().UnixMilli()-discordEpoch, 0)) << 22
	for {
		last := s.ids.Load()
		id := max(made, last+1)
		if s.ids.CompareAndSwap(last, id) {
			return strconv.FormatUint(id, 10)
		}
	}
}

func (s *Server) ensureUserLocked(id string) User {
	if u, ok := s.users[id]; ok {
		return u
	}
	u := User{ID: id, Username: "user" + id}
	s.users[id] = u
	return u
}

// userLocked returns a user, adding it when the caller gave more than an ID.
func (s *Server) userLocked(u User) User {
	if u.Username == "" {
		return s.ensureUserLocked(u.ID)
	}
	s.users[u.ID] = u
	return u
}

// ensureGuildLocked returns a guild, joining it if the bot was not in it:
// connected sessions then get GUILD_CREATE, as when a bot is added.
func (s *Server) ensureGuildLocked(id string) *guild {
	if g, ok := s.guilds[id]; ok {
		return g
	}
	owner := s.newID()
	s.users[owner] = User{ID: owner, Username: "owner" + owner}
	g := &guild{
		id: id, name: "Guild " + id, ownerID: owner, joined: time.Now().UTC(),
		roles:   []role{{id: id, name: "@everyone", permissions: everyonePermissions}},
		members: map[string]*member{s.cfg.bot.ID: {joined: time.Now().UTC()}},
	}
	s.guilds[id] = g
	s.guildOrder = append(s.guildOrder, id)
	s.dispatchLocked("GUILD_CREATE", func(ss *session) any {
		if !ss.wantsGuild(id, discordgo.IntentGuilds) {
			return nil
		}
		return s.wireGuildLocked(g, true)
	})
	return g
}

func (s *Server) ensureMemberLocked(g *guild, userID string) *member {
	m, ok := g.members[userID]
	if !ok {
		m = &member{joined: time.Now().UTC()}
		g.members[userID] = m
	}
	return m
}

// ensureChannelLocked returns a channel, making it known: a guild text
// channel when guildID is set (announced with CHANNEL_CREATE to sessions
// that already have the guild), else the DM with recipient.
func (s *Server) ensureChannelLocked(id, guildID, recipient string) *channel {
	if c, ok := s.channels[id]; ok {
		return c
	}
	c := &channel{id: id, guildID: guildID, recipient: recipient, kind: discordgo.ChannelTypeGuildText}
	if guildID == "" {
		c.kind = discordgo.ChannelTypeDM
		if recipient != "" {
			s.ensureUserLocked(recipient)
			if _, ok := s.dms[recipient]; !ok {
				s.dms[recipient] = id
			}
		}
		s.channels[id] = c
		return c
	}
	_, known := s.guilds[guildID]
	g := s.ensureGuildLocked(guildID)
	c.name = "channel-" + id
	s.channels[id] = c
	g.channels = append(g.channels, id)
	if known {
		pos := len(g.channels) - 1
		s.dispatchLocked("CHANNEL_CREATE", func(ss *session) any {
			if !ss.wantsGuild(guildID, discordgo.IntentGuilds) {
				return nil
			}
			return wireChannel(c, pos)
		})
	}
	return c
}

// permissionsLocked is a member's guild-wide permissions, computed as
// Discord does without channel overwrites (the fake makes none).
func (s *Server) permissionsLocked(g *guild, userID string) int64 {
	if userID == g.ownerID {
		return discordgo.PermissionAll
	}
	var p int64
	var roles []string
	if m, ok := g.members[userID]; ok {
		roles = m.roles
	}
	for _, r := range g.roles {
		if r.id == g.id {
			p |= r.permissions
		}
		for _, id := range roles {
			if r.id == id {
				p |= r.permissions
			}
		}
	}
	if p&discordgo.PermissionAdministrator != 0 {
		p = discordgo.PermissionAll
	}
	return p
}

// notifyLocked wakes every Wait*.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// waitFor blocks until cond, called with s.mu held, is true.
func (s *Server) waitFor(ctx context.Context, what string, cond func() (bool, string)) error {
	for {
		s.mu.Lock()
		ok, saw := cond()
		ch := s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("discordfake: waiting for %s, saw %s: %w", what, saw, ctx.Err())
		}
	}
}
