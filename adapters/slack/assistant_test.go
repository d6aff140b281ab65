package slack_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/slack"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/slackfake"
)

func TestAssistantThreads(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, e *env) {
		started := e.fake.AssistantThreadStarted(alice, "C1")
		e.deliver(started)
		e.settle()
		title, prompts := e.fake.SuggestedPrompts(started.Channel, started.ThreadTS)
		var messages []string
		for _, p := range prompts {
			messages = append(messages, p.Message)
		}
		if title == "" || strings.Join(messages, "|") != "create task|list tasks|help" {
			t.Errorf("suggested prompts = %q %+v", title, prompts)
		}

		// A message in the thread is a direct message: answered there, its
		// task private to alice and reporting there.
		thread := inThread(started.Channel, started.ThreadTS)
		e.deliver(e.fake.DirectMessage(alice, "create task Build auth").InThread(started.ThreadTS))
		reply := e.waitMessages(1, both(thread, saying("Created task #1")))
		if reply[0].Kind != slackfake.KindPost {
			t.Errorf("reply is %s; want a post in the thread", reply[0].Kind)
		}
		task := e.task(1)
		if want := "slack:" + started.Channel + ":" + started.ThreadTS; task.RoomID != want || task.WorkspaceID != "dm:slack:"+alice {
			t.Errorf("task in %q, workspace %q; want %s, dm:slack:%s", task.RoomID, task.WorkspaceID, want, alice)
		}
		ctx, cancel := context.WithTimeout(e.ctx, wait)
		defer cancel()
		status := func(want string) {
			t.Helper()
			if err := e.fake.WaitAssistantStatus(ctx, started.Channel, started.ThreadTS, want); err != nil {
				t.Fatal(err)
			}
		}
		working := "is working on #1…"
		status(working)

		// Progress posted in the thread ends the status on Slack; it is
		// set again while the task works.
		e.model.Decide("list_files", nil, 40, "continue")
		e.step()
		e.clk.Advance(5 * time.Second)
		if _, err := e.core.Notify.Flush(e.ctx); err != nil {
			t.Fatal(err)
		}
		e.waitMessages(1, both(thread, saying("Progress: 0% → 40%")))
		status(working)

		// Paused, it does not work: the status is cleared, though nothing
		// is posted in the thread to end it. Resumed, it shows again.
		e.settle()
		posts := len(e.fake.Messages())
		if _, err := e.core.Tasks.Pause(e.ctx, 1, alice); err != nil {
			t.Fatal(err)
		}
		status("")
		if n := len(e.fake.Messages()); n != posts {
			t.Logf("%d messages posted on the pause", n-posts)
		}
		if calls := e.fake.CallsTo("assistant.threads.setStatus"); calls[len(calls)-1].Params.Get("status") != "" {
			t.Errorf("last status set = %q; want it cleared when the task paused", calls[len(calls)-1].Params.Get("status"))
		}
		if _, err := e.core.Tasks.Resume(e.ctx, 1, alice); err != nil {
			t.Fatal(err)
		}
		status(working)

		// Its end clears it.
		e.model.Decide("list_files", nil, 100, "done")
		e.step()
		if _, err := e.core.Notify.FlushUrgent(e.ctx); err != nil {
			t.Fatal(err)
		}
		e.waitMessages(1, both(thread, saying("completed!")))
		status("")
		e.settle()
		if got := e.fake.AssistantStatus(started.Channel, started.ThreadTS); got != "" {
			t.Errorf("after the task ended the thread shows %q", got)
		}
		for _, c := range e.fake.CallsTo("assistant.threads.setStatus") {
			if c.Error != "" {
				t.Errorf("setStatus answered %s", c.Error)
			}
		}

		// A thread that is not an assistant's gets no status.
		before := len(e.fake.CallsTo("assistant.threads.setStatus"))
		e.mention("create task Elsewhere")
		e.settle()
		if n := len(e.fake.CallsTo("assistant.threads.setStatus")); n != before {
			t.Errorf("a channel thread's task set a status %d times", n-before)
		}
	})
}

func TestLongSummaryInAMarkdownBlock(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, e *env) {
		finish := func(summary string) slackfake.Message {
			t.Helper()
			ev, _ := e.mention("create task Write the report")
			raw, err := json.Marshal(map[string]any{"thought": "done", "action": "list_files", "params": map[string]any{},
				"progress": 100, "status": "done", "summary": summary})
			if err != nil {
				t.Fatal(err)
			}
			e.model.Reply(string(raw))
			e.step()
			if _, err := e.core.Notify.FlushUrgent(e.ctx); err != nil {
				t.Fatal(err)
			}
			return e.waitMessages(1, both(inThread("C1", ev.TS), saying("completed!")))[0]
		}
		long := "## What changed\n\n- **login** and `logout` endpoints\n- tests for both, <!channel> @here\n\n" +
			"| file | lines |\n|---|---|\n| auth.go | 120 |\n\n" + strings.Repeat("The rest of the report goes on. ", 10)
		if len([]rune(long)) <= slack.MarkdownSummaryAfter {
			t.Fatalf("the long summary is only %d characters", len([]rune(long)))
		}
		m := finish(long)
		md := m.MarkdownTexts()
		if len(md) != 1 || !strings.Contains(md[0], "## What changed") || !strings.Contains(md[0], "| auth.go | 120 |") || !strings.Contains(md[0], "**login**") {
			t.Fatalf("markdown blocks = %q; want the summary as the model wrote it", md)
		}
		for _, s := range m.SectionTexts() {
			if strings.Contains(s, "Summary:") || strings.Contains(s, "What changed") {
				t.Errorf("the summary is in a section too: %q", s)
			}
		}
		if !strings.Contains(m.BlockText(), `Task #1 "Write the report" completed!`) || !strings.Contains(m.BlockText(), "Total steps: 1") {
			t.Errorf("the blocks lost the rest of the message: %q", m.BlockText())
		}
		if !strings.Contains(m.Text, "Summary: ## What changed") || !strings.Contains(m.Text, "completed!") {
			t.Errorf("the fallback text = %q; want all of it, the summary included", m.Text)
		}
		if p := m.Pings(); len(p) != 0 {
			t.Errorf("the message pings %v", p)
		}
		if b := m.Buttons(); len(b) != 1 || b[0].ActionID != slack.ActionRetry {
			t.Errorf("buttons = %+v; want Retry", b)
		}

		short := finish("Done: two endpoints and their tests.")
		if md := short.MarkdownTexts(); len(md) != 0 || short.BlockText() != short.Text {
			t.Errorf("a short summary: markdown %q, blocks %q; want sections that repeat the text", md, short.BlockText())
		}
		if got := e.task(2).Status; got != domain.StatusCompleted {
			t.Errorf("task #2 is %s", got)
		}
	})
}

// TestAssistantStatusFollowsChangesMadeElsewhere: with FollowStore, a task
// another replica pauses — written to the store with no event in this
// process — no longer shows as worked on in its assistant thread.
func TestAssistantStatusFollowsChangesMadeElsewhere(t *testing.T) {
	t.Parallel()
	const every = 2 * time.Second
	e := newEnv(t, httpMode, func(o *slack.Options) { o.FollowStore = every })
	started := e.fake.AssistantThreadStarted(alice, "C1")
	e.deliver(started)
	e.deliver(e.fake.DirectMessage(alice, "create task Build auth").InThread(started.ThreadTS))
	e.waitMessages(1, both(inThread(started.Channel, started.ThreadTS), saying("Created task #1")))
	ctx, cancel := context.WithTimeout(e.ctx, wait)
	defer cancel()
	if err := e.fake.WaitAssistantStatus(ctx, started.Channel, started.ThreadTS, "is working on #1…"); err != nil {
		t.Fatal(err)
	}
	e.settle()
	// Nothing is posted in the thread from now on (a post would end the
	// status on Slack): only the status call can clear it.
	if err := e.core.Notify.Stop(e.ctx); err != nil {
		t.Fatal(err)
	}
	posts := len(e.fake.Messages())

	if _, err := e.core.Runtime.Store().UpdateTask(e.ctx, 1, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Paused(cur, alice, e.clk.Now())
	}); err != nil {
		t.Fatal(err)
	}
	// A few intervals, well before Slack clears a status by itself.
	cleared := false
	for range 5 {
		e.clk.Advance(every)
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		cleared = e.fake.WaitAssistantStatus(short, started.Channel, started.ThreadTS, "") == nil
		cancel()
		if cleared {
			break
		}
	}
	if !cleared {
		t.Fatalf("after %s the status still says the task paused elsewhere is worked on", 5*every)
	}
	if n := len(e.fake.Messages()); n != posts {
		t.Fatalf("%d messages posted meanwhile; want none", n-posts)
	}
}
