package slack

import (
	"context"
	"fmt"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/taskloom/taskloom/domain"
)

// AI-app assistant threads.
const (
	// MaxAssistantThreads bounds the assistant threads remembered; the
	// ones started longest ago are forgotten first (their tasks then show
	// no status).
	MaxAssistantThreads = 10000
	// StatusRefresh is how old a thread's status may get before it is set
	// again when its task changes: Slack drops a status after two minutes
	// without a message.
	StatusRefresh = 90 * time.Second
)

// SuggestedPrompts are what a new assistant thread offers to send.
var SuggestedPrompts = []slackapi.AssistantThreadsPrompt{
	{Title: "Create a task", Message: "create task"},
	{Title: "List my tasks", Message: "list tasks"},
	{Title: "What can you do?", Message: "help"},
}

// assistantThreads are the assistant threads the app has seen start, with
// the status each shows.
type assistantThreads struct {
	mu      sync.Mutex
	threads map[room]*assistantThread
}

// statusUnknown is an assistant thread's status when the adapter cannot
// know it: a status was set while the app posted in the thread, and which
// came first decides whether the post ended it.
const statusUnknown = "\x00unknown"

type assistantThread struct {
	started time.Time
	// status is what the thread shows as far as the adapter knows ("" for
	// nothing, or statusUnknown), set at statusAt; posts counts the app's
	// posts in the thread, each of which ends the status on Slack.
	status   string
	statusAt time.Time
	posts    int
	// dirty asks the reconciler (running) to look again.
	dirty, running bool
}

// onAssistantThreadStarted remembers the thread, so its tasks show a
// status, and offers SuggestedPrompts in it.
func (a *Adapter) onAssistantThreadStarted(e *slackevents.AssistantThreadStartedEvent) {
	r := room{Channel: e.AssistantThread.ChannelID, Thread: e.AssistantThread.ThreadTimeStamp}
	if r.Channel == "" || r.Thread == "" {
		return
	}
	a.assistant.mu.Lock()
	if a.assistant.threads[r] == nil {
		if len(a.assistant.threads) >= MaxAssistantThreads {
			var oldest room
			var at time.Time
			for k, th := range a.assistant.threads {
				if at.IsZero() || th.started.Before(at) {
					oldest, at = k, th.started
				}
			}
			delete(a.assistant.threads, oldest)
		}
		a.assistant.threads[r] = &assistantThread{started: a.clk.Now()}
	}
	a.assistant.mu.Unlock()
	a.goTracked(func() {
		err := a.retryRateLimited(a.base, func() error {
			err := a.api.SetAssistantThreadsSuggestedPromptsContext(a.base, slackapi.AssistantThreadsSetSuggestedPromptsParameters{
				ChannelID: r.Channel, ThreadTS: r.Thread, Title: "Try one of these", Prompts: SuggestedPrompts})
			if err != nil {
				return apiError("assistant.threads.setSuggestedPrompts", err)
			}
			return nil
		})
		if err != nil {
			a.log.Warn("cannot suggest prompts in an assistant thread", "room", r.String(), "err", err)
		}
	})
}

// assistantTouched asks for the status of assistant thread r to be
// brought in line with its tasks: "is working on #N…" while one of them is
// queued or running, nothing otherwise. Rooms that are not assistant
// threads are ignored.
func (a *Adapter) assistantTouched(r room) {
	a.assistant.mu.Lock()
	defer a.assistant.mu.Unlock()
	th := a.assistant.threads[r]
	if th == nil {
		return
	}
	th.dirty = true
	if th.running {
		return
	}
	th.running = true
	a.goTracked(func() { a.reconcileStatus(a.base, r, th) })
}

// posted notes that the app posted in r, which on Slack ends an assistant
// thread's status: it is set again if a task there still works.
func (a *Adapter) posted(r room) {
	if r.Thread == "" {
		return
	}
	a.assistant.mu.Lock()
	th := a.assistant.threads[r]
	if th != nil {
		th.posts++
		if th.status != statusUnknown {
			th.status = ""
		}
	}
	a.assistant.mu.Unlock()
	if th != nil {
		a.assistantTouched(r)
	}
}

// reconcileStatus sets or clears r's status until it matches its tasks and
// nothing asked for another look meanwhile. One runs per thread at a time.
func (a *Adapter) reconcileStatus(ctx context.Context, r room, th *assistantThread) {
	for {
		a.assistant.mu.Lock()
		if !th.dirty || ctx.Err() != nil {
			th.running = false
			a.assistant.mu.Unlock()
			return
		}
		th.dirty = false
		a.assistant.mu.Unlock()

		want, err := a.workingStatus(ctx, r)
		if err != nil {
			a.log.Warn("cannot tell whether an assistant thread's task works", "room", r.String(), "err", err)
			continue
		}
		now := a.clk.Now()
		a.assistant.mu.Lock()
		current, fresh, posts := th.status, now.Sub(th.statusAt) < StatusRefresh, th.posts
		a.assistant.mu.Unlock()
		if want == current && (want == "" || fresh) {
			continue
		}
		err = a.api.SetAssistantThreadsStatusContext(ctx, slackapi.AssistantThreadsSetStatusParameters{
			ChannelID: r.Channel, ThreadTS: r.Thread, Status: want})
		if err != nil {
			a.log.Warn("cannot set an assistant thread's status", "room", r.String(), "status", want, "err", apiError("assistant.threads.setStatus", err))
			continue
		}
		a.assistant.mu.Lock()
		th.status, th.statusAt = want, now
		if th.posts != posts {
			// A post went out meanwhile, before or after the status
			// reached Slack: posted asked to look again, which sets or
			// clears it whatever it is.
			th.status = statusUnknown
		}
		a.assistant.mu.Unlock()
	}
}

// workingStatus is the status r should show: its newest queued or running
// task's, or "".
func (a *Adapter) workingStatus(ctx context.Context, r room) (string, error) {
	tasks, err := a.rt.Store().ListTasks(ctx, domain.TaskFilter{RoomID: r.String(),
		Statuses: []domain.Status{domain.StatusQueued, domain.StatusRunning}, Order: domain.OrderRecent, Limit: 1})
	if err != nil || len(tasks) == 0 {
		return "", err
	}
	return fmt.Sprintf("is working on #%d…", tasks[0].Number), nil
}
