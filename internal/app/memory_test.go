package app_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/discordfake"
	"github.com/taskloom/taskloom/plugin"
)

// anyAnswer answers a chat message's action choice ("action" empty: a
// reply) and a task iteration's decision (no action, completed) alike.
const anyAnswer = `{"action": "", "params": {}, "reply": "Noted.", "thought": "done", "progress": 100, "status": "completed", "summary": "Done."}`

// promptOf is a request's messages, joined.
func promptOf(r testkit.OpenAIRequest) string {
	var b strings.Builder
	for _, m := range r.Body.Messages {
		b.WriteString(m.Content + "\n")
	}
	return b.String()
}

// requestWhere waits for the model's request whose prompt contains
// marker, and returns its prompt.
func requestWhere(t *testing.T, ctx context.Context, fake *testkit.OpenAI, marker string) string {
	t.Helper()
	for {
		for _, r := range fake.Requests() {
			if p := promptOf(r); strings.Contains(p, marker) {
				return p
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no request to the model contains %q", marker)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestMemoryThroughDiscord is memory end to end, through the Discord
// fake and the OpenAI-compatible fake: what ann said in a channel
// reaches the model when bob asks about it there, and the first
// iteration of a task about it in that room; ann's DM secret reaches
// neither; after ann's `forget me` — answered with how many messages were
// deleted, without asking the model — her words are not recalled.
func TestMemoryThroughDiscord(t *testing.T) {
	t.Parallel()
	fake := testkit.NewOpenAI(t)
	fake.SetDefault(anyAnswer)
	discord := discordfake.New(t, discordfake.WithGuild(discordfake.Guild{ID: "G1", ChannelIDs: []string{"C1"}}))
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
	say := func(channel, guild, author, text string, replies int) {
		t.Helper()
		if guild != "" {
			text = "<@" + bot + "> " + text
		}
		discord.MessageCreate(channel, guild, author, text, bot)
		if _, err := discord.WaitMessages(ctx, channel, replies); err != nil {
			t.Fatal(err)
		}
	}
	say("D1", "", "U1", "my secret token is PINEAPPLE-42", 1)
	say("C1", "G1", "U1", "for the record: the staging database is ORCA-7 in Frankfurt", 1)
	say("C1", "G1", "U2", "which database is staging?", 2)
	chat := requestWhere(t, ctx, fake, "which database is staging?")
	if !strings.Contains(chat, "the staging database is ORCA-7 in Frankfurt") || strings.Contains(chat, "PINEAPPLE") {
		t.Fatalf("the chat prompt:\n%s", chat)
	}

	say("C1", "G1", "U2", "create task check the staging database", 3)
	iteration := requestWhere(t, ctx, fake, "Task #1:")
	at := strings.Index(iteration, plugin.MemoryHeading)
	if at < 0 {
		t.Fatalf("the first iteration's prompt recalls nothing:\n%s", iteration)
	}
	if memory := iteration[at:]; !strings.Contains(memory, "the staging database is ORCA-7 in Frankfurt") || strings.Contains(iteration, "PINEAPPLE") {
		t.Fatalf("the first iteration's prompt:\n%s", iteration)
	}

	asked := len(fake.Requests())
	discord.MessageCreate("C1", "G1", "U1", "<@"+bot+"> forget me", bot)
	if _, err := discord.WaitText(ctx, "C1", "Forgotten: I deleted 3 messages you wrote (this one included) and 0 facts about you"); err != nil {
		t.Fatal(err)
	}
	if len(fake.Requests()) != asked {
		// A task notification may not ask the model; only a chat would.
		for _, r := range fake.Requests()[asked:] {
			if strings.Contains(promptOf(r), "forget me") {
				t.Fatalf("`forget me` reached the model:\n%s", promptOf(r))
			}
		}
	}
	n := len(discord.Messages("C1"))
	say("C1", "G1", "U2", "what do you know about the staging database?", n+1)
	again := requestWhere(t, ctx, fake, "what do you know about the staging database?")
	if strings.Contains(again, "ORCA-7") || strings.Contains(again, "userU1") {
		t.Fatalf("forgotten words were recalled:\n%s", again)
	}
}

// TestKnowledgeReachesTheTaskAboutIt: a document added with `taskloom
// knowledge add` (through the API) is recalled — the passage about the
// task's subject, not the whole document — for a task about its subject,
// and not for an unrelated one; `knowledge list` and `rm` work on it. An
// embedding model the server does not serve changes none of it.
func TestKnowledgeReachesTheTaskAboutIt(t *testing.T) {
	t.Parallel()
	fake := testkit.NewOpenAI(t)
	fake.SetDefault(anyAnswer)
	// The fake serves no embeddings: with an embedding model named,
	// recall keeps its full-text order.
	base := startServe(t, map[string]string{"TASKLOOM_DATA_DIR": t.TempDir(), "TASKLOOM_HTTP_ADDR": "127.0.0.1:0",
		"TASKLOOM_API_TOKEN": apiToken, "OPENAI_BASE_URL": fake.URL(), "OPENAI_EMBEDDING_MODEL": "text-embedding-3-small"})
	env := map[string]string{"TASKLOOM_URL": base, "TASKLOOM_API_TOKEN": apiToken}
	filler := func(topic string) string {
		return strings.Repeat("The "+topic+" chapter goes on about its own affairs at some length. ", 14)
	}
	doc := "# Operations runbook\n\nOpening-Mark: what this runbook covers.\n\n" + filler("payroll export") + "\n\n" +
		"To restart the ingest queue, drain it first with the --drain-first flag and wait until its lag reaches zero.\n\n" +
		filler("holiday calendar") + "\n\nClosing-Mark: who to call."
	path := filepath.Join(t.TempDir(), "runbook.md")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	// A file that is not text, or too many for --title, is refused before
	// anything is sent: nothing is added.
	binary := filepath.Join(t.TempDir(), "logo.png")
	if err := os.WriteFile(binary, []byte("\x89PNG\x00\xff"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run(t, env, "knowledge", "add", path, binary); code != 2 || !strings.Contains(errOut, "logo.png is not text") {
		t.Fatalf("knowledge add of a binary file: exit %d\n%s", code, errOut)
	}
	if code, _, errOut := run(t, env, "knowledge", "add", "--title", "One", path, path); code != 2 || !strings.Contains(errOut, "--title names one document") {
		t.Fatalf("knowledge add --title of two files: exit %d\n%s", code, errOut)
	}
	if code, out, errOut := run(t, env, "knowledge", "add", path); code != 0 || !strings.Contains(out, `Added document 1 "Operations runbook"`) {
		t.Fatalf("knowledge add: exit %d\n%s%s", code, out, errOut)
	}
	// One passage reads "1 passage", not "1 passages".
	short := filepath.Join(t.TempDir(), "oncall.md")
	if err := os.WriteFile(short, []byte("# On call\n\nThe on-call rota is in the wiki."), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := run(t, env, "knowledge", "add", short); code != 0 || !strings.HasSuffix(out, ": 1 passage.\n") {
		t.Fatalf("knowledge add of one passage: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := run(t, env, "knowledge", "list"); code != 0 || !strings.Contains(out, "Operations runbook") || !strings.Contains(out, "(everywhere)") {
		t.Fatalf("knowledge list: exit %d\n%s%s", code, out, errOut)
	}
	create := func(goal string) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"/api/tasks", strings.NewReader(`{"goal": "`+goal+`"}`))
		req.Header.Set("Authorization", "Bearer "+apiToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("create %q = %d", goal, resp.StatusCode)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	create("Restart the ingest queue")
	about := requestWhere(t, ctx, fake, "Task #1:")
	if !strings.Contains(about, "[knowledge: Operations runbook] …") ||
		!strings.Contains(about, "To restart the ingest queue, drain it first with the --drain-first flag") ||
		strings.Contains(about, "Opening-Mark") || strings.Contains(about, "Closing-Mark") {
		t.Fatalf("the task about the ingest queue was shown:\n%s", about)
	}
	embedded := false
	for _, r := range fake.Requests() {
		embedded = embedded || r.Path == "/v1/embeddings"
	}
	if !embedded {
		t.Error("OPENAI_EMBEDDING_MODEL is set, but recall never asked for embeddings")
	}
	create("Write a haiku about autumn leaves")
	if other := requestWhere(t, ctx, fake, "Task #2:"); strings.Contains(other, "Relevant memory") || strings.Contains(other, "drain") {
		t.Fatalf("an unrelated task was shown the runbook:\n%s", other)
	}
	if code, out, errOut := run(t, env, "knowledge", "rm", "1"); code != 0 || !strings.Contains(out, "Deleted document 1.") {
		t.Fatalf("knowledge rm: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := run(t, env, "knowledge", "rm", "1"); code != 1 || !strings.Contains(errOut, "no document 1") {
		t.Fatalf("knowledge rm again: exit %d\n%s", code, errOut)
	}
}
