package discord_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/taskloom/taskloom/adapters/discord"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/render"
	"github.com/taskloom/taskloom/internal/testkit/discordfake"
	"github.com/taskloom/taskloom/plugin"
)

func TestMentionCreatesATaskAndRepliesWithItsNumber(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	b := start(t, srv)

	id := srv.MessageCreate(channelID, guildID, alice, b.mention("create task Build auth"))
	reply := b.messages(channelID, 1)[0]
	mustContain(t, "reply", reply.Content, `Created task #1 "Build auth"`, "`status #1`")
	if reply.ReplyTo != id {
		t.Errorf("reply answers %q, want the message %q", reply.ReplyTo, id)
	}
	if got, want := reply.CustomIDs(), []string{"taskloom:pause:1", "taskloom:cancel:1"}; !slices.Equal(got, want) {
		t.Errorf("buttons = %v, want %v", got, want)
	}
	pingsNobody(t, reply)
	task := b.task(1)
	if task.RoomID != "discord:"+channelID || task.WorkspaceID != guildID || task.RequestorID != alice || task.Platform != "discord" {
		t.Errorf("task = room %q workspace %q requestor %q platform %q", task.RoomID, task.WorkspaceID, task.RequestorID, task.Platform)
	}

	// Chatter that does not address the bot is not acted on; a reply to
	// the bot that pings it is.
	srv.MessageCreate(channelID, guildID, alice, "create task chatter among people")
	srv.MessageCreateWith(discordfake.UserMessage{ChannelID: channelID, GuildID: guildID, Author: discordfake.User{ID: bob},
		Content: "status #1", ReplyTo: reply.ID})
	ms := b.messages(channelID, 2)
	mustContain(t, "reply to a reply", ms[1].Content, `Task #1 "Build auth"`)
	b.stop()
	if n := b.countTasks(); n != 1 {
		t.Errorf("%d tasks, want 1: chatter was acted on", n)
	}
	if ms := srv.Messages(channelID); len(ms) != 2 {
		t.Errorf("%d bot messages, want 2", len(ms))
	}

	// The gateway was asked for the minimum: no privileged intent.
	ids := srv.Identifies()
	if len(ids) != 1 || ids[0].Intents != discordgo.IntentGuilds|discordgo.IntentGuildMessages|discordgo.IntentDirectMessages {
		t.Errorf("IDENTIFY = %+v, want the GUILDS, GUILD_MESSAGES and DIRECT_MESSAGES intents", ids)
	}
}

func TestProgressIsBatchedAndCompletionSentAtOnce(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	b := start(t, srv)
	srv.MessageCreate(channelID, guildID, alice, b.mention("create task Build auth"))
	b.messages(channelID, 1)

	b.model.Decide("list_files", nil, 30, "continue").Decide("list_files", map[string]string{"path": "."}, 60, "continue")
	b.step()
	b.step()
	if ms := srv.Messages(channelID); len(ms) != 1 {
		t.Fatalf("progress was sent before the flush: %q", ms[len(ms)-1].Content)
	}
	b.clk.Advance(5 * time.Second) // the flush interval
	if _, err := b.core.Notify.Flush(b.ctx); err != nil {
		t.Fatal(err)
	}
	progress := b.messages(channelID, 2)[1]
	mustContain(t, "progress", progress.Content, `📋 Task #1 "Build auth"`, "Progress: 0% → 60%", "Iteration: 2")
	if strings.Contains(progress.Content, "30%") {
		t.Errorf("two iterations gave more than one delta: %q", progress.Content)
	}
	if got := progress.CustomIDs(); !slices.Equal(got, []string{"taskloom:pause:1", "taskloom:cancel:1"}) {
		t.Errorf("progress buttons = %v", got)
	}
	if progress.ReplyTo != "" {
		t.Errorf("a notification replied to %s", progress.ReplyTo)
	}
	pingsNobody(t, progress)

	// Completion: at once, without waiting for the next flush.
	b.model.Decide("list_files", nil, 100, "done")
	b.step()
	if _, err := b.core.Notify.FlushUrgent(b.ctx); err != nil {
		t.Fatal(err)
	}
	done := b.messages(channelID, 3)[2]
	mustContain(t, "completion", done.Content, `✅ Task #1 "Build auth" completed!`, "Final progress: 100%")
	if got := done.CustomIDs(); !slices.Equal(got, []string{"taskloom:retry:1"}) {
		t.Errorf("completion buttons = %v; want only Retry", got)
	}
	// The button is the requestor's: a retry carries the task's files.
	srv.ButtonClick(discordfake.ButtonClick{MessageID: done.ID, CustomID: "taskloom:retry:1", User: discordfake.User{ID: bob}})
	_, refused := b.response(1)
	mustContain(t, "bob's retry press", refused.Content, "Only the person who created task #1, or an admin, can retry it.")
	srv.ButtonClick(discordfake.ButtonClick{MessageID: done.ID, CustomID: "taskloom:retry:1", User: discordfake.User{ID: alice}})
	_, retried := b.response(2)
	mustContain(t, "retry press", retried.Content, `Created task #2 "Build auth", continuing #1`)
	if got := b.task(2); got.ContinuesNumber != 1 || got.RequestorID != alice {
		t.Errorf("the retry = %+v; want alice's continuation of #1", got)
	}
	b.clk.Advance(5 * time.Second)
	if _, err := b.core.Notify.Flush(b.ctx); err != nil {
		t.Fatal(err)
	}
	b.stop()
	completions := 0
	for _, m := range srv.Messages(channelID) {
		completions += strings.Count(m.Content, "completed!")
	}
	if completions != 1 {
		t.Errorf("the completion was sent %d times", completions)
	}
}

func TestTaskSlashCommands(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	b := start(t, srv)

	b.slash(alice, "create", discordfake.CommandOption{Name: "goal", Value: "Build auth"})
	r, m := b.response(1)
	if r.Type != discordgo.InteractionResponseChannelMessageWithSource || m.Ephemeral() {
		t.Errorf("create answered with type %d, ephemeral %v; want a public message", r.Type, m.Ephemeral())
	}
	mustContain(t, "/task create", m.Content, `Created task #1 "Build auth"`)
	if got := m.CustomIDs(); !slices.Equal(got, []string{"taskloom:pause:1", "taskloom:cancel:1"}) {
		t.Errorf("buttons = %v", got)
	}
	pingsNobody(t, m)
	if b.task(1).RequestorID != alice {
		t.Errorf("requestor = %q, want alice", b.task(1).RequestorID)
	}

	tests := []struct {
		sub       string
		opts      []discordfake.CommandOption
		want      []string
		ephemeral bool
	}{
		{"list", nil, []string{"📊 Task Queue (1 task)", `#1 "Build auth"`}, false},
		{"status", []discordfake.CommandOption{number(1)}, []string{`Task #1 "Build auth"`, "Goal: Build auth"}, false},
		{"status", []discordfake.CommandOption{number(99)}, []string{"There is no task #99 here."}, true},
		{"search", []discordfake.CommandOption{{Name: "query", Value: "auth"}}, []string{`#1 "Build auth"`}, false},
		{"answer", []discordfake.CommandOption{number(1), {Name: "text", Value: "use JWT"}}, []string{"Task #1 is not waiting for an answer."}, true},
		{"pause", []discordfake.CommandOption{number(1)}, []string{`⏸️ Task #1 "Build auth" paused.`}, false},
	}
	for i, tt := range tests {
		b.slash(alice, tt.sub, tt.opts...)
		r, m := b.response(i + 2)
		if r.After > discordfake.DefaultInteractionDeadline {
			t.Errorf("/task %s answered after %v", tt.sub, r.After)
		}
		if m.Ephemeral() != tt.ephemeral {
			t.Errorf("/task %s: ephemeral = %v, want %v", tt.sub, m.Ephemeral(), tt.ephemeral)
		}
		mustContain(t, "/task "+tt.sub, m.Content, tt.want...)
		pingsNobody(t, m)
	}
	if st := b.task(1).Status; st != domain.StatusPaused {
		t.Errorf("after /task pause the task is %s", st)
	}
}

func TestButtonsPauseForTheRequestorAndRefuseOthers(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	srv.SetMember(guildID, carol, discordgo.PermissionManageGuild)
	b := start(t, srv)
	srv.MessageCreate(channelID, guildID, alice, b.mention("create task Build auth"))
	created := b.messages(channelID, 1)[0]

	press := func(user, customID string, n int) discordfake.Message {
		t.Helper()
		srv.ButtonClick(discordfake.ButtonClick{MessageID: created.ID, CustomID: customID, User: discordfake.User{ID: user}})
		r, m := b.response(n)
		if r.Type != discordgo.InteractionResponseChannelMessageWithSource || !m.Ephemeral() {
			t.Errorf("press %d answered with type %d, ephemeral %v; want an ephemeral reply", n, r.Type, m.Ephemeral())
		}
		pingsNobody(t, m)
		return m
	}

	m := press(bob, "taskloom:pause:1", 1)
	mustContain(t, "bob's press", m.Content, "Only the person who created task #1, or an admin, can pause it.")
	if st := b.task(1).Status; st != domain.StatusQueued {
		t.Errorf("after a refused press the task is %s", st)
	}

	m = press(alice, "taskloom:pause:1", 2)
	mustContain(t, "alice's press", m.Content, `⏸️ Task #1 "Build auth" paused.`)
	if st := b.task(1).Status; st != domain.StatusPaused {
		t.Errorf("after alice's press the task is %s", st)
	}
	if got := m.CustomIDs(); !slices.Equal(got, []string{"taskloom:resume:1", "taskloom:cancel:1"}) {
		t.Errorf("buttons after pausing = %v, want Resume and Cancel", got)
	}

	// A member with Manage Server may control anyone's task.
	m = press(carol, "taskloom:resume:1", 3)
	mustContain(t, "carol's press", m.Content, `▶️ Task #1 "Build auth" resumed.`)
	if st := b.task(1).Status; st != domain.StatusQueued {
		t.Errorf("after carol's press the task is %s", st)
	}
	// The task message itself is left as it was.
	if now, _ := srv.Message(created.ID); now.Edits != 0 {
		t.Errorf("the task message was edited %d times", now.Edits)
	}

	m = press(bob, "taskloom:explode:1", 4)
	mustContain(t, "an unknown button", m.Content, "not one of mine")
}

func TestStatusOfAnUnknownTask(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	b := start(t, srv)
	srv.MessageCreate(channelID, guildID, alice, b.mention("status #99"))
	m := b.messages(channelID, 1)[0]
	if m.Content != "There is no task #99 here." {
		t.Errorf("reply = %q", m.Content)
	}
	if len(m.Components) != 0 {
		t.Errorf("buttons on a refusal: %v", m.CustomIDs())
	}
	pingsNobody(t, m)
}

func TestEveryoneInATaskNamePingsNobody(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	b := start(t, srv)
	srv.MessageCreate(channelID, guildID, alice, b.mention("create task @everyone hello <@"+bob+">"))
	created := b.messages(channelID, 1)[0]
	b.slash(alice, "create", discordfake.CommandOption{Name: "goal", Value: "@here ping <@&" + guildID + ">"})
	_, slashed := b.response(1)

	b.model.Decide("list_files", nil, 40, "continue")
	b.step()
	b.clk.Advance(5 * time.Second)
	if _, err := b.core.Notify.Flush(b.ctx); err != nil {
		t.Fatal(err)
	}
	ms := b.messages(channelID, 3)
	progress := ms[len(ms)-1]
	for _, m := range []discordfake.Message{created, slashed, progress} {
		pingsNobody(t, m)
		for _, raw := range []string{"@everyone", "@here", "<@" + bob + ">", "<@&"} {
			if strings.Contains(m.Content, raw) {
				t.Errorf("message %q shows %q unescaped", m.Content, raw)
			}
		}
	}
	mustContain(t, "reply", created.Content, "@\u200beveryone hello")
	mustContain(t, "progress", progress.Content, "@\u200beveryone hello")

	// On the wire: allowed_mentions {"parse": []} on every message sent.
	for _, c := range srv.CallsTo("POST", "/channels/"+channelID+"/messages") {
		var body struct {
			AllowedMentions *struct {
				Parse []string `json:"parse"`
			} `json:"allowed_mentions"`
		}
		if err := c.Decode(&body); err != nil || body.AllowedMentions == nil || body.AllowedMentions.Parse == nil || len(body.AllowedMentions.Parse) != 0 {
			t.Errorf("POST body %s: want allowed_mentions {\"parse\": []}", c.JSON)
		}
	}
}

func TestRateLimitedNotificationIsDeliveredLaterOnce(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	b := start(t, srv)
	srv.MessageCreate(channelID, guildID, alice, b.mention("create task Build auth"))
	b.messages(channelID, 1)

	path := "/channels/" + channelID + "/messages"
	srv.RateLimitNext("POST", path, 1, time.Millisecond, false)
	b.model.Decide("list_files", nil, 100, "done")
	b.step() // completed: sent at once, into the 429
	if _, err := b.core.Notify.FlushUrgent(b.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.WaitCalls(b.ctx, "POST", path, 2); err != nil {
		t.Fatal(err)
	}
	// The flush that met the 429 — this one or the service's own, woken by
	// the completion — gives the row back to be retried, measured from the
	// clock as it is then: wait for that before moving the clock.
	for {
		ns, err := b.store.ListNotifications(b.ctx, domain.NotificationPending, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(ns) == 1 && ns[0].Attempts == 1 {
			break
		}
		if b.ctx.Err() != nil {
			t.Fatalf("the rate-limited notification was not given back: %+v", ns)
		}
		time.Sleep(5 * time.Millisecond) // polling another goroutine's write, not timing it
	}
	if _, err := b.core.Notify.FlushUrgent(b.ctx); err != nil { // before Retry-After: nothing due
		t.Fatal(err)
	}
	if ms := srv.Messages(channelID); len(ms) != 1 {
		t.Fatalf("delivered before the retry time: %q", ms[len(ms)-1].Content)
	}
	// The outbox retries once Retry-After (at least a second) has passed.
	for i := 0; i < 20 && len(srv.Messages(channelID)) < 2; i++ {
		b.clk.Advance(time.Second)
		if _, err := b.core.Notify.FlushUrgent(b.ctx); err != nil {
			t.Fatal(err)
		}
	}
	done := b.messages(channelID, 2)[1]
	mustContain(t, "completion", done.Content, `✅ Task #1 "Build auth" completed!`)
	b.stop()
	var statuses []int
	for _, c := range srv.CallsTo("POST", path) {
		statuses = append(statuses, c.Status)
	}
	if !slices.Equal(statuses, []int{http.StatusOK, http.StatusTooManyRequests, http.StatusOK}) {
		t.Errorf("POST statuses = %v, want the reply, the 429, the retry", statuses)
	}
	if ms := srv.Messages(channelID); len(ms) != 2 {
		t.Errorf("%d messages, want the reply and one completion", len(ms))
	}
}

func TestSendReturnsRateLimitsAtOnce(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	b := start(t, srv)
	room := "discord:" + channelID
	path := "/channels/" + channelID + "/messages"

	srv.RateLimitNext("POST", path, 1, 1500*time.Millisecond, false)
	began := time.Now()
	_, err := b.ad.Send(b.ctx, room, plugin.Outgoing{Text: "hello"})
	var rl *plugin.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != 1500*time.Millisecond {
		t.Fatalf("Send into a 429 = %v, want a *plugin.RateLimitedError with RetryAfter 1.5s", err)
	}
	// The bucket is exhausted for 1.5 s: the next send fails at once
	// without a request, where discordgo would have slept.
	_, err = b.ad.Send(b.ctx, room, plugin.Outgoing{Text: "hello"})
	if !errors.As(err, &rl) || rl.RetryAfter <= 0 || rl.RetryAfter > 1500*time.Millisecond {
		t.Fatalf("Send into an exhausted bucket = %v, want a *plugin.RateLimitedError", err)
	}
	if d := time.Since(began); d > time.Second {
		t.Errorf("the sends took %v; nothing should wait", d)
	}
	if cs := srv.CallsTo("POST", path); len(cs) != 1 {
		t.Errorf("%d requests, want only the one answered 429", len(cs))
	}
	if _, err := b.ad.Send(b.ctx, "slack:C1", plugin.Outgoing{Text: "x"}); err == nil {
		t.Error("Send to a Slack room did not fail")
	}
}

// TestGlobalRateLimitIsMarkedGlobal: a 429 Discord marks global is the
// bot's across all channels: the error says so, and so does the error of
// a send to another channel while discordgo holds every request; a
// channel's own 429 is not global.
func TestGlobalRateLimitIsMarkedGlobal(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	other := "1100000000000000099"
	srv.AddChannel(other, guildID)
	b := start(t, srv)
	path := "/channels/" + channelID + "/messages"

	srv.RateLimitNext("POST", path, 1, time.Millisecond, false)
	_, err := b.ad.Send(b.ctx, "discord:"+channelID, plugin.Outgoing{Text: "hello"})
	var rl *plugin.RateLimitedError
	if !errors.As(err, &rl) || rl.Global {
		t.Fatalf("a channel's 429 = %v (global %v), want a rate limit not global", err, rl != nil && rl.Global)
	}
	srv.RateLimitNext("POST", path, 1, 1500*time.Millisecond, true)
	time.Sleep(5 * time.Millisecond) // the channel's 1 ms bucket reset
	_, err = b.ad.Send(b.ctx, "discord:"+channelID, plugin.Outgoing{Text: "hello"})
	if !errors.As(err, &rl) || !rl.Global {
		t.Fatalf("a global 429 = %v, want a global rate limit", err)
	}
	_, err = b.ad.Send(b.ctx, "discord:"+other, plugin.Outgoing{Text: "hello"})
	if !errors.As(err, &rl) || !rl.Global {
		t.Fatalf("a send elsewhere under the global limit = %v, want a global rate limit", err)
	}
}

// TestLimitsCountEachChannel: Discord's per-channel limit counts a
// thread's messages in the thread, a channel of its own.
func TestLimitsCountEachChannel(t *testing.T) {
	t.Parallel()
	b := start(t, newFake(t))
	lim := b.ad.Limits()
	for room, want := range map[string]string{"discord:1": "1", "discord:1:2": "2"} {
		if got := lim.Bucket(room); got != want {
			t.Errorf("Bucket(%s) = %s, want %s", room, got, want)
		}
	}
	if lim.Global.N > 50 || lim.Room.N > 5 || lim.Room.Span < 5*time.Second {
		t.Errorf("limits %+v exceed Discord's published 50/s and 5 per 5 s", lim)
	}
}

// roundTripFunc lets a test watch the adapter's requests.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestLongMessageIsSplitAndARetrySendsOnlyTheRest(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	b := start(t, srv)
	room := "discord:" + channelID
	path := "/channels/" + channelID + "/messages"
	srv.MessageCreate(channelID, guildID, alice, b.mention("create task Build auth"))
	b.messages(channelID, 1)

	// The second part of the message meets a 429.
	sess := b.ad.Session()
	next := sess.Client.Transport
	posts := 0
	sess.Client.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(r)
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, path) {
			if posts++; posts == 1 {
				srv.RateLimitNext("POST", path, 1, time.Millisecond, false)
			}
		}
		return resp, err
	})

	var lines []string
	for i := range 120 {
		lines = append(lines, strings.Repeat("x", 30)+" line "+string(rune('a'+i%26)))
	}
	text := strings.Join(lines, "\n")
	want := render.Split(text, render.DiscordLimit)
	if len(want) < 3 {
		t.Fatalf("the text makes %d parts; want at least 3", len(want))
	}
	sent, err := b.ad.Send(b.ctx, room, plugin.Outgoing{Text: text, Tasks: []int64{1}})
	var rl *plugin.RateLimitedError
	if !errors.As(err, &rl) || len(sent.IDs) != 1 {
		t.Fatalf("Send = %v, %v; want the first part sent and a rate limit", sent, err)
	}
	for i := 0; i < 1000; i++ { // until discordgo's bucket (1 ms) has reset
		if sent, err = b.ad.Send(b.ctx, room, plugin.Outgoing{Text: text, Tasks: []int64{1}}); !errors.As(err, &rl) {
			break
		}
	}
	if err != nil || len(sent.IDs) != len(want) {
		t.Fatalf("retry = %v, %v; want all %d parts", sent.IDs, err, len(want))
	}
	ms := srv.Messages(channelID)[1:]
	if len(ms) != len(want) {
		t.Fatalf("%d messages for %d parts", len(ms), len(want))
	}
	for i, m := range ms {
		if m.Content != want[i] || utf8.RuneCountInString(m.Content) > render.DiscordLimit {
			t.Errorf("part %d = %d characters, differs from the split", i, utf8.RuneCountInString(m.Content))
		}
		if hasButtons := len(m.Components) > 0; hasButtons != (i == len(ms)-1) {
			t.Errorf("part %d has buttons: %v; want them on the last part only", i, hasButtons)
		}
		pingsNobody(t, m)
	}
}

func TestGatewayResumeActsOnEachMessageOnce(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	b := start(t, srv)
	srv.MessageCreate(channelID, guildID, alice, b.mention("create task First"))
	b.messages(channelID, 1)

	// The connection's first heartbeat (discordfake.Server.WaitHeartbeats).
	if err := srv.WaitHeartbeats(b.ctx, 1); err != nil {
		t.Fatal(err)
	}
	srv.Disconnect(4000) // a Discord node restarts
	second := b.mention("create task Second")
	id := srv.MessageCreate(channelID, guildID, alice, second) // while the bot is away
	if err := srv.WaitResumed(b.ctx, 1); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "reply after the resume", b.messages(channelID, 2)[1].Content, `Created task #2 "Second"`)
	if rs := srv.Resumes(); len(rs) != 1 || rs[0].Replayed < 1 {
		t.Errorf("Resumes() = %+v, want one RESUME replaying the missed message", rs)
	}
	if n := len(srv.Identifies()); n != 1 {
		t.Errorf("%d IDENTIFYs, want the session resumed", n)
	}

	// The same message delivered again, as a replay would: acted on once.
	srv.Dispatch("MESSAGE_CREATE", wireMessage(id, channelID, guildID, alice, second, srv.BotUser().ID))
	srv.MessageCreate(channelID, guildID, alice, b.mention("list tasks"))
	mustContain(t, "list", b.messages(channelID, 3)[2].Content, "Task Queue (2 tasks)")

	// So is an interaction.
	in := b.slash(alice, "create", discordfake.CommandOption{Name: "goal", Value: "Third"})
	_, m := b.response(1)
	mustContain(t, "/task create", m.Content, "Created task #3")
	srv.Dispatch("INTERACTION_CREATE", wireInteraction(in, srv.ApplicationID(), channelID, guildID, alice, "create", "goal", "Third"))
	// Events are handled in goroutines of their own: what was dispatched
	// before the next answer is being handled by the time it comes, and
	// stop waits for it.
	b.slash(alice, "list")
	_, m = b.response(2)
	mustContain(t, "/task list", m.Content, "Task Queue (3 tasks)")
	b.stop()
	if n := b.countTasks(); n != 3 {
		t.Errorf("%d tasks, want 3", n)
	}
	if ms := srv.Messages(channelID); len(ms) != 5 {
		t.Errorf("%d bot messages, want 5: a replay was answered", len(ms))
	}
	if cs := srv.CallsTo("POST", "/interactions/"+in.ID+"/"); len(cs) != 1 {
		t.Errorf("%d responses to the replayed interaction, want 1", len(cs))
	}
}

func TestCommandRegistrationIsIdempotent(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	app := srv.ApplicationID()
	// An older definition, as a previous version registered it.
	old, err := discordgo.New("Bot " + srv.Token())
	if err != nil {
		t.Fatal(err)
	}
	srv.Point(old)
	if _, err := old.ApplicationCommandBulkOverwrite(app, "", []*discordgo.ApplicationCommand{{Name: "task", Description: "Old tasks"}}); err != nil {
		t.Fatal(err)
	}
	oldID := srv.Commands("")[0].ID

	puts := func() int { return len(srv.CallsTo("PUT", "/applications/"+app+"/commands")) }
	for i := range 3 { // a restart, then another replica
		b := start(t, srv)
		if got := b.ad.ApplicationID(); got != app {
			t.Errorf("start %d: application %q, want %q", i, got, app)
		}
		b.stop()
		if n := puts(); n != 2 {
			t.Errorf("after start %d: %d bulk overwrites, want the old one and one more", i, n)
		}
		cmds := srv.Commands("")
		if len(cmds) != 1 || cmds[0].ID != oldID || cmds[0].Name != "task" || len(cmds[0].Options) != 10 {
			t.Errorf("after start %d: commands %+v, want one /task with 10 subcommands and id %s", i, cmds, oldID)
		}
	}
	if n := len(srv.CallsTo("GET", "/applications/"+app+"/commands")); n != 3 {
		t.Errorf("%d lists of the commands, want one per start", n)
	}

	// A wrong DISCORD_APPLICATION_ID is a start-up error naming it.
	b := newUnstarted(t, srv, func(o *discord.Options) { o.ApplicationID = "42" })
	if err := b.core.Runtime.Start(b.ctx); err == nil || !strings.Contains(err.Error(), "DISCORD_APPLICATION_ID=42") {
		t.Errorf("start with the wrong application = %v", err)
	}
}

func TestDMTaskIsPrivate(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	b := start(t, srv)
	srv.MessageCreate(aliceDM, "", alice, "create task Secret plan")
	mustContain(t, "DM reply", b.messages(aliceDM, 1)[0].Content, `Created task #1 "Secret plan"`)
	if ws := b.task(1).WorkspaceID; ws != "dm:discord:"+alice {
		t.Errorf("DM task workspace = %q", ws)
	}

	b.slash(alice, "status", number(1))
	_, m := b.response(1)
	if !m.Ephemeral() || m.Content != "There is no task #1 here." {
		t.Errorf("status of a DM task from the guild = %q (ephemeral %v)", m.Content, m.Ephemeral())
	}
	b.slash(alice, "list")
	if _, m := b.response(2); strings.Contains(m.Content, "Secret") {
		t.Errorf("the guild's list shows the DM task: %q", m.Content)
	}
	srv.MessageCreate(bobDM, "", bob, "status #1")
	if m := b.messages(bobDM, 1)[0]; m.Content != "There is no task #1 here." {
		t.Errorf("bob's DM status = %q", m.Content)
	}
	srv.MessageCreate(aliceDM, "", alice, "status #1")
	mustContain(t, "alice's DM status", b.messages(aliceDM, 2)[1].Content, "Goal: Secret plan")

	// Its notifications go to the DM.
	b.model.Decide("list_files", nil, 100, "done")
	b.step()
	if _, err := b.core.Notify.FlushUrgent(b.ctx); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "DM completion", b.messages(aliceDM, 3)[2].Content, `✅ Task #1 "Secret plan" completed!`)
}

func TestSlowRepliesAreDeferred(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	b := start(t, srv)
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	released := false
	t.Cleanup(func() { // a failed test leaves no handler blocked
		if !released {
			close(release)
		}
	})
	b.core.Runtime.Subscribe(plugin.MessageReceived, func(_ context.Context, ev plugin.Event) {
		if ev.Message.Command && (strings.HasPrefix(ev.Message.Text, "list") || strings.Contains(ev.Message.Text, "#99")) {
			entered <- struct{}{}
			<-release
		}
	})
	wait := func() {
		t.Helper()
		select {
		case <-entered:
		case <-b.ctx.Done():
			t.Fatal("the interaction never reached the runtime")
		}
	}

	// A public reply: deferred, then @original is edited.
	in := b.slash(alice, "list")
	wait()
	b.clk.Advance(discord.DefaultDeferAfter)
	r := b.responses(1)[0]
	if r.Type != discordgo.InteractionResponseDeferredChannelMessageWithSource {
		t.Fatalf("response type %d, want a deferral (5)", r.Type)
	}
	release <- struct{}{}
	edit := "/webhooks/" + srv.ApplicationID() + "/" + in.Token + "/messages/@original"
	if _, err := srv.WaitCalls(b.ctx, "PATCH", edit, 1); err != nil {
		t.Fatal(err)
	}
	m, _ := srv.Message(r.MessageID)
	mustContain(t, "deferred list", m.Content, "Task Queue")
	if m.Ephemeral() || m.Flags&discordgo.MessageFlagsLoading != 0 {
		t.Errorf("completed deferral: flags %b", m.Flags)
	}
	pingsNobody(t, m)

	// An ephemeral reply: the public "thinking…" is removed and the
	// refusal follows up, ephemeral.
	in = b.slash(alice, "status", number(99))
	wait()
	b.clk.Advance(discord.DefaultDeferAfter)
	r = b.responses(2)[1]
	released = true
	close(release)
	var follow discordfake.Message
	for _, c := range []string{"DELETE", "POST"} {
		if _, err := srv.WaitCalls(b.ctx, c, "/webhooks/"+srv.ApplicationID()+"/"+in.Token, 1); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range srv.Messages(channelID) {
		if m.InteractionID == in.ID && m.ID != r.MessageID {
			follow = m
		}
	}
	if d, _ := srv.Message(r.MessageID); !d.Deleted {
		t.Errorf("the deferred public response was left: %+v", d)
	}
	if !follow.Ephemeral() || follow.Content != "There is no task #99 here." {
		t.Errorf("follow-up = %q (ephemeral %v)", follow.Content, follow.Ephemeral())
	}
}

func TestShardsAndOptions(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	b := start(t, srv, func(o *discord.Options) { o.ShardID, o.ShardCount = 1, 2 })
	if ids := srv.Identifies(); len(ids) != 1 || ids[0].Shard != [2]int{1, 2} {
		t.Errorf("IDENTIFY shard = %+v, want [1, 2]", ids)
	}
	b.stop()

	rt := plugin.New(plugin.Options{Logger: testLogger()})
	tests := []struct {
		name string
		opts discord.Options
		want string
	}{
		{"no token", discord.Options{Runtime: rt}, "DISCORD_BOT_TOKEN"},
		{"no runtime", discord.Options{Token: "x"}, "runtime"},
		{"bad URL", discord.Options{Token: "x", Runtime: rt, APIURL: "discord.com"}, "DISCORD_API_URL"},
		{"shard out of range", discord.Options{Token: "x", Runtime: rt, ShardID: 2, ShardCount: 2}, "DISCORD_SHARD_ID"},
		{"shard without count", discord.Options{Token: "x", Runtime: rt, ShardID: 1}, "DISCORD_SHARD_COUNT"},
	}
	for _, tt := range tests {
		if _, err := discord.New(tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: New = %v, want an error naming %s", tt.name, err, tt.want)
		}
	}
	if _, err := discord.New(discord.Options{Token: "Bot x", Runtime: rt}); err != nil {
		t.Errorf("New with a \"Bot \" token: %v", err)
	}

	// A token Discord refuses is a start-up error saying what to do.
	bad := newUnstarted(t, newFake(t), func(o *discord.Options) { o.Token = "wrong" })
	if err := bad.core.Runtime.Start(bad.ctx); err == nil || !strings.Contains(err.Error(), "DISCORD_BOT_TOKEN") {
		t.Errorf("start with a wrong token = %v", err)
	}
}

// A reply Discord rate-limits is not waited out in the process: it is in
// the outbox, durable, before any wait — a replica killed meanwhile leaves
// it to another, which sends it under its nonce — and the outbox sends it
// once the limit allows, once.
func TestRateLimitedReplyIsQueuedBeforeItsWait(t *testing.T) {
	t.Parallel()
	srv := newFake(t)
	b := start(t, srv)
	path := "/channels/" + channelID + "/messages"
	// Retry-After 1 ms: the adapter's bucket is on the wall clock, the
	// in-process wait it replaces was on the fake one.
	srv.RateLimitNext("POST", path, 1, time.Millisecond, false)
	srv.MessageCreate(channelID, guildID, alice, b.mention("create task Build auth"))
	if _, err := srv.WaitCalls(b.ctx, "POST", path, 1); err != nil {
		t.Fatal(err)
	}
	// Without the clock moving, the reply is in the outbox.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ns, err := b.store.ListNotifications(b.ctx, domain.NotificationPending, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(ns) == 1 && ns[0].Category == domain.NotifyReply && strings.Contains(string(ns[0].Payload), "Created task #1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("outbox = %+v; want the reply, queued before any wait", ns)
		}
		time.Sleep(5 * time.Millisecond) // polling another goroutine's write, not timing it
	}
	if ms := srv.Messages(channelID); len(ms) != 0 {
		t.Fatalf("delivered despite the 429: %q", ms[0].Content)
	}
	for i := 0; i < 20 && len(srv.Messages(channelID)) < 1; i++ {
		b.clk.Advance(time.Second)
		if _, err := b.core.Notify.FlushUrgent(b.ctx); err != nil {
			t.Fatal(err)
		}
	}
	b.stop()
	ms := srv.Messages(channelID)
	if len(ms) != 1 {
		t.Fatalf("%d messages, want the reply once", len(ms))
	}
	mustContain(t, "reply", ms[0].Content, "Created task #1")
}
