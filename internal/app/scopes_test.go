package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/discordfake"
)

// TestPrivateThreadThroughDiscord is the report that found the leak, run
// through serve: "the acquisition target is ZEPHYRCORP-77, keep it quiet",
// said in a private thread, must not reach the prompt of a task created in
// its public channel, nor a chat there; said in a public thread, it would.
func TestPrivateThreadThroughDiscord(t *testing.T) {
	t.Parallel()
	fake := testkit.NewOpenAI(t)
	fake.SetDefault(anyAnswer)
	discord := discordfake.New(t, discordfake.WithGuild(discordfake.Guild{ID: "G1", ChannelIDs: []string{"C1"}}))
	discord.AddPrivateThread("T1", "C1", "U1", "the deal")
	discord.AddThread("T2", "C1", "U2", "staging")
	startServe(t, map[string]string{
		"TASKLOOM_DATA_DIR": t.TempDir(), "TASKLOOM_HTTP_ADDR": "127.0.0.1:0", "TASKLOOM_FLUSH_INTERVAL": "1s",
		"DISCORD_BOT_TOKEN": strings.TrimPrefix(discord.Token(), "Bot "), "DISCORD_API_URL": discord.URL(), "DISCORD_APPLICATION_ID": discord.ApplicationID(),
		"OPENAI_BASE_URL": fake.URL(), "TASKLOOM_FACTS": "false",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := discord.WaitIdentified(ctx, 1); err != nil {
		t.Fatal(err)
	}
	bot := discord.BotUser().ID
	say := func(channel, author, text string, replies int) {
		t.Helper()
		discord.MessageCreate(channel, "G1", author, "<@"+bot+"> "+text, bot)
		if _, err := discord.WaitMessages(ctx, channel, replies); err != nil {
			t.Fatal(err)
		}
	}
	say("T1", "U1", "the acquisition target is ZEPHYRCORP-77, keep it quiet", 1)
	say("T2", "U2", "the acquisition budget is ORCA-7 million", 1)
	say("C1", "U2", "create task find out the acquisition target and budget", 1)
	iteration := requestWhere(t, ctx, fake, "Task #1:")
	if strings.Contains(iteration, "ZEPHYRCORP") || !strings.Contains(iteration, "ORCA-7") {
		t.Fatalf("the first iteration's prompt of the channel's task:\n%s\nwant the public thread's words, not the private thread's", iteration)
	}
	say("C1", "U2", "what is the acquisition target?", 3)
	if chat := requestWhere(t, ctx, fake, "what is the acquisition target?"); strings.Contains(chat, "ZEPHYRCORP") {
		t.Fatalf("the chat prompt in the channel:\n%s", chat)
	}
}
