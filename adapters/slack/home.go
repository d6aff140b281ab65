package slack

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/render"
)

// The App Home tab.
const (
	// HomeDebounce is the least time between two refreshes of a person's
	// Home tab when their tasks change: changes within it are shown
	// together, at its end.
	HomeDebounce = 3 * time.Second
	// MaxHomeUsers bounds the people whose Home tab is kept up to date:
	// those who opened it longest ago are forgotten first, and see it
	// refreshed when they open it again.
	MaxHomeUsers = 10000
	// HomeTasks is how many tasks a Home tab lists: two blocks each, within
	// Slack's 100 blocks per view.
	HomeTasks = 40
	// FollowStoreEvery is the Options.FollowStore of a replica on a
	// database others may share: a change made elsewhere shows within it
	// and HomeDebounce.
	FollowStoreEvery = 2 * time.Second
)

// homeTabs are the people who have opened the Home tab, whose tabs follow
// their tasks.
type homeTabs struct {
	mu    sync.Mutex
	users map[string]*homeUser
	// tasks marks the tasks whose changes the tabs have seen — this
	// replica's, and the store's stream's (followStore) — at most
	// maxMarkedTasks of them.
	tasks map[int64]taskMark
}

// taskMark is what the Home tabs know of a task: whose it is, where, and
// the latest of its changes they have seen.
type taskMark struct {
	requestor, workspace, room string
	slack                      bool
	seq                        int64
}

// maxMarkedTasks bounds homeTabs.tasks: past it, the marks start again
// (a task whose mark is gone is read from the store when it changes).
const maxMarkedTasks = 10000

// followBatch is how many events followStore reads at a time.
const followBatch = 500

// sawChange marks t's change as seen.
func (h *homeTabs) sawChange(t domain.Task) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tasks == nil || len(h.tasks) >= maxMarkedTasks {
		h.tasks = map[int64]taskMark{}
	}
	if m, ok := h.tasks[t.Number]; !ok || t.EventSeq > m.seq {
		h.tasks[t.Number] = taskMark{requestor: t.RequestorID, workspace: t.WorkspaceID, room: t.RoomID,
			slack: t.Platform == Platform, seq: t.EventSeq}
	}
}

// unseen reports whether the change of task n to sequence seq is news to
// the tabs, marking it seen; with its mark, or known false when the task
// has none.
func (h *homeTabs) unseen(n, seq int64) (m taskMark, known, news bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m, known = h.tasks[n]
	if !known {
		return m, false, true
	}
	if seq <= m.seq {
		return m, true, false
	}
	m.seq = seq
	h.tasks[n] = m
	return m, true, true
}

// following reports whether anything this replica shows follows tasks:
// someone's Home tab, or an assistant thread's status.
func (a *Adapter) following() bool {
	a.home.mu.Lock()
	n := len(a.home.users)
	a.home.mu.Unlock()
	a.assistant.mu.Lock()
	n += len(a.assistant.threads)
	a.assistant.mu.Unlock()
	return n > 0
}

type homeUser struct {
	team    string // the workspace they opened it in
	channel string // their direct-message channel with the app
	opened  time.Time
	// scheduled is set while a refresh waits out HomeDebounce.
	scheduled bool
}

// onHomeOpened publishes the person's Home tab and remembers them, so it
// follows their tasks from now on.
func (a *Adapter) onHomeOpened(team string, e *slackevents.AppHomeOpenedEvent) {
	if e.Tab != "home" || e.User == "" {
		return
	}
	a.home.mu.Lock()
	u := a.home.users[e.User]
	if u == nil {
		if len(a.home.users) >= MaxHomeUsers {
			var oldest string
			var at time.Time
			for id, x := range a.home.users {
				if at.IsZero() || x.opened.Before(at) {
					oldest, at = id, x.opened
				}
			}
			delete(a.home.users, oldest)
		}
		u = &homeUser{}
		a.home.users[e.User] = u
	}
	u.team, u.opened = team, a.clk.Now()
	if e.Channel != "" {
		u.channel = e.Channel
	}
	a.home.mu.Unlock()
	a.goTracked(func() { a.publishHome(a.base, e.User, team) })
}

// homeChanged schedules a refresh of the Home tab of t's requestor, if they
// have opened it and t is one it lists: at the end of HomeDebounce, once
// however many changes come meanwhile.
func (a *Adapter) homeChanged(t domain.Task) {
	user := t.RequestorID
	a.home.mu.Lock()
	defer a.home.mu.Unlock()
	u := a.home.users[user]
	if u == nil || u.scheduled || (t.WorkspaceID != u.team && t.WorkspaceID != dmWorkspace(user)) {
		return
	}
	// The timer starts now, in the task service's goroutine, so the wait
	// is on the clock as soon as the change is made.
	timer := a.clk.NewTimer(HomeDebounce)
	started := a.goBackground(func() {
		defer timer.Stop()
		select {
		case <-timer.C():
		case <-a.base.Done():
			return
		}
		a.home.mu.Lock()
		u.scheduled = false
		team := u.team
		a.home.mu.Unlock()
		a.publishHome(a.base, user, team)
	})
	if started {
		u.scheduled = true
	} else {
		timer.Stop()
	}
}

// followStore brings to the Home tabs and assistant threads the task
// changes other replicas make: every FollowStore it reads the store's
// event stream (every replica's events) from where it stopped, and hands
// each task changed since to taskChanged, but for the changes this
// replica made and followed already (sawChange). While nothing here
// follows tasks it only keeps up with where the stream ends.
func (a *Adapter) followStore(ctx context.Context) {
	st := a.rt.Store()
	after := int64(-1) // where the stream ends: not known yet
	for {
		if after < 0 || !a.following() {
			head, err := domain.LatestEventID(ctx, st, max(after, 0))
			if err != nil {
				a.log.Warn("Home tabs: cannot find the end of the task event stream", "err", err)
			} else {
				after = head
			}
		} else {
			after = a.followFrom(ctx, st, after)
		}
		timer := a.clk.NewTimer(a.opts.FollowStore)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C():
		}
	}
}

// followFrom reads the events after after and refreshes the tabs of the
// tasks they changed; it returns where it stopped. When a changed task
// cannot be read it returns after itself, so that the next read brings
// that change again (the changes handed on meanwhile are marked seen, and
// not handed on twice).
func (a *Adapter) followFrom(ctx context.Context, st domain.Store, after int64) int64 {
	from := after
	changed := map[int64]int64{} // task → its latest sequence
	for {
		evs, err := st.EventsSince(ctx, after, followBatch)
		if err != nil {
			a.log.Warn("Home tabs: cannot read the task event stream", "after", after, "err", err)
			break
		}
		for _, e := range evs {
			after = e.ID
			changed[e.TaskNumber] = max(changed[e.TaskNumber], e.Sequence)
		}
		if len(evs) < followBatch {
			break
		}
	}
	for n, seq := range changed {
		m, known, news := a.home.unseen(n, seq)
		if !news {
			continue
		}
		t := domain.Task{Number: n, RequestorID: m.requestor, WorkspaceID: m.workspace, RoomID: m.room, EventSeq: seq}
		if !known {
			var err error
			if t, err = st.GetTask(ctx, n); err != nil {
				a.log.Warn("Home tabs: cannot read a changed task; reading its change again later", "task", n, "err", err)
				after = from
				continue
			}
			a.home.sawChange(t)
		} else if m.slack {
			t.Platform = Platform
		}
		a.taskChanged(t)
	}
	return after
}

// dmWorkspace is the workspace of a person's direct-message tasks.
func dmWorkspace(user string) string { return domain.DMWorkspace(Platform, user) }

// publishHome lays out the person's tasks and publishes them as their
// Home tab.
func (a *Adapter) publishHome(ctx context.Context, user, team string) {
	tasks, total, err := a.homeTasks(ctx, user, team)
	if err != nil {
		a.log.Error("cannot list a person's tasks for their Home tab", "user", user, "err", err)
		return
	}
	view := homeView(tasks, total)
	err = a.retryRateLimited(ctx, func() error {
		if _, err := a.api.PublishViewContext(ctx, slackapi.PublishViewContextRequest{UserID: user, View: view}); err != nil {
			return apiError("views.publish", err)
		}
		return nil
	})
	if err != nil {
		a.log.Warn("cannot publish a Home tab", "user", user, "err", err)
	}
}

// homeTasks are the tasks a person asked for that they may see from Slack
// — in the workspace, and in their direct messages — active ones first,
// newest first, at most HomeTasks; total is how many there are in all.
func (a *Adapter) homeTasks(ctx context.Context, user, team string) ([]domain.Task, int, error) {
	active := []domain.Status{domain.StatusQueued, domain.StatusRunning, domain.StatusPaused, domain.StatusWaiting}
	ended := []domain.Status{domain.StatusCompleted, domain.StatusFailed, domain.StatusStalemate, domain.StatusCanceled}
	var groups [2][]domain.Task
	total := 0
	for _, ws := range []string{team, dmWorkspace(user)} {
		if ws == "" {
			continue
		}
		for i, statuses := range [][]domain.Status{active, ended} {
			f := domain.TaskFilter{RequestorID: user, WorkspaceID: ws, Statuses: statuses, Order: domain.OrderRecent, Limit: HomeTasks}
			ts, err := a.rt.Store().ListTasks(ctx, f)
			if err != nil {
				return nil, 0, fmt.Errorf("list %s's tasks in %s: %w", user, ws, err)
			}
			groups[i] = append(groups[i], ts...)
		}
		n, err := a.rt.Store().CountTasks(ctx, domain.TaskFilter{RequestorID: user, WorkspaceID: ws})
		if err != nil {
			return nil, 0, fmt.Errorf("count %s's tasks in %s: %w", user, ws, err)
		}
		total += n
	}
	var out []domain.Task
	for _, g := range groups {
		slices.SortFunc(g, func(x, y domain.Task) int { return cmp.Compare(y.Number, x.Number) })
		out = append(out, g...)
	}
	if len(out) > HomeTasks {
		out = out[:HomeTasks]
	}
	return out, total, nil
}

// homeView is the Home tab: a header, how many tasks are active, then per
// task its bar and status and the buttons its status allows (the same
// action IDs as in messages), and a note when not all are listed.
func homeView(tasks []domain.Task, total int) slackapi.HomeTabViewRequest {
	mrkdwn := func(s string) *slackapi.TextBlockObject {
		return slackapi.NewTextBlockObject(slackapi.MarkdownType, s, false, false)
	}
	active := 0
	for _, t := range tasks {
		if !t.Status.Terminal() {
			active++
		}
	}
	intro := "You have no tasks yet. Start one with `/task create`, or send me `create task <goal>`."
	if total > 0 {
		intro = fmt.Sprintf("%d active, %d in all. `/task create` starts another.", active, total)
	}
	blocks := []slackapi.Block{
		slackapi.NewHeaderBlock(slackapi.NewTextBlockObject(slackapi.PlainTextType, "Your tasks", true, false)),
		slackapi.NewSectionBlock(mrkdwn(intro), nil, nil),
		slackapi.NewDividerBlock(),
	}
	for _, t := range tasks {
		num := strconv.FormatInt(t.Number, 10)
		line := fmt.Sprintf("*#%s* %s\n%s %d%%  %s", num, quotedName(t), render.Bar(t.Progress), min(max(t.Progress, 0), 100), render.TaskStatusWord(t))
		if t.Iteration > 0 {
			line += fmt.Sprintf(" (iter %d)", t.Iteration)
		}
		blocks = append(blocks, slackapi.NewSectionBlock(mrkdwn(line), nil, nil, slackapi.SectionBlockOptionBlockID("taskloom_home_"+num)))
		blocks = append(blocks, slackapi.NewActionBlock("taskloom_task_"+num, homeButtons(t)...))
	}
	if total > len(tasks) {
		blocks = append(blocks, slackapi.NewContextBlock("taskloom_home_more",
			mrkdwn(fmt.Sprintf("Showing %d of %d; `/task list` and `/task search` find the rest.", len(tasks), total))))
	}
	return slackapi.HomeTabViewRequest{Type: slackapi.VTHomeTab, CallbackID: "taskloom_home", Blocks: slackapi.Blocks{BlockSet: blocks}}
}

// quotedName is a task's name as messages show it: quoted, escaped.
func quotedName(t domain.Task) string {
	if t.Name == "" {
		return ""
	}
	return `"` + render.Escape(render.Slack, t.Name) + `"`
}

// homeButtons are the task buttons t's status allows: Pause and Cancel
// while it works or waits, Resume and Cancel while paused, Retry once it
// ended.
func homeButtons(t domain.Task) []slackapi.BlockElement {
	var actions []string
	switch {
	case t.Status.Terminal():
		actions = []string{ActionRetry}
	case t.Status == domain.StatusPaused:
		actions = []string{ActionResume, ActionCancel}
	default:
		actions = []string{ActionPause, ActionCancel}
	}
	out := make([]slackapi.BlockElement, 0, len(actions))
	for _, act := range actions {
		out = append(out, taskButton(act, t.Number))
	}
	return out
}

// homeRoom is where the answer to a press in a person's Home tab goes:
// their direct messages with the app (from app_home_opened, else
// conversations.open).
func (a *Adapter) homeRoom(ctx context.Context, user string) (room, error) {
	a.home.mu.Lock()
	u := a.home.users[user]
	channel := ""
	if u != nil {
		channel = u.channel
	}
	a.home.mu.Unlock()
	if channel != "" {
		return room{Channel: channel}, nil
	}
	ch, _, _, err := a.api.OpenConversationContext(ctx, &slackapi.OpenConversationParameters{Users: []string{user}})
	if err != nil {
		return room{}, apiError("conversations.open", err)
	}
	return room{Channel: ch.ID}, nil
}
