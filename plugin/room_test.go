package plugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/taskloom/taskloom/plugin"
)

// A task moved to its thread while an iteration ran: the tool's post,
// made with the room the iteration was claimed with, goes to the thread;
// the log still rebuilds the row.
func TestMovedTaskPostsWhereItIsNow(t *testing.T) {
	t.Parallel()
	const channel, thread = "discord:C1", "discord:C1:T1"
	l := newLife(t, plugin.NewTask{Goal: "build auth", Platform: "discord", RoomID: channel, Now: t0})
	if err := l.do(plugin.Claimed(l.task, plugin.Claim{Owner: "w1", Now: t0, Lease: time.Minute})); err != nil {
		t.Fatal(err)
	}
	claimed := l.task
	if err := l.do(plugin.Moved(l.task, thread, "discord", t0.Add(time.Second), nil)); err != nil {
		t.Fatal(err)
	}
	if l.task.RoomID != thread || l.events[len(l.events)-1].Type != plugin.EventMoved {
		t.Fatalf("after Moved: room %q, event %s", l.task.RoomID, l.events[len(l.events)-1].Type)
	}
	m, err := plugin.Iterated(l.task, plugin.Outcome{
		Owner: "w1", Fence: claimed.Fence, Now: t0.Add(2 * time.Second), Progress: 10, Verdict: plugin.VerdictContinue,
		Step:          plugin.Step{Action: "ask_user", Params: json.RawMessage(`{}`), Success: true},
		Notifications: []plugin.Notification{{Room: claimed.RoomID, Category: plugin.NotifyMessage, Payload: json.RawMessage(`{}`)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Notifications) != 1 || m.Notifications[0].Room != thread {
		t.Errorf("the tool's post goes to %+v, want %s", m.Notifications, thread)
	}
	l.apply(m)
	if v := plugin.Check(l.task, l.events, l.steps); len(v) > 0 {
		t.Errorf("Check: %v", v)
	}

	for _, tc := range []struct {
		room string
		want error
	}{{thread, plugin.ErrInvalidState}, {" ", plugin.ErrInvalid}, {"slack:C1", plugin.ErrInvalid}} {
		if _, err := plugin.Moved(l.task, tc.room, "discord", t0, nil); !errors.Is(err, tc.want) {
			t.Errorf("Moved(%q) = %v, want %v", tc.room, err, tc.want)
		}
	}
	ended, err := plugin.Canceled(l.task, "u1", "", t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plugin.Moved(ended.Task, channel, "discord", t0, nil); !errors.Is(err, plugin.ErrTerminal) {
		t.Errorf("moving a canceled task = %v, want ErrTerminal", err)
	}
}

// A message the platform already parsed runs the action it names with its
// parameters, whatever its text says; an action nobody registered falls
// back to reading the text.
func TestPipelineRunsAParsedCommandAsGiven(t *testing.T) {
	t.Parallel()
	f := newPipeline(t, nil, prefixed("create_task", "create task", func(_ context.Context, c *plugin.Call) (plugin.Result, error) {
		return plugin.Result{Success: true, Text: string(c.Params)}, nil
	}))
	got := f.send(t, plugin.Message{ID: "m1", Platform: "discord", Room: "discord:C1", Command: true,
		Text: "create task goal: Build auth", Action: "create_task", Params: json.RawMessage(`{"goal":"Build auth","strategy":"react"}`)})
	if !slices.Equal(got, []string{`{"goal":"Build auth","strategy":"react"}`}) {
		t.Errorf("replies = %q", got)
	}
	got = f.send(t, plugin.Message{ID: "m2", Platform: "discord", Room: "discord:C1", Command: true,
		Text: "create task Build auth", Action: "no_such_action", Params: json.RawMessage(`{}`)})
	if !slices.Equal(got, []string{`{"arg":"Build auth"}`}) {
		t.Errorf("replies = %q", got)
	}
}
