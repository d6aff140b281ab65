package discord_test

import (
	"context"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/adapters/discord"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/app"
	"github.com/taskloom/taskloom/internal/testkit/discordfake"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
)

// The threads of the scope tests, in channelID.
const (
	privateThread = "1300000000000000097"
	publicThread  = "1300000000000000096"
)

// anyAnswer answers a chat message's action choice (a reply) and a task
// iteration's decision (completed) alike.
const anyAnswer = `{"action": "", "params": {}, "reply": "Noted.", "thought": "done", "progress": 100, "status": "completed", "summary": "Done."}`

// startOn starts the bot on a store of the kind open makes, the model
// answering anything with anyAnswer.
func startOn(t *testing.T, srv *discordfake.Server, open teststore.Opener, tweak ...func(*discord.Options)) *bot {
	t.Helper()
	b := newBotCore(t, srv, nil, func(co *app.CoreOptions) { co.Store = open(t) }, tweak...)
	b.model.Default(func(context.Context, plugin.ModelRequest) (plugin.ModelResponse, error) {
		return plugin.ModelResponse{Text: anyAnswer, Model: "scripted"}, nil
	})
	if err := b.core.Runtime.Start(b.ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.core.Tasks.Stop(b.ctx); err != nil {
		t.Fatal(err)
	}
	return b
}

// say has author mention the bot with text in a guild channel or thread
// and waits for the bot's answer to it there.
func (b *bot) say(channel, author, text string) {
	b.t.Helper()
	id := b.srv.MessageCreate(channel, guildID, author, b.mention(text))
	// Wait for the bot's answer to this message, not for a count of the
	// channel's messages: an earlier answer may still be on its way (one
	// whose channel Discord did not know yet is sent again from the
	// outbox).
	for n := 1; ; {
		ms := b.messages(channel, n)
		for _, m := range ms {
			if m.ReplyTo == id {
				return
			}
		}
		n = len(ms) + 1
	}
}

// promptWith is the prompt of the model's first request that contains
// marker.
func (b *bot) promptWith(marker string) string {
	b.t.Helper()
	for _, r := range b.model.Requests() {
		var p strings.Builder
		for _, m := range r.Messages {
			p.WriteString(m.Content + "\n")
		}
		if strings.Contains(p.String(), marker) {
			return p.String()
		}
	}
	b.t.Fatalf("no request to the model contains %q", marker)
	return ""
}

// recalled is the Relevant memory section of a prompt, "" if none.
func recalled(prompt string) string {
	if at := strings.Index(prompt, plugin.MemoryHeading); at >= 0 {
		return prompt[at:]
	}
	return ""
}

// TestPrivateThreadIsItsOwnScope: what is said in a private thread, read
// by its members only, is not recalled in its channel, where everyone else
// would see it in the bot's answers and in a task's work, and it is
// recalled in the thread; what is said in a public thread, read by
// everyone who reads the channel, is recalled in the channel.
func TestPrivateThreadIsItsOwnScope(t *testing.T) {
	t.Parallel()
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		t.Parallel()
		srv := newFake(t)
		srv.AddPrivateThread(privateThread, channelID, alice, "the deal")
		srv.AddThread(publicThread, channelID, bob, "staging")
		b := startOn(t, srv, open, withThreads)

		b.say(privateThread, alice, "the acquisition target is ZEPHYRCORP-77, keep it quiet")
		b.say(publicThread, bob, "the staging database is ORCA-7 in Frankfurt")
		b.say(channelID, carol, "what is the acquisition target, and the staging database?")
		prompt := b.promptWith("what is the acquisition target, and the staging database?")
		if !strings.Contains(recalled(prompt), "ORCA-7") || strings.Contains(prompt, "ZEPHYRCORP") {
			t.Errorf("in the channel, the prompt:\n%s\nwant the public thread's words recalled, not the private thread's", prompt)
		}

		// A task created in the channel (moved to a thread of its own, in
		// the channel's scope) works without the private words.
		moves := b.watchMoves()
		b.say(channelID, carol, "create task find out the acquisition target")
		b.moved(moves, 1)
		b.step()
		if it := b.promptWith("Task #1:"); strings.Contains(it, "ZEPHYRCORP") {
			t.Errorf("the channel's task recalled the private thread:\n%s", it)
		}

		// In the private thread, its own words are remembered.
		b.say(privateThread, alice, "remind me: which acquisition target?")
		if p := b.promptWith("remind me: which acquisition target?"); !strings.Contains(p, "ZEPHYRCORP-77") {
			t.Errorf("in the private thread, the prompt:\n%s\nwant its own words", p)
		}
		b.stop()

		rooms := map[string]string{privateThread: "discord:" + privateThread, publicThread: "discord:" + channelID + ":" + publicThread}
		for thread, room := range rooms {
			ms, err := b.store.SearchMemories(b.ctx, domain.MemoryFilter{Room: room})
			if err != nil || len(ms) == 0 {
				t.Errorf("memories of %s's room %s: %d, %v", thread, room, len(ms), err)
			}
		}
	})
}

// TestTaskInAPrivateThreadStaysThere: a task created in a private thread
// (a room named "discord:<thread>") gets no thread of its own — Discord has
// no threads in threads — and reports in the private thread, where a
// mention of the bot answers its question, as in any thread a task
// reports in: the people there need not reply to the question itself.
func TestTaskInAPrivateThreadStaysThere(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	srv.AddPrivateThread(privateThread, channelID, alice, "the deal")
	var log logs
	b := startOn(t, srv, teststore.SQLite, withThreads, log.into)

	b.say(privateThread, alice, "create task Draft the term sheet")
	b.model.Decide("ask_user", map[string]string{"question": "Which currency?"}, 10, "continue")
	b.step()
	b.flush(true)
	mustContain(t, "question in the private thread", b.messages(privateThread, 2)[1].Content, "Which currency?")
	if room := b.task(1).RoomID; room != "discord:"+privateThread {
		t.Errorf("task #1 room = %q, want the private thread's", room)
	}
	srv.MessageCreate(privateThread, guildID, alice, b.mention("in euros"))
	mustContain(t, "answer's reply", b.messages(privateThread, 3)[2].Content, `Thanks — task #1 "Draft the term sheet" goes on with your answer`)
	b.stop()

	for _, c := range srv.CallsTo("POST", "/channels/"+privateThread+"/messages/") {
		if strings.HasSuffix(c.Path, "/threads") {
			t.Errorf("the bot asked for a thread inside the private thread: %s → %d", c.Path, c.Status)
		}
	}
	if !strings.Contains(log.String(), "that is a thread already") {
		t.Errorf("the log does not say why the task stays:\n%s", log.String())
	}
}

// TestThreadNobodyDescribesIsARoomOfItsOwn: when neither the gateway's
// state nor Discord's REST API says what a guild channel is, it is taken
// for a room of its own, never for a thread sharing a channel's scope: had
// it been a private thread, what was said there would otherwise reach the
// whole channel. Once Discord tells (THREAD_CREATE), a public thread's
// words are recalled in its channel again: the failure was not kept.
func TestThreadNobodyDescribesIsARoomOfItsOwn(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	var log logs
	b := startOn(t, srv, teststore.SQLite, log.into)
	const thread = "1300000000000000095"

	// A message in a thread the bot's state does not hold, which GET
	// /channels/{id} does not describe (404 Unknown Channel).
	srv.Dispatch("MESSAGE_CREATE", wireMessage("1300000000000000501", thread, guildID, bob,
		b.mention("the deploy password is HUMMINGBIRD-9"), srv.BotUser().ID))
	if _, err := srv.WaitCalls(b.ctx, "POST", "/channels/"+thread+"/messages", 1); err != nil {
		t.Fatal(err)
	}
	if cs := srv.CallsTo("GET", "/channels/"+thread); len(cs) != 1 || cs[0].Status != 404 {
		t.Fatalf("GET the thread: %+v, want one answered 404", cs)
	}
	if !strings.Contains(log.String(), "taking it for a room of its own") {
		t.Errorf("the log does not say the channel was taken for a room of its own:\n%s", log.String())
	}
	b.say(channelID, carol, "what is the deploy password?")
	if p := b.promptWith("what is the deploy password?"); strings.Contains(p, "HUMMINGBIRD") {
		t.Errorf("the channel recalled what was said in a channel nobody described:\n%s", p)
	}

	// Discord now tells: a public thread of the channel.
	srv.AddThread(thread, channelID, bob, "deploys")
	b.say(thread, bob, "the staging database is ORCA-7 in Frankfurt")
	b.say(channelID, carol, "which staging database?")
	if memory := recalled(b.promptWith("which staging database?")); !strings.Contains(memory, "ORCA-7") {
		t.Errorf("the channel did not recall its public thread once Discord described it:\n%s", memory)
	}
}

// TestPrivateThreadsFormerRowsMoveOut: before private threads were rooms
// of their own, a private thread's messages, facts and tasks were kept
// under "discord:<channel>:<thread>", in the channel's scope. When the bot
// connects and Discord lists the private thread, they move to the
// thread's room: the channel no longer recalls them, the thread does, and
// the task paused there goes on there.
func TestPrivateThreadsFormerRowsMoveOut(t *testing.T) {
	t.Parallel()
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		t.Parallel()
		srv := newFake(t)
		srv.AddPrivateThread(privateThread, channelID, alice, "the deal")
		b := newBotCore(t, srv, nil, func(co *app.CoreOptions) { co.Store = open(t) })
		b.model.Default(func(context.Context, plugin.ModelRequest) (plugin.ModelResponse, error) {
			return plugin.ModelResponse{Text: anyAnswer, Model: "scripted"}, nil
		})
		former, room := "discord:"+channelID+":"+privateThread, "discord:"+privateThread
		if _, _, err := b.store.SaveMemory(b.ctx, domain.Memory{Platform: "discord", MessageID: "1300000000000000400", Room: former,
			AuthorID: alice, AuthorName: "alice", Text: "the acquisition target is ZEPHYRCORP-77, keep it quiet", CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		// Another private thread, which Discord lists later (the bot is
		// added to it): its words move out on its first message.
		const later = "1300000000000000094"
		if _, _, err := b.store.SaveMemory(b.ctx, domain.Memory{Platform: "discord", MessageID: "1300000000000000401",
			Room: "discord:" + channelID + ":" + later, AuthorID: bob, AuthorName: "bob",
			Text: "the acquisition budget is OSPREY-5 million", CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.store.SaveFacts(b.ctx, []domain.Fact{{Room: former, About: "discord:" + alice,
			Text: "Alice is buying ZEPHYRCORP-77 as the acquisition target", CreatedAt: t0}}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.store.CreateTask(b.ctx, domain.NewTask{Goal: "Draft the term sheet", RequestorID: alice, Platform: "discord",
			RoomID: former, WorkspaceID: guildID, Now: t0}); err != nil {
			t.Fatal(err)
		}
		// Paused, so no worker runs it before the test stops them.
		if _, err := b.store.UpdateTask(b.ctx, 1, func(cur domain.Task) (domain.Mutation, error) {
			return domain.Paused(cur, alice, t0)
		}); err != nil {
			t.Fatal(err)
		}
		moved := make(chan domain.Task, 4)
		b.core.Runtime.Subscribe(plugin.TaskChanged, func(_ context.Context, ev plugin.Event) {
			if ev.Task != nil && ev.Task.RoomID == room {
				moved <- *ev.Task
			}
		})
		if err := b.core.Runtime.Start(b.ctx); err != nil {
			t.Fatal(err)
		}
		if err := b.core.Tasks.Stop(b.ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case <-moved:
		case <-b.ctx.Done():
			t.Fatal("the private thread's task never moved to the thread's room")
		}

		srv.AddPrivateThread(later, channelID, bob, "the budget")
		b.say(later, bob, "hello")
		b.say(channelID, carol, "what is the acquisition target, and the budget?")
		if p := b.promptWith("what is the acquisition target, and the budget?"); strings.Contains(p, "ZEPHYRCORP") || strings.Contains(p, "OSPREY") {
			t.Errorf("the channel recalled what was said in the private threads before:\n%s", p)
		}
		// (A mention in the thread would answer the task there: ask the
		// store what the thread recalls.)
		recs, err := b.store.Recall(b.ctx, domain.RecallQuery{Text: "which acquisition target was it?", Room: room})
		if err != nil || len(recs) != 2 {
			t.Errorf("the private thread recalls %+v, %v; want its former message and fact", recs, err)
		}
		if got := b.task(1).RoomID; got != room {
			t.Errorf("the task's room = %q, want %q", got, room)
		}
	})
}
