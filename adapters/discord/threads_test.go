package discord_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/taskloom/taskloom/adapters/discord"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/discordfake"
	"github.com/taskloom/taskloom/plugin"
)

// withThreads turns TASKLOOM_DISCORD_THREADS on.
func withThreads(o *discord.Options) { o.Threads = true }

// logs keeps what the adapter logs, for the lines that say why.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logs) into(o *discord.Options) { o.Logger = slog.New(slog.NewTextHandler(l, nil)) }

// watchMoves returns the tasks the adapter reports moved (TASK_CHANGED
// with a room of its own), as they move.
func (b *bot) watchMoves() <-chan domain.Task {
	ch := make(chan domain.Task, 64)
	b.core.Runtime.Subscribe(plugin.TaskChanged, func(_ context.Context, ev plugin.Event) {
		if ev.Task != nil && strings.Count(ev.Task.RoomID, ":") == 2 {
			select {
			case ch <- *ev.Task:
			default:
			}
		}
	})
	return ch
}

// moved waits for task n to move, and returns it.
func (b *bot) moved(moves <-chan domain.Task, n int64) domain.Task {
	b.t.Helper()
	for {
		select {
		case t := <-moves:
			if t.Number == n {
				return t
			}
		case <-b.ctx.Done():
			b.t.Fatalf("task #%d never moved to a thread", n)
		}
	}
}

func (b *bot) flush(urgent bool) {
	b.t.Helper()
	var err error
	if urgent {
		_, err = b.core.Notify.FlushUrgent(b.ctx)
	} else {
		b.clk.Advance(5 * time.Second)
		_, err = b.core.Notify.Flush(b.ctx)
	}
	if err != nil {
		b.t.Fatal(err)
	}
}

func TestTaskGetsAThreadWhereItReports(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	b := start(t, srv, withThreads)
	moves := b.watchMoves()

	srv.MessageCreate(channelID, guildID, alice, b.mention("create task Build auth"))
	ack := b.messages(channelID, 1)[0]
	mustContain(t, "acknowledgement", ack.Content, `Created task #1 "Build auth"`)
	task := b.moved(moves, 1)

	// The thread is the acknowledgement's, named after the task.
	ths := srv.Threads(channelID)
	if len(ths) != 1 || ths[0].ID != ack.ID || ths[0].Name != "#1 Build auth" || ths[0].OwnerID != srv.BotUser().ID ||
		ths[0].AutoArchiveDuration != 10080 {
		t.Fatalf("threads = %+v; want one, #1 Build auth, from the acknowledgement %s", ths, ack.ID)
	}
	thread := ths[0].ID
	room := "discord:" + channelID + ":" + thread
	if task.RoomID != room || b.task(1).RoomID != room {
		t.Errorf("the task's room = %q, want %q", b.task(1).RoomID, room)
	}
	evs, err := b.store.TaskEvents(b.ctx, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if last := evs[len(evs)-1]; last.Type != domain.EventMoved || last.Actor != "discord" {
		t.Errorf("last event = %s by %s, want moved", last.Type, last.Actor)
	}
	if m, _ := srv.Message(ack.ID); m.Flags&discordgo.MessageFlagsHasThread == 0 {
		t.Errorf("the acknowledgement has no thread: flags %b", m.Flags)
	}

	// Progress goes to the thread, batched.
	b.model.Decide("list_files", nil, 30, "continue")
	b.step()
	b.flush(false)
	progress := b.messages(thread, 1)[0]
	mustContain(t, "progress in the thread", progress.Content, `📋 Task #1 "Build auth"`, "Progress: 0% → 30%")
	if progress.ChannelID != thread || progress.GuildID != guildID {
		t.Errorf("progress posted in %s of %s", progress.ChannelID, progress.GuildID)
	}
	pingsNobody(t, progress)

	// A question too; an answer in the thread that mentions the bot
	// resumes the task.
	b.model.Decide("ask_user", map[string]string{"question": "JWT or sessions?"}, 40, "continue")
	b.step()
	b.flush(true)
	question := b.messages(thread, 2)[1]
	mustContain(t, "question in the thread", question.Content, "JWT or sessions?")
	if st := b.task(1); st.Status != domain.StatusWaiting {
		t.Fatalf("after ask_user the task is %s", st.Status)
	}
	srv.MessageCreate(thread, guildID, bob, b.mention("use JWT"))
	thanks := b.messages(thread, 3)[2]
	mustContain(t, "answer's reply", thanks.Content, `Thanks — task #1 "Build auth" goes on with your answer`)
	if st := b.task(1).Status; st == domain.StatusWaiting {
		t.Errorf("the answer in the thread did not resume the task (%s)", st)
	}

	// Completion: at once, in the thread.
	b.model.Decide("list_files", nil, 100, "done")
	b.step()
	b.flush(true)
	done := b.messages(thread, 4)[3]
	mustContain(t, "completion in the thread", done.Content, `✅ Task #1 "Build auth" completed!`)

	b.stop()
	if ms := srv.Messages(channelID); len(ms) != 1 {
		var texts []string
		for _, m := range ms {
			texts = append(texts, m.Content)
		}
		t.Errorf("the channel has %d bot messages, want only the acknowledgement: %q", len(ms), texts)
	}
}

func TestSlashCreateGetsAThreadAndAStrategy(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	b := start(t, srv, withThreads)
	moves := b.watchMoves()
	params := make(chan string, 8)
	b.core.Runtime.Subscribe(plugin.MessageReceived, func(_ context.Context, ev plugin.Event) {
		params <- ev.Message.Action + " " + string(ev.Message.Params)
	})

	b.slash(alice, "create", discordfake.CommandOption{Name: "goal", Value: "Review the docs"},
		discordfake.CommandOption{Name: "strategy", Value: "loop"})
	_, ack := b.response(1)
	mustContain(t, "/task create", ack.Content, `Created task #1 "Review the docs"`)
	if got := <-params; got != `create_task {"goal":"Review the docs","strategy":"loop"}` {
		t.Errorf("the runtime got %s", got)
	}
	task := b.moved(moves, 1)
	if want := "discord:" + channelID + ":" + ack.ID; task.RoomID != want {
		t.Errorf("room = %q, want the thread of the response, %q", task.RoomID, want)
	}
	if got := b.task(1).Strategy; got != domain.StrategyLoop {
		t.Errorf("strategy = %q, want loop", got)
	}
	if ths := srv.Threads(channelID); len(ths) != 1 || ths[0].Name != "#1 Review the docs" {
		t.Errorf("threads = %+v", ths)
	}

	// Subtasks of a threaded task report in its thread.
	b.model.Decide("create_subtask", map[string]string{"goal": "check the links"}, 20, "continue")
	b.step()
	if got := b.task(2); got.ParentNumber != 1 || got.RoomID != task.RoomID {
		t.Errorf("subtask = parent #%d room %q; want #1's thread %q", got.ParentNumber, got.RoomID, task.RoomID)
	}

	// Every strategy the option offers reaches create_task; whether the
	// task service runs it is its own business (docs/strategies.md).
	b.slash(alice, "create", discordfake.CommandOption{Name: "goal", Value: "Think first"},
		discordfake.CommandOption{Name: "strategy", Value: "react"})
	_, m := b.response(2)
	if got := <-params; got != `create_task {"goal":"Think first","strategy":"react"}` {
		t.Errorf("the runtime got %s", got)
	}
	if !strings.Contains(m.Content, `Created task #3 "Think first"`) && !strings.Contains(m.Content, `no strategy "react"`) {
		t.Errorf("/task create strategy: react = %q", m.Content)
	}
}

func TestThreadsOffTasksStayInTheChannel(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	b := start(t, srv)
	srv.MessageCreate(channelID, guildID, alice, b.mention("create task Build auth"))
	b.messages(channelID, 1)
	b.slash(alice, "create", discordfake.CommandOption{Name: "goal", Value: "Fix the bug"})
	b.response(1)
	b.model.Decide("list_files", nil, 100, "done")
	b.step()
	b.flush(true)
	mustContain(t, "completion", b.messages(channelID, 3)[2].Content, "completed!")
	b.stop()
	if cs := srv.CallsTo("POST", "/channels/"); slices.ContainsFunc(cs, func(c discordfake.Call) bool { return strings.HasSuffix(c.Path, "/threads") }) {
		t.Error("a thread was started with threads off")
	}
	for _, n := range []int64{1, 2} {
		if room := b.task(n).RoomID; room != "discord:"+channelID {
			t.Errorf("task #%d room = %q", n, room)
		}
	}
}

func TestTaskStaysInTheChannelWhenNoThreadCanBeMade(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	var log logs
	b := start(t, srv, withThreads, log.into)
	srv.DenyPermissions(channelID, discordgo.PermissionCreatePublicThreads)

	srv.MessageCreate(channelID, guildID, alice, b.mention("create task Build auth"))
	b.messages(channelID, 1)
	calls, err := srv.WaitCalls(b.ctx, "POST", "/channels/"+channelID+"/messages/", 1)
	if err != nil {
		t.Fatal(err)
	}
	if last := calls[len(calls)-1]; !strings.HasSuffix(last.Path, "/threads") || last.Status != 403 {
		t.Fatalf("thread request = %s %s → %d, want a refused thread", last.Method, last.Path, last.Status)
	}

	// A task created in a thread (someone else's) stays in that thread.
	const theirThread = "1300000000000000099"
	srv.AddThread(theirThread, channelID, bob, "planning")
	b.slashIn(theirThread, guildID, alice, "create", discordfake.CommandOption{Name: "goal", Value: "Plan the launch"})
	b.response(1)

	// Both work where they were created.
	b.model.Decide("list_files", nil, 100, "done").Decide("list_files", nil, 100, "done")
	b.step()
	b.step()
	b.flush(true)
	mustContain(t, "completion in the channel", b.messages(channelID, 2)[1].Content, `Task #1 "Build auth" completed!`)
	if ms := b.messages(theirThread, 2); !strings.Contains(ms[len(ms)-1].Content, `Task #2 "Plan the launch" completed!`) {
		t.Errorf("thread messages = %+v", ms)
	}
	b.stop()
	if room := b.task(1).RoomID; room != "discord:"+channelID {
		t.Errorf("task #1 room = %q", room)
	}
	if room := b.task(2).RoomID; room != "discord:"+channelID+":"+theirThread {
		t.Errorf("task #2 room = %q, want the thread's", room)
	}
	if n := len(srv.Threads(channelID)); n != 1 {
		t.Errorf("%d threads, want only the person's", n)
	}
	out := log.String()
	for _, want := range []string{"Create Public Threads", "that is a thread already"} {
		if strings.Count(out, want) != 1 {
			t.Errorf("the log says %q %d times, want once:\n%s", want, strings.Count(out, want), out)
		}
	}
}

func TestAutocompleteOffersTheCallersTasks(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	b := start(t, srv)
	mk := func(goal, user, workspace string) domain.Task {
		t.Helper()
		task, err := b.store.CreateTask(b.ctx, domain.NewTask{Goal: goal, RequestorID: user, Platform: "discord",
			RoomID: "discord:" + channelID, WorkspaceID: workspace, Now: t0})
		if err != nil {
			t.Fatal(err)
		}
		return task
	}
	for i := 1; i <= 30; i++ {
		mk(fmt.Sprintf("Task %d", i), alice, guildID) // #1–#30
	}
	mk("bob's secret", bob, "dm:discord:"+bob)    // #31
	mk("elsewhere", alice, "1300000000000000777") // #32, another guild
	mk("The last one", alice, guildID)            // #33
	for _, n := range []int64{5, 12} {
		if _, err := b.core.Tasks.Pause(b.ctx, n, alice); err != nil {
			t.Fatal(err)
		}
	}

	complete := func(a discordfake.Autocomplete) []*discordgo.ApplicationCommandOptionChoice {
		t.Helper()
		a.Focused = "number"
		before := len(srv.Responses())
		b.srv.Autocomplete(a)
		r := b.responses(before + 1)[before]
		if r.Type != discordgo.InteractionApplicationCommandAutocompleteResult || r.After > discordfake.DefaultInteractionDeadline {
			t.Fatalf("autocomplete answered with type %d after %v", r.Type, r.After)
		}
		cs, err := r.Choices()
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	numbers := func(cs []*discordgo.ApplicationCommandOptionChoice) []int64 {
		var out []int64
		for _, c := range cs {
			out = append(out, int64(c.Value.(float64)))
		}
		return out
	}
	seq := func(from, to int64) []int64 {
		var out []int64
		for n := from; n >= to; n-- {
			out = append(out, n)
		}
		return out
	}
	inGuild := discordfake.Autocomplete{ChannelID: channelID, GuildID: guildID, User: discordfake.User{ID: alice}}

	status := inGuild
	status.Subcommand = "status"
	cs := complete(status)
	if got, want := numbers(cs), append([]int64{33}, seq(30, 7)...); !slices.Equal(got, want) {
		t.Errorf("/task status choices = %v, want %v: the guild's newest 25", got, want)
	}
	if cs[0].Name != "#33 The last one — queued" || cs[1].Name != "#30 Task 30 — queued" {
		t.Errorf("choice names = %q, %q", cs[0].Name, cs[1].Name)
	}

	status.Typed = "1"
	if got, want := numbers(complete(status)), append(seq(19, 10), 1); !slices.Equal(got, want) {
		t.Errorf("typed 1: choices %v, want %v", got, want)
	}
	status.Typed = "31" // bob's DM task is not alice's to see
	if got := complete(status); len(got) != 0 {
		t.Errorf("typed 31: choices %v, want none", numbers(got))
	}

	resume := inGuild
	resume.Subcommand = "resume"
	if got := numbers(complete(resume)); !slices.Equal(got, []int64{12, 5}) {
		t.Errorf("/task resume choices = %v, want the paused #12 and #5", got)
	}

	// In bob's DM, his own DM task, and nothing of the guild's.
	dm := discordfake.Autocomplete{ChannelID: bobDM, User: discordfake.User{ID: bob}, Subcommand: "status"}
	if got := numbers(complete(dm)); !slices.Equal(got, []int64{31}) {
		t.Errorf("bob's DM choices = %v, want his #31", got)
	}
	dm = discordfake.Autocomplete{ChannelID: aliceDM, User: discordfake.User{ID: alice}, Subcommand: "cancel"}
	if got := numbers(complete(dm)); len(got) != 0 {
		t.Errorf("alice's DM choices = %v, want none", got)
	}
}

func TestCommandsWorkInDMsAndGroupDMs(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	b := start(t, srv, withThreads)

	// Registered for both installations and every context.
	cmds := srv.Commands("")
	if len(cmds) != 1 || cmds[0].IntegrationTypes == nil || cmds[0].Contexts == nil {
		t.Fatalf("registered = %+v", cmds)
	}
	if got := *cmds[0].IntegrationTypes; !slices.Equal(got, []discordgo.ApplicationIntegrationType{0, 1}) {
		t.Errorf("integration_types = %v, want guild and user install", got)
	}
	if got := *cmds[0].Contexts; !slices.Equal(got, []discordgo.InteractionContextType{0, 1, 2}) {
		t.Errorf("contexts = %v, want guild, bot DM and private channel", got)
	}
	reg, err := json.Marshal(cmds[0])
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(reg), `"autocomplete":true`); n != 6 {
		t.Errorf("%d options autocomplete, want the 6 numbers: %s", n, reg)
	}

	// In a DM with the bot: a user, no guild, no member.
	b.slashIn(aliceDM, "", alice, "create", discordfake.CommandOption{Name: "goal", Value: "Secret plan"})
	_, m := b.response(1)
	mustContain(t, "DM /task create", m.Content, `Created task #1 "Secret plan"`)
	if task := b.task(1); task.WorkspaceID != "dm:discord:"+alice || task.RoomID != "discord:"+aliceDM || task.RequestorID != alice {
		t.Errorf("DM task = workspace %q room %q requestor %q", task.WorkspaceID, task.RoomID, task.RequestorID)
	}

	// In a group DM the bot is not in: answered there, reported in the
	// user's DM with the bot, private to them.
	const group = "1300000000000000050"
	srv.AddGroupDM(group, alice, bob)
	srv.SlashCommand(discordfake.SlashCommand{ChannelID: group, User: discordfake.User{ID: alice}, Subcommand: "create",
		Options: []discordfake.CommandOption{{Name: "goal", Value: "Plan the trip"}}})
	_, m = b.response(2)
	mustContain(t, "group DM /task create", m.Content, `Created task #2 "Plan the trip"`)
	if m.ChannelID != group {
		t.Errorf("the response went to %s, want the group DM", m.ChannelID)
	}
	task := b.task(2)
	if task.WorkspaceID != "dm:discord:"+alice || task.RoomID != "discord:"+aliceDM {
		t.Errorf("group DM task = workspace %q room %q; want alice's DM", task.WorkspaceID, task.RoomID)
	}
	srv.SlashCommand(discordfake.SlashCommand{ChannelID: group, User: discordfake.User{ID: bob}, Subcommand: "status",
		Options: []discordfake.CommandOption{number(2)}})
	if _, m := b.response(3); m.Content != "There is no task #2 here." {
		t.Errorf("bob's status of alice's task = %q", m.Content)
	}

	b.model.Decide("list_files", nil, 100, "done").Decide("list_files", nil, 100, "done")
	b.step()
	b.step()
	b.flush(true)
	// The two completions go out at once, in one message or two: the
	// service's own flush, woken by each, may take both together.
	if _, err := srv.WaitText(b.ctx, aliceDM, `Task #1 "Secret plan" completed!`, `Task #2 "Plan the trip" completed!`); err != nil {
		t.Fatalf("DM completions: %v", err)
	}
	b.stop()
	for _, m := range srv.Messages(group) {
		if m.InteractionID == "" {
			t.Errorf("the bot posted in the group DM: %q", m.Content)
		}
	}
	if n := len(srv.Threads(channelID)) + len(srv.Threads(aliceDM)); n != 0 {
		t.Errorf("%d threads in DMs", n)
	}
}
