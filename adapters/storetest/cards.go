package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// testTaskCards: MarkCardSent records a task's card per room together
// with marking its rows sent, replaces it when the card is posted again,
// and records nothing for a sender whose rows were taken by another; a
// card without its fields is refused and changes nothing.
func testTaskCards(t *testing.T, s domain.Store) {
	ctx := t.Context()
	card := func(room string, task int64) (domain.TaskCard, error) {
		t.Helper()
		return s.TaskCard(ctx, room, task)
	}
	if _, err := card("room-a", 1); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("TaskCard before any = %v; want ErrNotFound", err)
	}

	first := enqueue(t, s, "room-a", domain.NotifyProgress, t0)
	_, ids := claimRoom(t, s, domain.RoomClaim{Owner: "sender-1", Now: t0, Lease: time.Minute})
	posted := domain.TaskCard{Room: "room-a", TaskNumber: 1, MessageID: "m-1", UpdatedAt: at(time.Second)}
	if err := s.MarkCardSent(ctx, "sender-1", ids, []domain.RoomProgress{{Room: "room-a", TaskNumber: 1, Progress: 30}}, posted); err != nil {
		t.Fatalf("MarkCardSent(%v): %v", ids, err)
	}
	if got, err := card("room-a", 1); err != nil || got != posted {
		t.Fatalf("TaskCard = %+v, %v; want %+v", got, err, posted)
	}
	if got, err := s.LastSent(ctx, "room-a", []int64{1}); err != nil || got[1] != 30 {
		t.Errorf("LastSent = %v, %v; want the progress recorded with the card", got, err)
	}
	if n := pending(t, s); n != 0 {
		t.Errorf("Pending = %d; want notification %d marked sent", n, first.ID)
	}
	// The same task has a card of its own in another room, and another
	// task one in the same room.
	for _, c := range []domain.TaskCard{
		{Room: "room-b", TaskNumber: 1, MessageID: "m-b", UpdatedAt: at(2 * time.Second)},
		{Room: "room-a", TaskNumber: 2, MessageID: "m-2", UpdatedAt: at(2 * time.Second)},
	} {
		if err := s.MarkCardSent(ctx, "sender-1", nil, nil, c); err != nil {
			t.Fatal(err)
		}
	}

	// Posted again (someone deleted it): the new message replaces the old.
	enqueue(t, s, "room-a", domain.NotifyProgress, at(time.Minute))
	_, ids = claimRoom(t, s, domain.RoomClaim{Owner: "sender-1", Now: at(time.Minute), Lease: time.Minute})
	again := domain.TaskCard{Room: "room-a", TaskNumber: 1, MessageID: "m-3", UpdatedAt: at(time.Minute)}
	if err := s.MarkCardSent(ctx, "sender-1", ids, nil, again); err != nil {
		t.Fatal(err)
	}
	want := map[[2]any]string{{"room-a", int64(1)}: "m-3", {"room-b", int64(1)}: "m-b", {"room-a", int64(2)}: "m-2"}
	for k, id := range want {
		got, err := card(k[0].(string), k[1].(int64))
		if err != nil || got.MessageID != id {
			t.Errorf("TaskCard(%s, #%d) = %+v, %v; want message %s", k[0], k[1], got, err, id)
		}
	}
	if got, _ := card("room-a", 1); !got.UpdatedAt.Equal(at(time.Minute)) {
		t.Errorf("UpdatedAt = %v; want %v", got.UpdatedAt, at(time.Minute))
	}

	// A sender whose claim expired and whose rows another took records
	// nothing: the new holder finds the message and records it.
	enqueue(t, s, "room-a", domain.NotifyProgress, at(2*time.Minute))
	_, stale := claimRoom(t, s, domain.RoomClaim{Owner: "sender-1", Now: at(2 * time.Minute), Lease: time.Minute})
	if _, ids := claimRoom(t, s, domain.RoomClaim{Owner: "sender-2", Now: at(4 * time.Minute), Lease: time.Minute}); len(ids) != 1 {
		t.Fatalf("the second sender claimed %v", ids)
	}
	late := domain.TaskCard{Room: "room-a", TaskNumber: 1, MessageID: "m-late", UpdatedAt: at(4 * time.Minute)}
	if err := s.MarkCardSent(ctx, "sender-1", stale, nil, late); !errors.Is(err, domain.ErrStaleFence) {
		t.Fatalf("MarkCardSent by a sender whose rows were taken = %v; want ErrStaleFence", err)
	}
	if got, _ := card("room-a", 1); got.MessageID != "m-3" {
		t.Errorf("a stale sender's card was recorded: %+v", got)
	}
	if n := pending(t, s); n != 1 {
		t.Errorf("Pending = %d; want the taken row still pending", n)
	}

	// A card that names no message, room, task or time is refused.
	for _, bad := range []domain.TaskCard{
		{Room: "room-a", TaskNumber: 1, UpdatedAt: t0},
		{TaskNumber: 1, MessageID: "m", UpdatedAt: t0},
		{Room: "room-a", MessageID: "m", UpdatedAt: t0},
		{Room: "room-a", TaskNumber: 1, MessageID: "m"},
	} {
		if err := s.MarkCardSent(ctx, "sender-2", nil, nil, bad); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("MarkCardSent(%+v) = %v; want ErrInvalid", bad, err)
		}
	}
	if got, _ := card("room-a", 1); got.MessageID != "m-3" {
		t.Errorf("a refused card changed the card: %+v", got)
	}
}
