package slack_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/slack"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/slackfake"
)

// homeTasks reads a Home tab: the task numbers its sections list, in
// order, and the action IDs of each task's buttons.
func homeTasks(v slackfake.View) ([]string, map[string][]string) {
	var order []string
	buttons := map[string][]string{}
	for _, b := range v.Blocks {
		if n, ok := strings.CutPrefix(b.BlockID, "taskloom_home_"); ok && b.Type == "section" {
			order = append(order, "#"+n)
		}
	}
	for _, b := range v.Buttons() {
		buttons["#"+b.Value] = append(buttons["#"+b.Value], b.ActionID)
	}
	return order, buttons
}

func TestHomeTabListsTheUsersTasksAndFollowsThem(t *testing.T) {
	t.Parallel()
	forModes(t, func(t *testing.T, e *env) {
		// The notification service's sends wait on the clock too: stopped,
		// the only new waiter below is the Home tab's debounce.
		if err := e.core.Notify.Stop(e.ctx); err != nil {
			t.Fatal(err)
		}
		// Alice: #1 in a channel, #2 in her DMs, #4 ended; bob: #3.
		e.mention("create task Build auth")
		dm := e.fake.DirectMessage(alice, "create task Write notes")
		e.deliver(dm)
		e.waitMessages(1, inThread(dm.Channel, ""))
		e.deliver(e.fake.SlashCommand("C7", bob, "create Bob's errand"))
		e.deliver(e.fake.SlashCommand("C7", alice, "create Old idea"))
		e.deliver(e.fake.SlashCommand("C7", alice, "cancel 4"))
		e.settle()
		if got := e.task(4).Status; got != domain.StatusCanceled {
			t.Fatalf("task #4 is %s, want canceled", got)
		}
		ctx, cancel := context.WithTimeout(e.ctx, wait)
		defer cancel()

		// The Messages tab is not the Home tab.
		e.deliver(e.fake.AppHomeOpened(alice, "messages"))
		e.settle()
		if n := len(e.fake.CallsTo("views.publish")); n != 0 {
			t.Fatalf("opening the Messages tab published %d views", n)
		}
		e.deliver(e.fake.AppHomeOpened(alice, "home"))
		if _, err := e.fake.WaitCalls(ctx, "views.publish", 1); err != nil {
			t.Fatal(err)
		}
		e.settle()
		v, ok := e.fake.HomeView(alice)
		if !ok {
			t.Fatal("no Home tab published for alice")
		}
		order, buttons := homeTasks(v)
		if got := strings.Join(order, " "); got != "#2 #1 #4" {
			t.Errorf("Home tab lists %q; want alice's tasks only, active first, newest first: #2 #1 #4", got)
		}
		text := strings.Join(v.Texts(), "\n")
		for _, want := range []string{`"Write notes"`, "[░░░░░░░░░░] 0%  Queued", `"Old idea"`, "Canceled", "2 active, 3 in all"} {
			if !strings.Contains(text, want) {
				t.Errorf("Home tab does not say %q:\n%s", want, text)
			}
		}
		if strings.Contains(text, "Bob") {
			t.Errorf("Home tab shows bob's task:\n%s", text)
		}
		if got := strings.Join(buttons["#1"], ","); got != slack.ActionPause+","+slack.ActionCancel {
			t.Errorf("#1's buttons = %s; want pause, cancel", got)
		}
		if got := strings.Join(buttons["#4"], ","); got != slack.ActionRetry {
			t.Errorf("#4's buttons = %s; want retry", got)
		}

		// Several changes — two presses in the Home tab (one of them on
		// a DM task, which alice may control from there), a command in
		// her DMs, and a change to bob's task — refresh her tab once, at
		// the end of the debounce.
		waiters := e.clk.Waiters()
		press := func(action, n string) {
			t.Helper()
			in, err := e.fake.HomeButtonPress(alice, action, n)
			if err != nil {
				t.Fatal(err)
			}
			e.deliver(in)
			e.settle()
		}
		press(slack.ActionPause, "1")
		press(slack.ActionPause, "2")
		e.deliver(e.fake.DirectMessage(alice, "resume #2"))
		e.deliver(e.fake.SlashCommand("C7", bob, "pause 3"))
		e.settle()
		if got := e.task(1).Status; got != domain.StatusPaused {
			t.Fatalf("after the press task #1 is %s, want paused", got)
		}
		e.waitMessages(1, both(inThread(e.fake.IMChannel(alice), ""), saying("Task #1 \"Build auth\" paused")))
		e.waitMessages(1, both(inThread(e.fake.IMChannel(alice), ""), saying("Task #2 \"Write notes\" resumed")))
		if got := e.clk.Waiters(); got != waiters+1 {
			t.Fatalf("%d new waiters on the clock; want one debounce for alice", got-waiters)
		}
		if n := len(e.fake.CallsTo("views.publish")); n != 1 {
			t.Fatalf("%d publishes before the debounce ended; want only the first", n)
		}
		e.clk.Advance(slack.HomeDebounce)
		if _, err := e.fake.WaitCalls(ctx, "views.publish", 2); err != nil {
			t.Fatal(err)
		}
		e.settle()
		e.clk.Advance(slack.HomeDebounce)
		e.settle()
		calls := e.fake.CallsTo("views.publish")
		if len(calls) != 2 {
			t.Errorf("%d publishes; want the first and one refresh", len(calls))
		}
		for _, c := range calls {
			if c.Params.Get("user_id") != alice {
				t.Errorf("published a Home tab for %s, who never opened it", c.Params.Get("user_id"))
			}
		}
		v, _ = e.fake.HomeView(alice)
		_, buttons = homeTasks(v)
		if got := strings.Join(buttons["#1"], ","); got != slack.ActionResume+","+slack.ActionCancel {
			t.Errorf("after the refresh #1's buttons = %s; want resume, cancel", got)
		}
		if got := strings.Join(buttons["#2"], ","); got != slack.ActionPause+","+slack.ActionCancel {
			t.Errorf("after the refresh #2's buttons = %s; want pause, cancel", got)
		}
		if !strings.Contains(strings.Join(v.Texts(), "\n"), "Paused") {
			t.Errorf("the refreshed tab does not show #1 paused:\n%s", strings.Join(v.Texts(), "\n"))
		}
	})
}

// followedHome makes task #1 for alice and opens her Home tab, with the
// notification service stopped so that only the store follower waits on
// the clock (idle waiters). tick moves the clock on by d and waits until
// the clock has want waiters again: the follower has read the stream (and
// a debounce may have started). ctx ends with the test's wait.
func followedHome(t *testing.T, e *env) (ctx context.Context, idle int, tick func(d time.Duration, want int)) {
	t.Helper()
	if err := e.core.Notify.Stop(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.deliver(e.fake.SlashCommand("C7", alice, "create Build auth"))
	e.settle()
	ctx, cancel := context.WithTimeout(e.ctx, wait)
	t.Cleanup(cancel)
	e.deliver(e.fake.AppHomeOpened(alice, "home"))
	if _, err := e.fake.WaitCalls(ctx, "views.publish", 1); err != nil {
		t.Fatal(err)
	}
	e.settle()
	idle = e.clk.Waiters()
	tick = func(d time.Duration, want int) {
		t.Helper()
		e.clk.Advance(d)
		for e.clk.Waiters() != want {
			if ctx.Err() != nil {
				t.Fatalf("%d waiters on the clock, want %d", e.clk.Waiters(), want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	return ctx, idle, tick
}

// TestHomeTabFollowsChangesMadeElsewhere: with FollowStore, a change
// another replica makes to a task — here, written to the store with no
// event in this process — refreshes its requestor's Home tab after the
// follow interval and the debounce; a change this replica makes
// refreshes it once, not again when the stream brings it back.
func TestHomeTabFollowsChangesMadeElsewhere(t *testing.T) {
	t.Parallel()
	const every = 2 * time.Second
	e := newEnv(t, httpMode, func(o *slack.Options) { o.FollowStore = every })
	ctx, idle, tick := followedHome(t, e)
	publishes := func() int { return len(e.fake.CallsTo("views.publish")) }

	// Another replica pauses #1: no event here.
	st := e.core.Runtime.Store()
	if _, err := st.UpdateTask(e.ctx, 1, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Paused(cur, alice, e.clk.Now())
	}); err != nil {
		t.Fatal(err)
	}
	tick(every, idle+1) // the follower saw it: a debounce waits
	tick(slack.HomeDebounce, idle)
	if _, err := e.fake.WaitCalls(ctx, "views.publish", 2); err != nil {
		t.Fatalf("the change made elsewhere did not refresh the Home tab: %v", err)
	}
	v, _ := e.fake.HomeView(alice)
	if _, buttons := homeTasks(v); strings.Join(buttons["#1"], ",") != slack.ActionResume+","+slack.ActionCancel {
		t.Fatalf("after the refresh #1's buttons = %v; want resume, cancel", buttons["#1"])
	}

	// This replica resumes it: one refresh, and the stream bringing the
	// change back makes no second one.
	e.deliver(e.fake.SlashCommand("C7", alice, "resume 1"))
	e.settle()
	if got := e.task(1).Status; got == domain.StatusPaused {
		t.Fatal("task #1 is still paused")
	}
	tick(slack.HomeDebounce, idle)
	if _, err := e.fake.WaitCalls(ctx, "views.publish", 3); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		tick(every, idle)
	}
	e.settle()
	if n := publishes(); n != 3 {
		t.Fatalf("%d publishes; want 3: the first, one for the change made elsewhere, one for the change made here", n)
	}
}

// unreadable is a real store whose GetTask (task) or EventsSince (events)
// fails while set, as a store that does not answer.
type unreadable struct {
	domain.Store
	task, events atomic.Bool
}

var errNoAnswer = errors.New("the store does not answer")

func (s *unreadable) GetTask(ctx context.Context, number int64) (domain.Task, error) {
	if s.task.Load() {
		return domain.Task{}, errNoAnswer
	}
	return s.Store.GetTask(ctx, number)
}

func (s *unreadable) EventsSince(ctx context.Context, after int64, limit int) ([]domain.TaskEvent, error) {
	if s.events.Load() {
		return nil, errNoAnswer
	}
	return s.Store.EventsSince(ctx, after, limit)
}

// TestHomeTabFollowsAChangeItCouldNotReadAtFirst: another replica creates
// a task for alice while her Home tab is open, and the store does not
// answer when the follower reads the event stream, or the new task. The
// change is read again at the next follow, once the store answers, and
// refreshes the tab then — not lost with the read that failed.
func TestHomeTabFollowsAChangeItCouldNotReadAtFirst(t *testing.T) {
	t.Parallel()
	for _, read := range []string{"events", "task"} {
		t.Run(read, func(t *testing.T) {
			t.Parallel()
			followThroughAnOutage(t, read)
		})
	}
}

// followThroughAnOutage is TestHomeTabFollowsAChangeItCouldNotReadAtFirst
// with read ("events" or "task") failing at the first follow.
func followThroughAnOutage(t *testing.T, read string) {
	const every = 2 * time.Second
	var st *unreadable
	e := newEnvStore(t, httpMode, func(s domain.Store) domain.Store { st = &unreadable{Store: s}; return st },
		func(o *slack.Options) { o.FollowStore = every })
	ctx, idle, tick := followedHome(t, e)
	down := &st.task
	if read == "events" {
		down = &st.events
	}

	// Another replica creates #2 for alice, in #1's room and workspace.
	first := e.task(1)
	if _, err := st.Store.CreateTask(e.ctx, domain.NewTask{Goal: "Fix login", RequestorID: first.RequestorID,
		Platform: first.Platform, RoomID: first.RoomID, WorkspaceID: first.WorkspaceID, Now: e.clk.Now()}); err != nil {
		t.Fatal(err)
	}
	down.Store(true)
	tick(every, idle) // #2 could not be read: nothing to refresh
	e.settle()
	if n := len(e.fake.CallsTo("views.publish")); n != 1 {
		t.Fatalf("%d publishes while the task could not be read; want 1", n)
	}
	down.Store(false)
	tick(every, idle+1) // read again: a debounce waits
	tick(slack.HomeDebounce, idle)
	if _, err := e.fake.WaitCalls(ctx, "views.publish", 2); err != nil {
		t.Fatalf("the change the follower could not read at first never refreshed the Home tab: %v", err)
	}
	v, _ := e.fake.HomeView(alice)
	if order, _ := homeTasks(v); strings.Join(order, ",") != "#2,#1" && strings.Join(order, ",") != "#1,#2" {
		t.Fatalf("the Home tab lists %v; want #1 and #2", order)
	}
}
