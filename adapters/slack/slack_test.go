package slack_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/slack"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/slackfake"
	"github.com/taskloom/taskloom/plugin"
)

// mention has alice mention the bot in channel C1 and waits for the
// answer in the mention's thread.
func (e *env) mention(text string) (slackfake.Event, slackfake.Message) {
	e.t.Helper()
	ev := e.fake.AppMention("C1", alice, text)
	e.deliver(ev)
	got := e.waitMessages(1, inThread("C1", ev.TS))
	return ev, got[0]
}

func TestMentionCreatesATaskAnsweredInItsThread(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, e *env) {
		ev, reply := e.mention("create task Build auth")
		if reply.Kind != slackfake.KindPost || !strings.Contains(reply.Text, "Created task #1") {
			t.Fatalf("reply = %+v, want a post saying task #1 was created", reply)
		}
		if reply.BlockText() != reply.Text {
			t.Errorf("blocks say %q, the fallback text %q: want the same", reply.BlockText(), reply.Text)
		}
		if got := reply.Buttons(); len(got) != 3 || got[0].ActionID != slack.ActionPause || got[0].Value != "1" ||
			got[1].ActionID != slack.ActionResume || got[2].ActionID != slack.ActionCancel || got[2].Style != "danger" || !got[2].Confirm {
			t.Errorf("buttons = %+v, want pause, resume, cancel (danger, confirmed) for task 1", got)
		}
		task := e.task(1)
		wantRoom := "slack:C1:" + ev.TS
		if task.Goal != "Build auth" || task.RoomID != wantRoom || task.WorkspaceID != e.fake.TeamID() ||
			task.RequestorID != alice || task.Platform != "slack" {
			t.Errorf("task = goal %q room %q workspace %q requestor %q platform %q; want Build auth, %s, %s, %s, slack",
				task.Goal, task.RoomID, task.WorkspaceID, task.RequestorID, task.Platform, wantRoom, e.fake.TeamID(), alice)
		}
		// A mention in the task's thread is answered there too.
		in := e.fake.AppMention("C1", alice, "status #1").InThread(ev.TS)
		e.deliver(in)
		e.waitMessages(1, both(inThread("C1", ev.TS), saying("Task #1")))
		if calls := e.fake.CallsTo("users.info"); len(calls) != 1 {
			t.Errorf("users.info called %d times for one person; want the answer cached", len(calls))
		}
	})
}

func TestTaskSlashCommand(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, e *env) {
		for _, tc := range []struct {
			text, want, responseType string
			buttonsFor               string
		}{
			{"create Build auth", "Created task #1", "in_channel", "1"},
			{"create Fix the login bug", "Created task #2", "in_channel", "2"},
			{"list", "📊 Task Queue (2 tasks)", "in_channel", ""},
			{"status 1", "Task #1", "in_channel", "1"},
			{"status 9", "There is no task #9 here.", "ephemeral", ""},
			{"", "/task", "ephemeral", ""}, // help
			{"pause", "Which task?", "ephemeral", ""},
		} {
			d := e.deliver(e.fake.SlashCommand("C7", alice, tc.text))
			got, ok := e.immediate(d)
			if !ok {
				t.Fatalf("/task %s: acknowledged without the answer", tc.text)
			}
			if !strings.Contains(got.Text, tc.want) || got.ResponseType != tc.responseType {
				t.Errorf("/task %s: %s answer %q; want %s containing %q", tc.text, got.ResponseType, got.Text, tc.responseType, tc.want)
			}
			var values []string
			for _, b := range got.Buttons() {
				values = append(values, b.Value)
			}
			if want := strings.Repeat(tc.buttonsFor, 3); strings.Join(values, "") != want {
				t.Errorf("/task %s: buttons for tasks %v, want %q", tc.text, values, tc.buttonsFor)
			}
		}
		e.settle()
		if n := e.countTasks(); n != 2 {
			t.Errorf("%d tasks, want 2", n)
		}
		if task := e.task(1); task.RoomID != "slack:C7" || task.Goal != "Build auth" {
			t.Errorf("task #1 in %q with goal %q; want slack:C7, Build auth", task.RoomID, task.Goal)
		}
		if n := len(e.fake.Messages()); n != 0 {
			t.Errorf("%d messages posted; every answer should have been in its acknowledgement:\n%s", n, dump(e.fake.Messages()))
		}
	})
}

func TestButtonsControlTasksForTheirRequestorAndAdmins(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, e *env) {
		ev, reply := e.mention("create task Build auth")
		thread := inThread("C1", ev.TS)
		press := func(user, action string) {
			t.Helper()
			in, err := e.fake.ButtonPress(user, reply, action, "1")
			if err != nil {
				t.Fatal(err)
			}
			if d := e.deliver(in); len(d.body) > 0 {
				t.Errorf("button press acknowledged with %q; want an empty ack", d.body)
			}
			e.settle()
		}

		// Bob may not pause alice's task: told so, privately.
		press(bob, slack.ActionPause)
		refusal := e.waitMessages(1, both(kind(slackfake.KindEphemeral), saying("Only the person who created task #1")))
		if refusal[0].User != bob || refusal[0].Channel != "C1" || refusal[0].ThreadTS != ev.TS {
			t.Errorf("refusal shown to %s in %s/%s; want bob, in the task's thread", refusal[0].User, refusal[0].Channel, refusal[0].ThreadTS)
		}
		if got := e.task(1).Status; got != domain.StatusQueued {
			t.Fatalf("after bob's press the task is %s, want queued", got)
		}

		// Alice may.
		press(alice, slack.ActionPause)
		paused := e.waitMessages(1, both(thread, saying("paused")))
		if paused[0].Kind != slackfake.KindPost {
			t.Errorf("the pause is announced as %s; want a post everyone in the thread sees", paused[0].Kind)
		}
		if got := e.task(1).Status; got != domain.StatusPaused {
			t.Fatalf("after alice's press the task is %s, want paused", got)
		}

		// A workspace admin may too.
		press(carol, slack.ActionResume)
		e.waitMessages(1, both(thread, saying("resumed")))
		if got := e.task(1).Status; got != domain.StatusQueued {
			t.Fatalf("after carol's press the task is %s, want queued", got)
		}
		press(dave, slack.ActionCancel)
		e.waitMessages(1, both(thread, saying("canceled")))
		if got := e.task(1).Status; got != domain.StatusCanceled {
			t.Fatalf("after the owner's press the task is %s, want canceled", got)
		}
	})
}

func TestNotificationsArriveBatchedInTheThread(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, e *env) {
		ev, _ := e.mention("create task Build auth")
		thread := inThread("C1", ev.TS)
		e.model.Decide("list_files", nil, 20, "continue").Decide("list_files", map[string]string{"path": "."}, 40, "continue")
		e.step()
		e.step()

		// Progress is not urgent: nothing goes out before the interval.
		if n, err := e.core.Notify.FlushUrgent(e.ctx); err != nil || n != 0 {
			t.Fatalf("urgent flush sent %d rooms (err %v); want none", n, err)
		}
		if got := e.fake.Messages(); len(got) != 1 {
			t.Fatalf("before the flush interval: %d messages, want only the reply:\n%s", len(got), dump(got))
		}
		e.clk.Advance(5 * time.Second)
		if _, err := e.core.Notify.Flush(e.ctx); err != nil {
			t.Fatal(err)
		}
		progress := e.waitMessages(1, both(thread, saying("Progress: 0% → 40%")))
		if len(progress) != 1 {
			t.Fatalf("%d progress messages, want one for both iterations", len(progress))
		}
		p := progress[0]
		if p.Kind != slackfake.KindPost || p.BlockText() != p.Text || len(p.Buttons()) != 3 || p.Buttons()[0].Value != "1" {
			t.Errorf("progress message = %+v; want a post whose blocks repeat the text, with task 1's buttons", p)
		}

		// The completion goes at once.
		e.model.Decide("list_files", nil, 100, "done")
		e.step()
		if _, err := e.core.Notify.FlushUrgent(e.ctx); err != nil {
			t.Fatal(err)
		}
		done := e.waitMessages(1, both(thread, saying("completed!")))
		if !strings.Contains(done[0].Text, `Task #1 "Build auth" completed!`) {
			t.Errorf("completion = %q", done[0].Text)
		}
		if n := len(e.fake.Messages()); n != 3 {
			t.Errorf("%d messages, want 3 (reply, progress, completion):\n%s", n, dump(e.fake.Messages()))
		}
		if b := done[0].Buttons(); len(b) != 1 || b[0].ActionID != slack.ActionRetry || b[0].Value != "1" {
			t.Fatalf("completion buttons = %+v; want only Retry #1", b)
		}

		// Its Retry button is the requestor's: bob's press is refused,
		// since a retry carries the task's files; alice's continues the
		// task as a new one.
		in, err := e.fake.ButtonPress(bob, done[0], slack.ActionRetry, "1")
		if err != nil {
			t.Fatal(err)
		}
		e.deliver(in)
		e.settle()
		e.waitMessages(1, saying("Only the person who created task #1, or an admin, can retry it."))
		if in, err = e.fake.ButtonPress(alice, done[0], slack.ActionRetry, "1"); err != nil {
			t.Fatal(err)
		}
		e.deliver(in)
		e.settle()
		e.waitMessages(1, both(thread, saying(`Created task #2 "Build auth", continuing #1`)))
		if got := e.task(2); got.ContinuesNumber != 1 || got.RequestorID != alice {
			t.Errorf("the retry = %+v; want alice's continuation of #1", got)
		}
	})
}

func TestRedeliveriesAreActedOnOnce(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, e *env) {
		ev := e.fake.AppMention("C1", alice, "create task Build auth")
		first := e.deliver(ev)
		e.waitMessages(1, inThread("C1", ev.TS))
		e.redeliver(ev, first)
		e.redeliver(ev, first)
		e.settle()
		if n := e.countTasks(); n != 1 {
			t.Errorf("%d tasks after two redeliveries, want 1", n)
		}
		if got := e.fake.Messages(); len(got) != 1 {
			t.Errorf("%d messages, want one answer:\n%s", len(got), dump(got))
		}
		// A direct message redelivered, too.
		dm := e.fake.DirectMessage(bob, "create task Write docs")
		d := e.deliver(dm)
		e.redeliver(dm, d)
		e.settle()
		if n := e.countTasks(); n != 2 {
			t.Errorf("%d tasks, want 2", n)
		}
	})
}

func TestRateLimitedNotificationIsDelayedNotLost(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, e *env) {
		ev, _ := e.mention("create task Build auth")
		e.model.Decide("list_files", nil, 30, "continue")
		e.step()
		e.fake.RateLimitNext("chat.postMessage", 30*time.Second)
		e.clk.Advance(5 * time.Second)
		if _, err := e.core.Notify.Flush(e.ctx); err != nil {
			t.Fatal(err)
		}
		// The service's own schedule may be the one that flushed (the
		// advance woke it too): wait for its send to reach the fake.
		calls := e.waitCalls("chat.postMessage", 2)
		if len(calls) != 2 || calls[1].Status != 429 {
			t.Fatalf("chat.postMessage calls: %+v; want the reply, then a 429", calls)
		}
		progress := both(inThread("C1", ev.TS), saying("Progress: 0% → 30%"))
		e.clk.Advance(10 * time.Second) // still within Retry-After
		if _, err := e.core.Notify.Flush(e.ctx); err != nil {
			t.Fatal(err)
		}
		if got := e.fake.Messages(); len(got) != 1 {
			t.Fatalf("sent before Retry-After:\n%s", dump(got))
		}
		e.clk.Advance(21 * time.Second)
		if _, err := e.core.Notify.Flush(e.ctx); err != nil {
			t.Fatal(err)
		}
		e.waitMessages(1, progress)
		if n := len(e.fake.Messages()); n != 2 {
			t.Errorf("%d messages, want the reply and the progress once:\n%s", n, dump(e.fake.Messages()))
		}
	})
}

func TestUserTextDoesNotPing(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, e *env) {
		// How Slack writes "@channel", "@here", a user mention, "&" and a
		// link in a message.
		ev, reply := e.mention("create task tell <!channel> and <!here> about <@U0BOB> &amp; *this* <https://example.com/a?b=1&amp;c=2|example>")
		if !strings.Contains(reply.Text, "Created task #1") {
			t.Fatalf("reply = %q", reply.Text)
		}
		goal := e.task(1).Goal
		if want := "tell @channel and @here about <@U0BOB> & *this* https://example.com/a?b=1&c=2"; goal != want {
			t.Errorf("goal = %q, want %q: what the person typed", goal, want)
		}
		e.model.Decide("list_files", nil, 50, "continue")
		e.step()
		e.clk.Advance(5 * time.Second)
		if _, err := e.core.Notify.Flush(e.ctx); err != nil {
			t.Fatal(err)
		}
		e.waitMessages(1, both(inThread("C1", ev.TS), saying("Progress")))
		e.settle()
		for _, m := range e.fake.Messages() {
			if p := m.Pings(); len(p) > 0 {
				t.Errorf("message %q pings %v", m.Text, p)
			}
		}
		for _, text := range []string{"status 1", "list"} {
			d := e.deliver(e.fake.SlashCommand("C1", alice, text))
			got, _ := e.immediate(d)
			if p := got.Pings(); len(p) > 0 || strings.Contains(got.Text, "<!channel>") {
				t.Errorf("/task %s answer %q pings %v", text, got.Text, p)
			}
		}
	})
}

func TestDirectMessages(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, e *env) {
		dm := e.fake.DirectMessage(bob, "create task Write docs")
		e.deliver(dm)
		reply := e.waitMessages(1, inThread(dm.Channel, ""))
		if !strings.Contains(reply[0].Text, "Created task #1") {
			t.Fatalf("reply = %q", reply[0].Text)
		}
		task := e.task(1)
		if task.RoomID != "slack:"+dm.Channel || task.WorkspaceID != "dm:slack:"+bob {
			t.Errorf("DM task in room %q, workspace %q; want slack:%s, dm:slack:%s", task.RoomID, task.WorkspaceID, dm.Channel, bob)
		}
		// The task is bob's alone: the channel's queue does not show it.
		d := e.deliver(e.fake.SlashCommand("C1", bob, "status 1"))
		if got, _ := e.immediate(d); !strings.Contains(got.Text, "There is no task #1 here.") {
			t.Errorf("status of a DM task from a channel: %q", got.Text)
		}
	})
}

func TestEventsNotForTheBotAreIgnored(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, e *env) {
		bot := e.fake.DirectMessage(bob, "create task from a bot")
		bot.BotID, bot.SubType = "B0OTHER", "bot_message"
		edit := e.fake.DirectMessage(bob, "create task edited")
		edit.SubType = "message_changed"
		own := e.fake.DirectMessage(bob, "create task mine")
		own.User = e.fake.BotUserID()
		channel := e.fake.DirectMessage(bob, "create task chatter")
		channel.Channel, channel.ChannelType = "C9", "channel"
		editedMention := e.fake.AppMention("C1", alice, "create task again")
		editedMention.Edited = true
		for _, ev := range []slackfake.Event{bot, edit, own, channel, editedMention} {
			e.deliver(ev)
		}
		e.settle()
		if n := e.countTasks(); n != 0 {
			t.Errorf("%d tasks, want none", n)
		}
		if got := e.fake.CallsTo("chat.postMessage"); len(got) != 0 {
			t.Errorf("answered %d times, want never", len(got))
		}
	})
}

func TestSlowCommandIsAnsweredByResponseURL(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, e *env) {
		called, release := make(chan struct{}), make(chan struct{})
		e.model.Then(func(ctx context.Context, _ plugin.ModelRequest) (plugin.ModelResponse, error) {
			close(called)
			select {
			case <-release:
			case <-ctx.Done():
				return plugin.ModelResponse{}, ctx.Err()
			}
			return plugin.ModelResponse{Text: `{"action":"list_tasks","params":{},"reply":""}`}, nil
		})
		waiters := e.clk.Waiters()
		ack := e.deliverAsync(e.fake.SlashCommand("C1", alice, "how busy are you?"))
		<-called
		ctx, cancel := context.WithTimeout(e.ctx, wait)
		defer cancel()
		if err := e.clk.BlockUntil(ctx, waiters+1); err != nil { // the ack window's timer
			t.Fatal(err)
		}
		select {
		case d := <-ack:
			t.Fatalf("acknowledged before the ack window ended: %q", d.body)
		default:
		}
		e.clk.Advance(slack.AckWindow)
		d := <-ack
		if m, ok := e.immediate(d); ok || (e.mode == httpMode && d.status != 200) {
			t.Fatalf("late answer acknowledged with %+v (status %d); want an empty 200", m, d.status)
		}
		close(release)
		got := e.waitMessages(1, kind(slackfake.KindResponse))
		if !strings.Contains(got[0].Text, "Task Queue") || got[0].ResponseType != "in_channel" || got[0].Channel != "C1" {
			t.Errorf("response = %+v; want the queue, in_channel, in C1", got[0])
		}
	})
}

func TestSendSplitsLongMessages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpMode)
	line := strings.Repeat("word ", 19) + "end" // 98 characters
	var b strings.Builder
	for i := 0; b.Len() < 45000; i++ {
		b.WriteString(line + "\n")
	}
	text := strings.TrimSuffix(b.String(), "\n")
	sent, err := e.slack.Send(e.ctx, "slack:C5:1700000000.000001", plugin.Outgoing{Text: text, Tasks: []int64{4, 5}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := e.fake.Messages()
	if len(msgs) != 2 || len(sent.IDs) != 2 {
		t.Fatalf("%d messages, %d IDs; want 2 and 2", len(msgs), len(sent.IDs))
	}
	var joined []string
	for i, m := range msgs {
		if m.Channel != "C5" || m.ThreadTS != "1700000000.000001" || m.TS != sent.IDs[i] {
			t.Errorf("part %d in %s/%s ts %s; want C5, the thread, ID %s", i, m.Channel, m.ThreadTS, m.TS, sent.IDs[i])
		}
		if m.BlockText() != m.Text {
			t.Errorf("part %d: blocks do not carry the text", i)
		}
		for _, s := range m.SectionTexts() {
			if n := len([]rune(s)); n > 3000 {
				t.Errorf("part %d: a section of %d characters", i, n)
			}
		}
		joined = append(joined, m.Text)
	}
	if strings.Join(joined, "\n") != text {
		t.Error("the parts do not add up to the text")
	}
	if n := len(msgs[0].Buttons()); n != 0 {
		t.Errorf("first part has %d buttons; want them on the last only", n)
	}
	if got := msgs[1].Buttons(); len(got) != 6 || got[0].Value != "4" || got[3].Value != "5" {
		t.Errorf("last part's buttons = %+v; want a row for #4 and one for #5", got)
	}

	for _, bad := range []string{"discord:1", "slack:", "slack:C1:1:2"} {
		if _, err := e.slack.Send(e.ctx, bad, plugin.Outgoing{Text: "x"}); err == nil {
			t.Errorf("Send to %q: no error", bad)
		}
	}
	e.fake.RateLimitNext("chat.postMessage", 7*time.Second)
	_, err = e.slack.Send(e.ctx, "slack:C5", plugin.Outgoing{Text: "hello"})
	var rl *plugin.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != 7*time.Second {
		t.Errorf("Send when rate limited: %v; want a *plugin.RateLimitedError after 7s", err)
	}
}

func TestHTTPSignatureIsRequired(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpMode)
	now := e.clk.Now()
	for _, tc := range []struct {
		name string
		opts []slackfake.RequestOption
	}{
		{"wrong secret", []slackfake.RequestOption{slackfake.SignedWith("not-the-secret")}},
		{"tampered", []slackfake.RequestOption{slackfake.Signature("v0=" + strings.Repeat("ab", 32))}},
		{"not hex", []slackfake.RequestOption{slackfake.Signature("v0=zz")}},
		{"no version", []slackfake.RequestOption{slackfake.Signature(strings.Repeat("ab", 32))}},
		{"unsigned", []slackfake.RequestOption{slackfake.Unsigned()}},
		{"stale", []slackfake.RequestOption{slackfake.SignedAt(now.Add(-6 * time.Minute))}},
		{"from the future", []slackfake.RequestOption{slackfake.SignedAt(now.Add(6 * time.Minute))}},
	} {
		for _, p := range []slackfake.Payload{
			e.fake.AppMention("C1", alice, "create task Build auth"),
			e.fake.SlashCommand("C1", alice, "create Build auth"),
			slackfake.URLVerification{Challenge: "abc"},
		} {
			d := <-e.deliverAsync(p, tc.opts...)
			if d.status != 401 {
				t.Errorf("%s %T: HTTP %d, want 401", tc.name, p, d.status)
			}
		}
	}
	e.settle()
	if n := e.countTasks(); n != 0 {
		t.Errorf("%d tasks created by refused requests", n)
	}
	if calls := e.fake.Calls(); len(calls) != 1 || calls[0].Method != "auth.test" {
		t.Errorf("Slack called after refused requests: %+v", calls)
	}
	if mem, err := e.core.Runtime.Store().RecentMemories(e.ctx, "slack:C1", 10); err != nil || len(mem) != 0 {
		t.Errorf("memories after refused requests: %v %v", mem, err)
	}

	// Within the window, either side, it is accepted.
	d := e.deliver(e.fake.SlashCommand("C1", alice, "list"), slackfake.SignedAt(now.Add(-4*time.Minute)))
	if got, ok := e.immediate(d); !ok || !strings.Contains(got.Text, "Task Queue") {
		t.Errorf("signed 4 minutes ago: %q", d.body)
	}
}

func TestHTTPURLVerificationAndLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpMode)
	d := e.deliver(slackfake.URLVerification{Challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"})
	var body struct{ Challenge string }
	if err := json.Unmarshal(d.body, &body); err != nil || body.Challenge != "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" {
		t.Errorf("challenge answer %q (%v)", d.body, err)
	}
	big := e.fake.AppMention("C1", alice, strings.Repeat("x", slack.MaxBody))
	if d := <-e.deliverAsync(big); d.status != 413 {
		t.Errorf("an oversized body: HTTP %d, want 413", d.status)
	}
	unknown := e.fake.AppMention("C1", alice, "hi")
	unknown.Type = "reaction_added_but_not_really"
	if d := <-e.deliverAsync(unknown); d.status != 200 {
		t.Errorf("an event of an unknown type: HTTP %d, want 200 (or Slack retries it)", d.status)
	}
	e.settle()
	if n := e.countTasks(); n != 0 {
		t.Errorf("%d tasks", n)
	}
}

func TestSocketModeReconnects(t *testing.T) {
	t.Parallel()
	e := newEnv(t, socketMode)
	ctx, cancel := context.WithTimeout(e.ctx, wait)
	defer cancel()
	if err := e.fake.Disconnect(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.fake.WaitConnections(ctx, 2); err != nil {
		t.Fatal(err)
	}
	_, reply := e.mention("create task after the reconnect")
	if !strings.Contains(reply.Text, "Created task #1") {
		t.Errorf("reply = %q", reply.Text)
	}
	if n := len(e.fake.CallsTo("apps.connections.open")); n != 2 {
		t.Errorf("apps.connections.open called %d times, want 2", n)
	}
}

func TestNewRefusesIncompleteOptions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, httpMode)
	rt := e.core.Runtime
	for _, tc := range []struct {
		name string
		opts slack.Options
	}{
		{"no runtime", slack.Options{BotToken: "xoxb-1", SigningSecret: "s"}},
		{"no bot token", slack.Options{Runtime: rt, SigningSecret: "s"}},
		{"neither mode", slack.Options{Runtime: rt, BotToken: "xoxb-1"}},
		{"not an app token", slack.Options{Runtime: rt, BotToken: "xoxb-1", AppToken: "xoxb-2"}},
	} {
		if _, err := slack.New(tc.opts); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	// A token Slack refuses stops start-up with auth.test's error.
	a, err := slack.New(slack.Options{Runtime: rt, BotToken: "xoxb-wrong", SigningSecret: "s", APIURL: e.fake.APIURL()})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(e.ctx); err == nil || !strings.Contains(err.Error(), "invalid_auth") {
		t.Errorf("Start with a wrong token: %v; want invalid_auth", err)
	}
}

func TestAnswersInATasksThread(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, e *env) {
		ev, _ := e.mention("create task Build auth")
		thread := inThread("C1", ev.TS)
		e.model.Decide("ask_user", map[string]any{"question": "JWT or sessions?"}, 10, "continue")
		e.step()
		if _, err := e.core.Notify.FlushUrgent(e.ctx); err != nil {
			t.Fatal(err)
		}
		e.waitMessages(1, both(thread, saying("JWT or sessions?")))
		if got := e.task(1).Status; got != domain.StatusWaiting {
			t.Fatalf("task is %s, want waiting", got)
		}

		// Chatter elsewhere is not read: top level, and another thread.
		e.deliver(e.fake.ChannelMessage("C1", bob, "use JWT"))
		e.deliver(e.fake.ChannelMessage("C1", bob, "use JWT").InThread("1700000000.999999"))
		e.settle()
		if got := e.task(1).Status; got != domain.StatusWaiting {
			t.Fatalf("after chatter elsewhere the task is %s, want waiting", got)
		}
		if mem, _ := e.core.Runtime.Store().RecentMemories(e.ctx, "slack:C1", 10); len(mem) != 0 {
			t.Errorf("chatter outside task threads was stored: %+v", mem)
		}

		// A plain reply in the task's thread answers it.
		e.deliver(e.fake.ChannelMessage("C1", bob, "use JWT").InThread(ev.TS))
		e.waitMessages(1, both(thread, saying("goes on with your answer")))
		if got := e.task(1).Status; got != domain.StatusQueued {
			t.Errorf("after the answer the task is %s, want queued", got)
		}
	})
}

// A reply Slack rate-limits is not waited out in the process: it is in
// the outbox, durable, before any wait — a replica killed meanwhile
// leaves it to another, which sends it under its key — and the outbox
// sends it once the limit allows, once.
func TestRateLimitedReplyIsQueuedBeforeItsWait(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, e *env) {
		e.fake.RateLimitNext("chat.postMessage", 2*time.Second)
		ev := e.fake.AppMention("C1", alice, "create task Build auth")
		e.deliver(ev)
		ctx, cancel := context.WithTimeout(e.ctx, wait)
		defer cancel()
		if _, err := e.fake.WaitCalls(ctx, "chat.postMessage", 1); err != nil {
			t.Fatal(err)
		}
		// Handled to the end without the clock moving: nothing waits
		// in the process, and the reply is in the outbox.
		e.settle()
		pending, err := e.core.Runtime.Store().ListNotifications(e.ctx, domain.NotificationPending, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(pending) != 1 || pending[0].Category != domain.NotifyReply || !strings.Contains(string(pending[0].Payload), "Created task #1") {
			t.Fatalf("outbox = %+v; want the reply, queued before any wait", pending)
		}
		if got := e.fake.Messages(); len(got) != 0 {
			t.Fatalf("delivered despite the 429: %s", dump(got))
		}
		limited := e.clk.Now()
		if !e.advanceUntil(time.Second, 30*time.Second, func() bool { return len(e.fake.Messages()) > 0 }) {
			t.Fatal("the outbox never sent the reply")
		}
		// When Slack allows, not at the outbox's next tick (5 s): the
		// person waits no longer than the limit asks.
		if waited := e.clk.Now().Sub(limited); waited > 3*time.Second {
			t.Errorf("the reply went %s after the 429 that asked for 2 s", waited)
		}
		e.advanceUntil(time.Second, 5*time.Second, func() bool { return false })
		ms := e.fake.Messages()
		if len(ms) != 1 || ms[0].ThreadTS != ev.TS || !strings.Contains(ms[0].Text, "Created task #1") {
			t.Errorf("messages:\n%s\nwant the reply once, in the mention's thread", dump(ms))
		}
		if calls := e.fake.CallsTo("chat.postMessage"); len(calls) < 2 || calls[0].Status != 429 {
			t.Errorf("calls = %+v; want a 429, then the reply", calls)
		}
	})
}
