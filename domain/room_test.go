package domain_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// A task moved to its thread while an iteration ran: the tool's post,
// made with the room the iteration was claimed with, goes to the thread;
// the log still rebuilds the row.
func TestMovedTaskPostsWhereItIsNow(t *testing.T) {
	t.Parallel()
	const channel, thread = "discord:C1", "discord:C1:T1"
	l := newLife(t, domain.NewTask{Goal: "build auth", Platform: "discord", RoomID: channel, Now: t0})
	if err := l.do(domain.Claimed(l.task, domain.Claim{Owner: "w1", Now: t0, Lease: time.Minute})); err != nil {
		t.Fatal(err)
	}
	claimed := l.task
	if err := l.do(domain.Moved(l.task, thread, "discord", t0.Add(time.Second), nil)); err != nil {
		t.Fatal(err)
	}
	if l.task.RoomID != thread || l.events[len(l.events)-1].Type != domain.EventMoved {
		t.Fatalf("after Moved: room %q, event %s", l.task.RoomID, l.events[len(l.events)-1].Type)
	}
	m, err := domain.Iterated(l.task, domain.Outcome{
		Owner: "w1", Fence: claimed.Fence, Now: t0.Add(2 * time.Second), Progress: 10, Verdict: domain.VerdictContinue,
		Step:          domain.Step{Action: "ask_user", Params: json.RawMessage(`{}`), Success: true},
		Notifications: []domain.Notification{{Room: claimed.RoomID, Category: domain.NotifyMessage, Payload: json.RawMessage(`{}`)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Notifications) != 1 || m.Notifications[0].Room != thread {
		t.Errorf("the tool's post goes to %+v, want %s", m.Notifications, thread)
	}
	l.apply(m)
	if v := domain.Check(l.task, l.events, l.steps); len(v) > 0 {
		t.Errorf("Check: %v", v)
	}

	for _, tc := range []struct {
		room string
		want error
	}{{thread, domain.ErrInvalidState}, {" ", domain.ErrInvalid}, {"slack:C1", domain.ErrInvalid}} {
		if _, err := domain.Moved(l.task, tc.room, "discord", t0, nil); !errors.Is(err, tc.want) {
			t.Errorf("Moved(%q) = %v, want %v", tc.room, err, tc.want)
		}
	}
	ended, err := domain.Canceled(l.task, "u1", "", t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := domain.Moved(ended.Task, channel, "discord", t0, nil); !errors.Is(err, domain.ErrTerminal) {
		t.Errorf("moving a canceled task = %v, want ErrTerminal", err)
	}
}
