package domain

import (
	"fmt"
	"strings"
	"time"
)

// EventMoved: the task's chat room changed — a Discord task moved into the
// thread started for it (TASKLOOM_DISCORD_THREADS). Its detail names the
// room it left and how many waiting notifications went with it.
const EventMoved = "moved"

// Moved moves a task that has not ended to another room of the same
// platform: its progress, questions and completion go there from now on.
// detail is added to the event's own ("from": the room left).
func Moved(t Task, room, actor string, now time.Time, detail map[string]any) (Mutation, error) {
	room = strings.TrimSpace(room)
	switch {
	case t.Status.Terminal():
		return Mutation{}, refuse("move", t)
	case room == "":
		return Mutation{}, &TaskError{Op: "move", Number: t.Number, Err: fmt.Errorf("%w: no room to move to", ErrInvalid)}
	case room == t.RoomID:
		return Mutation{}, &TaskError{Op: "move", Number: t.Number, Err: fmt.Errorf("%w: it is in %s already", ErrInvalidState, room)}
	case t.RoomID != "" && RoomPlatform(room) != RoomPlatform(t.RoomID):
		return Mutation{}, &TaskError{Op: "move", Number: t.Number,
			Err: fmt.Errorf("%w: %s is not a room of %s, where the task is", ErrInvalid, room, RoomPlatform(t.RoomID))}
	}
	d := map[string]any{"from": t.RoomID}
	for k, v := range detail {
		d[k] = v
	}
	after := t
	after.RoomID = room
	return Change(t, after, EventMoved, actor, now, d)
}

// RoomPlatform is the platform prefix of a room name.
func RoomPlatform(room string) string {
	name, _, _ := strings.Cut(room, ":")
	return name
}
