package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// testMoveTask: MoveTask moves a task to another room with a "moved"
// event, takes along its notifications waiting for the old room that no
// send has begun on, and leaves everything else where it was; a refused
// move changes nothing.
func testMoveTask(t *testing.T, s domain.Store) {
	ctx := t.Context()
	const channel, thread = "discord:C1", "discord:C1:T1"
	in := newTask("move me")
	in.RoomID = channel
	task := create(t, s, in)
	other := create(t, s, in)

	note := func(task int64, room string) domain.Notification {
		t.Helper()
		n, err := s.Enqueue(ctx, domain.Notification{Room: room, TaskNumber: task, Category: domain.NotifyProgress, CreatedAt: t0})
		if err != nil {
			t.Fatalf("Enqueue: %v", err)
		}
		return n
	}
	// begun: a send began (it has a delivery key), then was released;
	// held: a sender holds it right now (claimed with begun, whose
	// waiting message would hold any later claim of the room).
	begun := note(task.Number, channel)
	held := note(task.Number, channel)
	if _, ids := claimRoom(t, s, domain.RoomClaim{Owner: "s1", Now: at(time.Second), Lease: time.Minute, Room: channel}); len(ids) != 2 {
		t.Fatalf("claimed %v, want the two notifications", ids)
	}
	if err := s.BeginSend(ctx, "s1", []int64{begun.ID}, "key-1", at(time.Second), ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "s1", []int64{begun.ID}, at(time.Hour), "timeout"); err != nil {
		t.Fatal(err)
	}
	waiting := note(task.Number, channel)
	othersNote := note(other.Number, channel)
	elsewhere := note(task.Number, "discord:C9")

	moved, err := s.MoveTask(ctx, task.Number, thread, "bot", at(time.Minute))
	if err != nil {
		t.Fatalf("MoveTask: %v", err)
	}
	if moved.RoomID != thread || moved.EventSeq != task.EventSeq+1 || get(t, s, task.Number) != moved {
		t.Errorf("moved task = room %q seq %d; stored %+v", moved.RoomID, moved.EventSeq, get(t, s, task.Number))
	}
	if got := get(t, s, other.Number).RoomID; got != channel {
		t.Errorf("the other task moved to %q", got)
	}
	evs := events(t, s, task.Number)
	last := evs[len(evs)-1]
	var p domain.EventPayload
	if err := json.Unmarshal(last.Payload, &p); err != nil {
		t.Fatal(err)
	}
	if last.Type != domain.EventMoved || last.Actor != "bot" || !last.Time.Equal(at(time.Minute)) ||
		!jsonEqual(p.Changes["room_id"], []byte(`"`+thread+`"`)) || p.Detail["from"] != channel || p.Detail["notifications_moved"] != 1.0 {
		t.Errorf("moved event = %s %s by %s at %v", last.Type, last.Payload, last.Actor, last.Time)
	}
	if v := domain.Check(moved, evs, 0); len(v) > 0 {
		t.Errorf("the event log does not rebuild the moved task: %v", v)
	}

	all, err := s.ListNotifications(ctx, "", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]string{begun.ID: channel, held.ID: channel, waiting.ID: thread, othersNote.ID: channel, elsewhere.ID: "discord:C9"}
	for _, n := range all {
		if n.Room != want[n.ID] {
			t.Errorf("notification %d (task #%d) is for %s, want %s", n.ID, n.TaskNumber, n.Room, want[n.ID])
		}
	}
	if room, ns, err := s.ClaimRoom(ctx, domain.RoomClaim{Owner: "s3", Now: at(2 * time.Minute), Lease: time.Minute, Room: thread}); err != nil ||
		room != thread || len(ns) != 1 || ns[0].ID != waiting.ID {
		t.Errorf("ClaimRoom(thread) = %s %+v, %v; want the moved notification", room, ns, err)
	}

	// Refusals change nothing.
	before := get(t, s, task.Number)
	for _, tc := range []struct {
		number int64
		room   string
		want   error
	}{
		{task.Number, thread, domain.ErrInvalidState}, // there already
		{task.Number, "", domain.ErrInvalid},
		{task.Number, "slack:C1", domain.ErrInvalid}, // another platform
		{99, thread, domain.ErrNotFound},
	} {
		if _, err := s.MoveTask(ctx, tc.number, tc.room, "bot", at(3*time.Minute)); !errors.Is(err, tc.want) {
			t.Errorf("MoveTask(#%d, %q) = %v, want %v", tc.number, tc.room, err, tc.want)
		}
	}
	if after := get(t, s, task.Number); after != before {
		t.Errorf("a refused move changed the task: %+v", after)
	}

	// A task that has ended stays where it ended, with its notifications.
	if _, err := s.UpdateTask(ctx, other.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Canceled(cur, "u1", "", at(4*time.Minute))
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MoveTask(ctx, other.Number, thread, "bot", at(5*time.Minute)); !errors.Is(err, domain.ErrTerminal) {
		t.Errorf("moving a canceled task = %v, want ErrTerminal", err)
	}
	ns, err := s.ListNotifications(ctx, "", othersNote.ID-1, 1)
	if err != nil || len(ns) != 1 || ns[0].Room != channel {
		t.Errorf("the canceled task's notification = %+v, %v; want it left in %s", ns, err, channel)
	}
}
