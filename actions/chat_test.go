package actions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/tasks"
)

type chatKit struct {
	t     *testing.T
	ctx   context.Context
	store domain.Store
	rt    *plugin.Runtime
	svc   *tasks.Service
	clk   *clock.Fake
	seq   int
}

func newChat(t *testing.T, open teststore.Opener) *chatKit {
	t.Helper()
	k := &chatKit{t: t, ctx: context.Background(), store: open(t), clk: clock.NewFake(time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC))}
	k.rt = plugin.New(plugin.Options{Store: k.store, Clock: k.clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	k.svc = tasks.New(tasks.Options{Runtime: k.rt, Owner: "w"})
	chat := &actions.Chat{Tasks: k.svc, Admins: []string{"boss"}}
	if err := k.rt.Register(&plugin.Plugin{Name: "chat", Actions: actions.Commands(chat)}); err != nil {
		t.Fatal(err)
	}
	if err := k.rt.Start(k.ctx); err != nil {
		t.Fatal(err)
	}
	return k
}

// say sends text as author in a Discord guild channel and returns the
// one reply.
func (k *chatKit) say(author, text string, mod ...func(*plugin.Message)) string {
	k.t.Helper()
	k.seq++
	msg := plugin.Message{ID: fmt.Sprint(k.seq), Platform: "discord", Room: "discord:C1", WorkspaceID: "G1",
		AuthorID: author, Text: text, Mentioned: true}
	for _, m := range mod {
		m(&msg)
	}
	var replies []string
	if err := k.rt.HandleMessage(k.ctx, msg, func(_ context.Context, r plugin.Response) error {
		replies = append(replies, r.Text)
		return nil
	}); err != nil {
		k.t.Fatal(err)
	}
	if len(replies) != 1 {
		k.t.Fatalf("%q: %d replies %q", text, len(replies), replies)
	}
	return replies[0]
}

func (k *chatKit) expect(author, text, want string, mod ...func(*plugin.Message)) {
	k.t.Helper()
	if got := k.say(author, text, mod...); !strings.Contains(got, want) {
		k.t.Fatalf("%s says %q:\n%s\nwant it to contain %q", author, text, got, want)
	}
}

func (k *chatKit) count() int {
	k.t.Helper()
	n, err := k.store.CountTasks(k.ctx, domain.TaskFilter{})
	if err != nil {
		k.t.Fatal(err)
	}
	return n
}

func inGuild(g string) func(*plugin.Message) { return func(m *plugin.Message) { m.WorkspaceID = g } }
func dm(m *plugin.Message)                   { m.DM, m.WorkspaceID, m.Room = true, "", "discord:DM-"+m.AuthorID }
func admin(m *plugin.Message)                { m.Admin = true }

func TestChatCommands(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		k := newChat(t, open)
		k.expect("ann", "create task Build auth", `Created task #1 "Build auth"`)
		k.expect("ann", "work on fixing the flaky login test", `Created task #2 "Fixing the flaky login test"`)
		k.expect("ann", "list tasks", "📊 Task Queue (2 tasks)")
		k.expect("ann", "show queue", `Next: #1 "Build auth" (fair scheduling)`)
		k.expect("bob", "status #1", "Goal: Build auth")
		k.expect("ann", "create loop task Write the docs", `Created task #3 "Write the docs"`)
		k.expect("bob", "search tasks LOGIN", `#2 "Fixing the flaky login test"`)
		k.expect("bob", "search tasks nothing-like-it", "No tasks match")
		k.expect("bob", "help", "create task")
		k.expect("bob", "what's for lunch?", "create task") // no real model: the help text
	})
}

func TestBadCommandsChangeNothing(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		k := newChat(t, open)
		k.expect("ann", "create task Build auth", "#1")
		cases := []struct{ text, want string }{
			{"status #99", "There is no task #99 here."},
			{"status", "Which task? Say `status #3`."},
			{"status #abc", "Which task?"},
			{"pause", "Which task? Say `pause #3`."},
			{"create task", "What should the task do?"},
			{"create task    ", "What should the task do?"},
			{"create task \u3164\u200b\u2800", "Cannot create the task: the goal shows nothing: it holds only invisible characters."},
			{"create task " + strings.Repeat("x", 4001), "Cannot create the task: the goal is 4001 characters; the limit is 4000."},
			{"create bogus task Build auth", `Cannot create the task: there is no strategy "bogus"; the strategies are loop`},
			{"search", "Search for what?"},
			{"answer #1", "Say `answer #3 <your answer>`."},
			{"answer #1 use JWT", "Task #1 is not waiting for an answer."},
			{"resume #1", "Task #1 is not paused (it is queued); only a paused task can be resumed."},
			{"cancel #42", "There is no task #42 here."},
			{"cancel #99999999999999999999", "There is no task #99999999999999999999 here."},
			{"status 99999999999999999999", "There is no task #99999999999999999999 here."},
			{"answer #99999999999999999999 use JWT", "There is no task #99999999999999999999 here."},
			{"retry #99999999999999999999", "There is no task #99999999999999999999 here."},
			{"deny #99999999999999999999 no", "There is no task #99999999999999999999 here."},
			{"pause #-99999999999999999999", "Which task? Say `pause #3`."},
		}
		for _, c := range cases {
			k.expect("ann", c.text, c.want)
		}
		// A model's call that sets beyond to anything but digits is not
		// said back.
		msg := plugin.Message{Platform: "discord", Room: "discord:C1", WorkspaceID: "G1", AuthorID: "ann"}
		res, err := k.rt.RunAction(k.ctx, "cancel_task", &plugin.Call{Message: &msg, Params: json.RawMessage(`{"number":0,"beyond":"1 <!everyone>"}`)})
		if err != nil || res.Error != "Which task? Say `cancel #3`." {
			t.Fatalf("cancel with a crafted beyond: %+v, %v", res, err)
		}
		if n := k.count(); n != 1 {
			t.Fatalf("%d tasks after bad commands, want 1", n)
		}
		if got, _ := k.store.GetTask(k.ctx, 1); got.Status != domain.StatusQueued {
			t.Fatalf("task #1 is %s", got.Status)
		}
	})
}

func TestControlIsForTheRequestorAndAdmins(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		k := newChat(t, open)
		k.expect("ann", "create task Build auth", "#1")
		k.expect("bob", "pause #1", "Only the person who created task #1, or an admin, can pause it.")
		k.expect("bob", "cancel #1", "can cancel it")
		k.expect("ann", "pause #1", `⏸️ Task #1 "Build auth" paused`)
		k.expect("ann", "pause #1", "Task #1 is already paused.")
		k.expect("boss", "resume #1", `▶️ Task #1 "Build auth" resumed`) // TASKLOOM_ADMINS
		k.expect("carol", "pause #1", "paused", admin)                   // a Manage Server / workspace admin
		k.expect("ann", "cancel #1", "Canceled. Task #1 keeps its files: say `retry #1`")
		k.expect("ann", "resume #1", "Task #1 has already ended (canceled); it cannot be resumed.")
		if got, _ := k.store.GetTask(k.ctx, 1); got.Status != domain.StatusCanceled {
			t.Fatalf("status %s", got.Status)
		}
	})
}

func TestTasksAreSeenOnlyFromTheirWorkspace(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		k := newChat(t, open)
		k.expect("ann", "create task Guild work", "#1")
		k.expect("ann", "create task My secret plan", "#2", dm)
		k.expect("ann", "status #1", "Guild work")
		k.expect("ann", "status #1", "There is no task #1 here.", inGuild("G2"))
		k.expect("ann", "list tasks", "Task Queue is empty", inGuild("G2"))
		k.expect("bob", "status #2", "There is no task #2 here.")     // from the guild
		k.expect("bob", "status #2", "There is no task #2 here.", dm) // from bob's own DM
		k.expect("ann", "status #2", "My secret plan", dm)
		k.expect("ann", "search tasks secret", "No tasks match") // the guild does not see DM tasks
		k.expect("bob", "pause #2", "There is no task #2 here.", admin)
	})
}

func TestUserTextCannotPing(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		k := newChat(t, open)
		reply := k.say("ann", "create task @everyone hello <@123> **now**")
		if strings.Contains(reply, "@everyone") || strings.Contains(reply, "<@123>") || strings.Contains(reply, "**now**") {
			t.Fatalf("reply can ping or format: %q", reply)
		}
		slack := k.say("ann", "create task <!channel> & co", func(m *plugin.Message) { m.Platform, m.Room = "slack", "slack:C9" })
		if strings.Contains(slack, "<!channel>") || !strings.Contains(slack, "&lt;!channel&gt; &amp; co") {
			t.Fatalf("slack reply = %q", slack)
		}
	})
}

func TestAnswerResumesAWaitingTask(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		k := newChat(t, open)
		k.expect("ann", "create task Build auth", "#1")
		wait := func(n int64) {
			claimed, err := k.store.ClaimTask(k.ctx, domain.Claim{Owner: "w", Now: k.clk.Now(), Lease: time.Minute})
			if err != nil || claimed.Number != n {
				t.Fatalf("claim: %+v %v", claimed, err)
			}
			_, err = k.store.UpdateTask(k.ctx, n, func(cur domain.Task) (domain.Mutation, error) {
				return domain.Iterated(cur, domain.Outcome{Owner: "w", Fence: cur.Fence, Now: k.clk.Now(), Progress: 10,
					Wait: domain.WaitAnswer, Step: domain.Step{Action: "ask_user", Success: true}})
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		wait(1)
		k.expect("bob", "answer #1 use JWT", `Thanks — task #1 "Build auth" goes on with your answer.`)
		if got, _ := k.store.GetTask(k.ctx, 1); got.Status != domain.StatusQueued {
			t.Fatalf("status %s", got.Status)
		}
		k.clk.Advance(time.Second)
		wait(1)
		// A reply to the bot's question answers it too.
		k.expect("bob", "sessions, please", "goes on with your answer", func(m *plugin.Message) { m.Mentioned, m.ReplyToBot = false, true })
		evs, _ := k.store.TaskEvents(k.ctx, 1, 0)
		var answers []string
		for _, ev := range evs {
			if ev.Type == domain.EventAnswered {
				answers = append(answers, string(ev.Payload))
			}
		}
		if len(answers) != 2 || !strings.Contains(answers[0], "use JWT") || !strings.Contains(answers[1], "sessions, please") {
			t.Fatalf("answers = %q", answers)
		}
		// With nothing waiting, a reply to the bot gets a clear sentence.
		k.expect("bob", "thanks!", "If you are answering a task's question", func(m *plugin.Message) { m.Mentioned, m.ReplyToBot = false, true })
	})
}

func TestChatCommandsAreNotTools(t *testing.T) {
	t.Parallel()
	for _, a := range actions.Commands(&actions.Chat{}) {
		if a.Info().Tool {
			t.Errorf("%s is offered to agent tasks", a.Info().Name)
		}
	}
	for _, a := range actions.Tools(actions.ToolConfig{}) {
		if !a.Info().Tool {
			t.Errorf("%s is not offered to agent tasks", a.Info().Name)
		}
	}
}

// TestChatterDoesNotWakeAParentWaitingOnSubtasks: a task waiting on its
// subtasks takes no answer — not `answer #N`, not a reply to the bot —
// and changes nothing; the end of its last subtask resumes it.
func TestChatterDoesNotWakeAParentWaitingOnSubtasks(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		k := newChat(t, open)
		k.expect("ann", "create task Ship the release", "#1")
		claimed, err := k.store.ClaimTask(k.ctx, domain.Claim{Owner: "w", Now: k.clk.Now(), Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		child, err := k.svc.Create(k.ctx, domain.NewTask{Goal: "Tag the build", ParentNumber: 1, RequestorID: "ann",
			Platform: "discord", RoomID: "discord:C1", WorkspaceID: "G1", Actor: "task #1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := k.store.UpdateTask(k.ctx, 1, func(cur domain.Task) (domain.Mutation, error) {
			return domain.Iterated(cur, domain.Outcome{Owner: "w", Fence: claimed.Fence, Now: k.clk.Now(), Progress: 10,
				Wait: domain.WaitSubtasks, Step: domain.Step{Action: "create_subtask", Success: true}})
		}); err != nil {
			t.Fatal(err)
		}
		before, _ := k.store.GetTask(k.ctx, 1)
		k.expect("bob", "answer #1 use JWT", "Task #1 is not waiting for an answer: it waits for its subtasks to end.")
		k.expect("bob", "use JWT", "If you are answering a task's question", func(m *plugin.Message) { m.Mentioned, m.ReplyToBot = false, true })
		after, _ := k.store.GetTask(k.ctx, 1)
		if after.Status != domain.StatusWaiting || after.WaitingOn != domain.WaitSubtasks || after.EventSeq != before.EventSeq {
			t.Fatalf("parent after the chatter = %s on %q (event %d, was %d); want untouched", after.Status, after.WaitingOn, after.EventSeq, before.EventSeq)
		}
		k.clk.Advance(time.Second)
		c, err := k.store.ClaimTask(k.ctx, domain.Claim{Owner: "w", Now: k.clk.Now(), Lease: time.Minute})
		if err != nil || c.Number != child.Number {
			t.Fatalf("claim = #%d, %v; want the child", c.Number, err)
		}
		if _, err := k.store.UpdateTask(k.ctx, child.Number, func(cur domain.Task) (domain.Mutation, error) {
			return domain.Iterated(cur, domain.Outcome{Owner: "w", Fence: c.Fence, Now: k.clk.Now(), Progress: 100,
				Verdict: domain.VerdictDone, Summary: "tagged v1.2", Step: domain.Step{Action: "post_message", Success: true}})
		}); err != nil {
			t.Fatal(err)
		}
		if p, _ := k.store.GetTask(k.ctx, 1); p.Status != domain.StatusQueued {
			t.Fatalf("parent after its last subtask = %s, want queued", p.Status)
		}
	})
}

// TestRetryCommand: `retry #N [context]` continues an ended task as a new
// one; a live task, an unknown one and one in another workspace get one
// sentence and change nothing.
func TestRetryCommand(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		k := newChat(t, open)
		k.expect("ann", "create task Build auth", "#1")
		k.expect("ann", "retry #1", "Task #1 has not ended (it is queued); only an ended task can be retried.")
		k.expect("bob", "retry", "Which task? Say `retry #3`")
		k.expect("bob", "retry #7", "There is no task #7 here.")
		k.expect("ann", "cancel #1", "Canceled. Task #1 keeps its files")
		k.expect("eve", "retry #1", "There is no task #1 here.", inGuild("G2"))
		if n := k.count(); n != 1 {
			t.Fatalf("%d tasks after refused retries, want 1", n)
		}
		k.expect("ann", "retry #1 use JWT this time", `Created task #2 "Build auth", continuing #1 with its files. I'll post progress here.`)
		got, err := k.store.GetTask(k.ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		if got.ContinuesNumber != 1 || got.RequestorID != "ann" || got.Goal != "Build auth" {
			t.Fatalf("retry = %+v", got)
		}
		evs, _ := k.store.TaskEvents(k.ctx, 2, 0)
		if len(evs) == 0 || !strings.Contains(string(evs[0].Payload), "use JWT this time") {
			t.Fatalf("the retry's context is not in its created event: %v", evs)
		}
	})
}

// TestRetryIsTheRequestors: a retry carries the old task's files, so only
// its requestor and admins may ask for one, and the new task runs in the
// old one's room, never where the asker happens to be. Bob, in channel B,
// must not get alice's files from channel A by saying `retry #1`.
func TestRetryIsTheRequestors(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		k := newChat(t, open)
		inRoom := func(r string) func(*plugin.Message) { return func(m *plugin.Message) { m.Room = r } }
		k.expect("alice", "create task Set up payroll", "#1", inRoom("discord:CA"))
		if _, err := k.store.ImportTaskFiles(k.ctx, 1, []domain.FileChange{{Path: "payroll.env", Data: []byte("PASSWORD=hunter2")}}, k.clk.Now()); err != nil {
			t.Fatal(err)
		}
		k.expect("alice", "cancel #1", "Canceled. Task #1 keeps its files", inRoom("discord:CA"))

		k.expect("bob", "retry #1", "Only the person who created task #1, or an admin, can retry it.", inRoom("discord:CB"))
		if n := k.count(); n != 1 {
			t.Fatalf("%d tasks after bob's retry, want 1: nothing is made", n)
		}

		// Alice herself, from another channel: the new task runs where
		// task #1 ran.
		k.expect("alice", "retry #1", "continuing #1 with its files. I'll post progress where task #1 ran.", inRoom("discord:CB"))
		// An admin may, and it too runs in channel A.
		k.expect("boss", "retry #1", "continuing #1", inRoom("discord:CB"))
		for _, n := range []int64{2, 3} {
			got, err := k.store.GetTask(k.ctx, n)
			if err != nil {
				t.Fatal(err)
			}
			if got.RoomID != "discord:CA" || got.ContinuesNumber != 1 {
				t.Errorf("task #%d in room %q continuing #%d, want discord:CA continuing #1", n, got.RoomID, got.ContinuesNumber)
			}
		}
		files, err := k.store.TaskFiles(k.ctx, 2)
		if err != nil || len(files) != 1 {
			t.Fatalf("the retry's files = %v, %v; want task #1's", files, err)
		}
	})
}

// TestApproveAndDeny: only the requestor and admins decide on a tool call
// a task asked to make; anyone else gets one sentence and nothing changes.
func TestApproveAndDeny(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		k := newChat(t, open)
		k.expect("ann", "create task Deploy", "#1")
		k.expect("ann", "approve #1", "Task #1 is not waiting for an approval.")
		asks := func() {
			claimed, err := k.store.ClaimTask(k.ctx, domain.Claim{Owner: "w", Now: k.clk.Now(), Lease: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := k.store.UpdateTask(k.ctx, 1, func(cur domain.Task) (domain.Mutation, error) {
				return domain.Iterated(cur, domain.Outcome{Owner: "w", Fence: claimed.Fence, Now: k.clk.Now(), Progress: 10,
					Wait: domain.WaitApproval, Step: domain.Step{Action: "run_command", Params: []byte(`{"command":"make deploy"}`)}})
			}); err != nil {
				t.Fatal(err)
			}
			k.clk.Advance(time.Second)
		}
		asks()
		before, _ := k.store.GetTask(k.ctx, 1)
		k.expect("bob", "approve #1", "Only the person who created task #1, or an admin, can approve it.")
		k.expect("bob", "deny #1 no", "Only the person who created task #1, or an admin, can deny it.")
		k.expect("bob", "answer #1 yes", "Task #1 is not waiting for an answer.")
		if after, _ := k.store.GetTask(k.ctx, 1); after.EventSeq != before.EventSeq || after.WaitingOn != domain.WaitApproval {
			t.Fatalf("refused decisions changed the task: %+v", after)
		}
		k.expect("ann", "approve #1 call:0123456789abcdef", "That request is no longer pending; task #1 now asks to run `run_command {\"command\":\"make deploy\"}`.")
		k.expect("ann", "deny #1 call:0123456789abcdef too late", "That request is no longer pending; task #1 now asks to run")
		if after, _ := k.store.GetTask(k.ctx, 1); after.EventSeq != before.EventSeq || after.WaitingOn != domain.WaitApproval {
			t.Fatalf("decisions on a stale call changed the task: %+v", after)
		}
		k.expect("ann", "approve #1 call:"+domain.ApprovalID(before), "✅ Approved `run_command {\"command\":\"make deploy\"}` for task #1 \"Deploy\"; it runs next.")
		k.expect("ann", "approve #1 call:"+domain.ApprovalID(before), "That request is no longer pending; task #1 was approved to run `run_command {\"command\":\"make deploy\"}`, which it runs next.")
		if got, _ := k.store.GetTask(k.ctx, 1); got.Status != domain.StatusQueued || !got.ApprovalGranted {
			t.Fatalf("approved task = %s, granted %v", got.Status, got.ApprovalGranted)
		}

		k.expect("ann", "create task Deploy again", "#2")
		k.expect("ann", "cancel #1", "Canceled. Task #1 keeps its files")
		claimed, err := k.store.ClaimTask(k.ctx, domain.Claim{Owner: "w", Now: k.clk.Now(), Lease: time.Minute})
		if err != nil || claimed.Number != 2 {
			t.Fatalf("claim = #%d, %v", claimed.Number, err)
		}
		if _, err := k.store.UpdateTask(k.ctx, 2, func(cur domain.Task) (domain.Mutation, error) {
			return domain.Iterated(cur, domain.Outcome{Owner: "w", Fence: claimed.Fence, Now: k.clk.Now(), Progress: 10,
				Wait: domain.WaitApproval, Step: domain.Step{Action: "run_command", Params: []byte(`{"command":"make deploy"}`)}})
		}); err != nil {
			t.Fatal(err)
		}
		k.expect("boss", "deny #2 not on a Friday", "🚫 Denied `run_command {\"command\":\"make deploy\"}` for task #2")
		steps, _ := k.store.Steps(k.ctx, 2)
		if len(steps) != 1 || steps[0].Error != "denied by boss: not on a Friday" {
			t.Fatalf("steps = %+v", steps)
		}
	})
}

// TestChatCommandParamsStrict: a command's parameters, as the chat
// pipeline's model may pick them, are decoded strictly: a key in another
// case, a key given twice (one escaped) or a field the command does not
// take is refused with one sentence and changes nothing. Someone reading
// the pick must see what the command acts on: `{"number":2,"NUMBER":1}`
// would otherwise cancel #1.
func TestChatCommandParamsStrict(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		k := newChat(t, open)
		k.expect("ann", "create task One", "#1")
		k.expect("ann", "create task Two", "#2")
		for _, tt := range []struct{ action, params, says string }{
			{"cancel_task", `{"number":2,"NUMBER":1}`, `"NUMBER" is spelled "number"`},
			{"cancel_task", `{"number":2,"\u006eumber":1}`, `"number" is given twice`},
			{"cancel_task", `{"number":1,"all":true}`, `There is no parameter "all"`},
			{"create_task", `{"goal":"Three","Goal":"rm -rf"}`, `"Goal" is spelled "goal"`},
		} {
			msg := plugin.Message{ID: "strict", Platform: "discord", Room: "discord:C1", WorkspaceID: "G1", AuthorID: "ann", Mentioned: true}
			res, err := k.rt.RunAction(k.ctx, tt.action, &plugin.Call{Message: &msg, Params: json.RawMessage(tt.params)})
			if err != nil || res.Success || !strings.Contains(res.Error, tt.says) || strings.Contains(res.Error, "\n") {
				t.Errorf("%s %s = %+v, %v; want one sentence saying %q", tt.action, tt.params, res, err, tt.says)
			}
		}
		all, err := k.store.ListTasks(k.ctx, domain.TaskFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 2 || all[0].Status.Terminal() || all[1].Status.Terminal() {
			t.Fatalf("tasks after refused commands: %+v; want #1 and #2 as they were", all)
		}
	})
}
