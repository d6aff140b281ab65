package discord_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/discord"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/app"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/config"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/discordfake"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// The guild, channel and people of the tests.
const (
	guildID   = "1300000000000000010"
	channelID = "1300000000000000020"
	alice     = "1300000000000000031" // creates tasks
	bob       = "1300000000000000032" // another member
	carol     = "1300000000000000033" // manages the server
	aliceDM   = "1300000000000000041"
	bobDM     = "1300000000000000042"
)

var t0 = time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)

// newFake starts a fake Discord with the bot in the test guild.
func newFake(t *testing.T, opts ...discordfake.Option) *discordfake.Server {
	t.Helper()
	opts = append([]discordfake.Option{discordfake.WithGuild(discordfake.Guild{ID: guildID, Name: "Test", ChannelIDs: []string{channelID}})}, opts...)
	srv := discordfake.New(t, opts...)
	srv.AddUser(discordfake.User{ID: alice, Username: "alice"})
	srv.AddUser(discordfake.User{ID: bob, Username: "bob"})
	srv.AddUser(discordfake.User{ID: carol, Username: "carol"})
	return srv
}

// bot is Taskloom's core with the Discord adapter, connected to a fake
// Discord: SQLite store (unless the core's options name another), scripted
// model, fake clock. The task service's
// workers are stopped; tests run iterations with core.Tasks.Step.
type bot struct {
	t     *testing.T
	ctx   context.Context
	srv   *discordfake.Server
	clk   *clock.Fake
	store domain.Store
	model *testkit.ScriptedModel
	core  *app.Core
	ad    *discord.Adapter

	stopOnce sync.Once
}

// start builds the bot and starts its runtime.
func start(t *testing.T, srv *discordfake.Server, tweak ...func(*discord.Options)) *bot {
	t.Helper()
	b := newUnstarted(t, srv, tweak...)
	if err := b.core.Runtime.Start(b.ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.core.Tasks.Stop(b.ctx); err != nil { // the test steps tasks itself
		t.Fatal(err)
	}
	return b
}

// newUnstarted builds the bot with the adapter registered, not started.
func newUnstarted(t *testing.T, srv *discordfake.Server, tweak ...func(*discord.Options)) *bot {
	t.Helper()
	return newBot(t, srv, nil, tweak...)
}

// newBot is newUnstarted with configuration variables set.
func newBot(t *testing.T, srv *discordfake.Server, env map[string]string, tweak ...func(*discord.Options)) *bot {
	t.Helper()
	return newBotCore(t, srv, env, nil, tweak...)
}

// newBotCore is newBot whose core's options core changes (nil: none).
func newBotCore(t *testing.T, srv *discordfake.Server, env map[string]string, core func(*app.CoreOptions), tweak ...func(*discord.Options)) *bot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	b := &bot{t: t, ctx: ctx, srv: srv, clk: clock.NewFake(t0), model: testkit.NewScriptedModel()}
	dir := t.TempDir()
	cfg, err := config.Load(func(k string) string {
		if k == "TASKLOOM_DATA_DIR" {
			return dir
		}
		if v, ok := env[k]; ok || k != "TASKLOOM_FACTS" {
			return v
		}
		// The facts evaluator arms a timer on the fake clock for each
		// room's message; the tests that count the clock's waiters
		// turn it on themselves.
		return "false"
	})
	if err != nil {
		t.Fatal(err)
	}
	co := app.CoreOptions{Config: cfg, Model: b.model, Clock: b.clk, Logger: testLogger(), Owner: "test"}
	if core != nil {
		core(&co)
	}
	if co.Store == nil {
		co.Store = teststore.SQLite(t)
	}
	b.store = co.Store
	b.core = app.NewCore(co)
	opts := discord.Options{Token: srv.Token(), APIURL: srv.URL(), Runtime: b.core.Runtime}
	for _, f := range tweak {
		f(&opts)
	}
	b.ad, err = discord.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.core.Runtime.Register(b.ad.Plugin()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.stop)
	return b
}

// stop stops the runtime once: the adapter waits for the messages and
// interactions it is handling, so afterwards nothing more happens.
func (b *bot) stop() {
	b.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// What people wait for (replies included) is sent by the last
		// flush, each when its channel has room: time passes meanwhile,
		// as it would while a real process stops.
		defer testkit.Tick(b.clk, 100*time.Millisecond)()
		if err := b.core.Runtime.Stop(ctx); err != nil {
			b.t.Errorf("stop: %v", err)
		}
	})
}

func testLogger() *slog.Logger {
	if os.Getenv("TASKLOOM_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// mention is text that mentions the bot first, as Discord's client
// writes it.
func (b *bot) mention(text string) string { return "<@" + b.srv.BotUser().ID + "> " + text }

// messages waits for at least n bot messages in a channel. While it
// waits, time passes as far as a reply the pacer left to the outbox asks
// (testkit.PacedDue): Discord takes five messages in any five seconds in a
// channel, and these tests say more than that there with the clock still.
func (b *bot) messages(channel string, n int) []discordfake.Message {
	b.t.Helper()
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 250*time.Millisecond)
		ms, err := b.srv.WaitMessages(ctx, channel, n)
		cancel()
		if err == nil {
			return ms
		}
		if b.ctx.Err() != nil {
			b.t.Fatal(err)
		}
		if due, ok := testkit.PacedDue(b.ctx, b.store, b.clk.Now(), 10*time.Second); ok {
			b.clk.Advance(due.Sub(b.clk.Now()))
		}
	}
}

// responses waits for at least n interaction responses.
func (b *bot) responses(n int) []discordfake.InteractionResponse {
	b.t.Helper()
	rs, err := b.srv.WaitResponses(b.ctx, n)
	if err != nil {
		b.t.Fatal(err)
	}
	return rs
}

// response waits for the nth (from 1) interaction response and returns
// the message it created.
func (b *bot) response(n int) (discordfake.InteractionResponse, discordfake.Message) {
	b.t.Helper()
	r := b.responses(n)[n-1]
	m, ok := b.srv.Message(r.MessageID)
	if !ok {
		b.t.Fatalf("response %d (%+v) made no message", n, r)
	}
	return r, m
}

func (b *bot) slash(user, sub string, opts ...discordfake.CommandOption) discordfake.Interaction {
	return b.slashIn(channelID, guildID, user, sub, opts...)
}

func (b *bot) slashIn(channel, guild, user, sub string, opts ...discordfake.CommandOption) discordfake.Interaction {
	b.t.Helper()
	return b.srv.SlashCommand(discordfake.SlashCommand{ChannelID: channel, GuildID: guild, User: discordfake.User{ID: user},
		Subcommand: sub, Options: opts})
}

func number(n int) discordfake.CommandOption {
	return discordfake.CommandOption{Name: "number", Value: n}
}

func (b *bot) task(n int64) domain.Task {
	b.t.Helper()
	t, err := b.store.GetTask(b.ctx, n)
	if err != nil {
		b.t.Fatalf("task #%d: %v", n, err)
	}
	return t
}

func (b *bot) countTasks() int {
	b.t.Helper()
	n, err := b.store.CountTasks(b.ctx, domain.TaskFilter{})
	if err != nil {
		b.t.Fatal(err)
	}
	return n
}

// step runs one iteration, which the scripted model decides.
func (b *bot) step() {
	b.t.Helper()
	did, err := b.core.Tasks.Step(b.ctx, "worker")
	if err != nil || !did {
		b.t.Fatalf("Step = %v, %v; want an iteration", did, err)
	}
}

// mustContain fails unless s contains every one of want.
func mustContain(t *testing.T, what, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("%s = %q; want it to contain %q", what, s, w)
		}
	}
}

// pingsNobody fails unless the message was sent with allowed_mentions
// that parse nothing, and Discord found no one to ping.
func pingsNobody(t *testing.T, m discordfake.Message) {
	t.Helper()
	if m.AllowedMentions == nil || len(m.AllowedMentions.Parse) != 0 || len(m.AllowedMentions.Users) != 0 ||
		len(m.AllowedMentions.Roles) != 0 || m.AllowedMentions.RepliedUser {
		t.Errorf("message %q: allowed_mentions = %+v, want {parse: []}", m.Content, m.AllowedMentions)
	}
	if len(m.Mentions) != 0 || len(m.MentionRoles) != 0 || m.MentionEveryone {
		t.Errorf("message %q pinged users %v, roles %v, everyone %v", m.Content, m.Mentions, m.MentionRoles, m.MentionEveryone)
	}
}

// wireMessage is a MESSAGE_CREATE payload, for dispatching a message
// again as a gateway replay would.
func wireMessage(id, channel, guild, author, content string, mentions ...string) json.RawMessage {
	users := []any{}
	for _, u := range mentions {
		users = append(users, map[string]any{"id": u, "username": "user" + u})
	}
	m := map[string]any{
		"id": id, "type": 0, "channel_id": channel, "content": content,
		"author":    map[string]any{"id": author, "username": "user" + author},
		"timestamp": time.Now().UTC().Format(time.RFC3339), "mentions": users, "mention_roles": []any{},
		"attachments": []any{}, "embeds": []any{}, "components": []any{},
	}
	if guild != "" {
		m["guild_id"] = guild
		m["member"] = map[string]any{"roles": []any{}}
	}
	raw, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return raw
}

// wireInteraction is the INTERACTION_CREATE payload of a /task
// invocation with one string option, for dispatching it again.
func wireInteraction(in discordfake.Interaction, app, channel, guild, user, sub, option, value string) json.RawMessage {
	raw, err := json.Marshal(map[string]any{
		"id": in.ID, "token": in.Token, "application_id": app, "type": 2, "version": 1,
		"channel_id": channel, "guild_id": guild,
		"member": map[string]any{"user": map[string]any{"id": user, "username": "user" + user}, "roles": []any{}, "permissions": "0"},
		"data": map[string]any{"id": "1", "name": "task", "type": 1, "options": []any{
			map[string]any{"name": sub, "type": 1, "options": []any{map[string]any{"name": option, "type": 3, "value": value}}},
		}},
	})
	if err != nil {
		panic(err)
	}
	return raw
}
