package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// testOutboxRoomHeads: a room claim walks the rooms' heads, which every
// write of the outbox keeps from being later than the room's rows: after
// each write, the room that is due and oldest is the one claimed, and a
// room whose rows become due again is found.
func testOutboxRoomHeads(t *testing.T, s domain.Store) {
	ctx := t.Context()
	one := func(owner string, now time.Time) domain.RoomClaim {
		return domain.RoomClaim{Owner: owner, Now: now, Lease: time.Minute, Limit: 1}
	}
	expect := func(what string, c domain.RoomClaim, room string, want ...int64) []int64 {
		t.Helper()
		got, ids := claimRoom(t, s, c)
		if got != room || !slices.Equal(ids, want) {
			t.Fatalf("%s: claimed %q %v, want %q %v", what, got, ids, room, want)
		}
		return ids
	}

	// Mark sent: the room's head moves past the rows sent, so a room
	// whose oldest row is now older goes first.
	a1 := enqueue(t, s, "room-a", domain.NotifyProgress, t0)
	a2 := enqueue(t, s, "room-a", domain.NotifyProgress, at(10*time.Second))
	b1 := enqueue(t, s, "room-b", domain.NotifyProgress, at(5*time.Second))
	now := at(time.Minute)
	ids := expect("first claim", one("s1", now), "room-a", a1.ID)
	// A row enqueued into the held room waits; when the holder is done,
	// the room is free again at once.
	expect("claim while room-a is held", one("s2", now), "room-b", b1.ID)
	if err := s.MarkSent(ctx, "s1", ids, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.GiveBack(ctx, "s2", []int64{b1.ID}, now); err != nil {
		t.Fatal(err)
	}
	expect("claim after room-a's oldest row went", one("s3", now), "room-b", b1.ID)
	ids = expect("claim of room-a's next row", one("s4", now), "room-a", a2.ID)

	// Release with a backoff: the room's other rows are due at once, the
	// released one at its retry time.
	a3 := enqueue(t, s, "room-a", domain.NotifyProgress, at(20*time.Second))
	if err := s.Release(ctx, "s4", ids, at(5*time.Minute), "500"); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkSent(ctx, "s3", []int64{b1.ID}, nil); err != nil {
		t.Fatal(err)
	}
	ids = expect("claim after a release", one("s5", now), "room-a", a3.ID)
	if err := s.MarkSent(ctx, "s5", ids, nil); err != nil {
		t.Fatal(err)
	}
	expect("claim before the retry time", one("s6", at(4*time.Minute)), "")
	ids = expect("claim at the retry time", one("s6", at(5*time.Minute)), "room-a", a2.ID)

	// A dead letter retried is due again, in a room that had nothing
	// else pending (its head went when it failed and a claim passed).
	if err := s.MarkFailed(ctx, "s6", ids, at(5*time.Minute), "Unknown Channel"); err != nil {
		t.Fatal(err)
	}
	expect("claim with only a dead letter", one("s7", at(6*time.Minute)), "")
	if _, err := s.RetryNotification(ctx, a2.ID, at(7*time.Minute)); err != nil {
		t.Fatal(err)
	}
	ids = expect("claim of the retried row", one("s7", at(7*time.Minute)), "room-a", a2.ID)

	// An expired claim: another sender takes the room.
	expect("claim while the claim is live", one("s8", at(7*time.Minute+59*time.Second)), "")
	ids = expect("claim after it expired", one("s8", at(8*time.Minute)), "room-a", ids...)
	if err := s.MarkSent(ctx, "s8", ids, nil); err != nil {
		t.Fatal(err)
	}

	// A head left behind its rows (its oldest row failed) is passed over
	// for a room whose oldest row is older than the room's next one.
	e1 := enqueue(t, s, "room-e", domain.NotifyProgress, at(8*time.Minute+10*time.Second))
	f1 := enqueue(t, s, "room-f", domain.NotifyProgress, at(8*time.Minute+20*time.Second))
	e2 := enqueue(t, s, "room-e", domain.NotifyProgress, at(8*time.Minute+30*time.Second))
	ids = expect("claim of room-e", one("s10", at(8*time.Minute+40*time.Second)), "room-e", e1.ID)
	if err := s.MarkFailed(ctx, "s10", ids, at(8*time.Minute+40*time.Second), "Unknown Channel"); err != nil {
		t.Fatal(err)
	}
	ids = expect("claim after room-e's oldest row failed", one("s10", at(8*time.Minute+40*time.Second)), "room-f", f1.ID)
	if err := s.MarkSent(ctx, "s10", ids, nil); err != nil {
		t.Fatal(err)
	}
	ids = expect("claim of room-e's next row", one("s10", at(8*time.Minute+40*time.Second)), "room-e", e2.ID)
	if err := s.MarkSent(ctx, "s10", ids, nil); err != nil {
		t.Fatal(err)
	}

	// Urgent rows: the urgent walk finds the room by its terminal row,
	// and a room whose urgent row went is no longer urgent.
	c1 := enqueue(t, s, "room-c", domain.NotifyProgress, at(9*time.Minute))
	c2 := enqueue(t, s, "room-c", domain.NotifyTerminal, at(10*time.Minute))
	d1 := enqueue(t, s, "room-d", domain.NotifyTerminal, at(11*time.Minute))
	urgent := func(owner string, now time.Time) domain.RoomClaim {
		return domain.RoomClaim{Owner: owner, Now: now, Lease: time.Minute, Limit: 1,
			Categories: []string{domain.NotifyTerminal, domain.NotifyMessage, domain.NotifyReply}}
	}
	ids = expect("urgent claim", urgent("s9", at(12*time.Minute)), "room-c", c2.ID)
	if err := s.MarkSent(ctx, "s9", ids, nil); err != nil {
		t.Fatal(err)
	}
	ids = expect("urgent claim after room-c's terminal row went", urgent("s9", at(12*time.Minute)), "room-d", d1.ID)
	if err := s.MarkSent(ctx, "s9", ids, nil); err != nil {
		t.Fatal(err)
	}
	expect("urgent claim with none left", urgent("s9", at(12*time.Minute)), "")
	expect("claim of the progress left", one("s9", at(12*time.Minute)), "room-c", c1.ID)
}

// testOutboxRoomHeadsRepaired: the rooms' heads are derived from the rows
// and mended from them. A head whose rows went past the store (as a
// crash between writes would leave it, were they not in one transaction)
// is passed over and dropped by the claim that finds it; rows whose head
// went are found again once the store migrates (every start does).
func testOutboxRoomHeadsRepaired(t *testing.T, s domain.Store, exec func(t *testing.T, s domain.Store, query string)) {
	enqueue(t, s, "room-x", domain.NotifyProgress, t0)
	y1 := enqueue(t, s, "room-y", domain.NotifyProgress, at(time.Second))
	now := at(time.Minute)
	exec(t, s, `DELETE FROM notifications WHERE room = 'room-x'`)
	if room, ids := claimRoom(t, s, domain.RoomClaim{Owner: "s1", Now: now, Lease: time.Minute}); room != "room-y" ||
		!slices.Equal(ids, []int64{y1.ID}) {
		t.Fatalf("claim past a head whose rows went = %q %v, want room-y [%d]", room, ids, y1.ID)
	}
	if err := s.MarkSent(t.Context(), "s1", []int64{y1.ID}, nil); err != nil {
		t.Fatal(err)
	}
	if room, ids := claimRoom(t, s, domain.RoomClaim{Owner: "s1", Now: now, Lease: time.Minute}); room != "" {
		t.Fatalf("claim of an empty outbox = %q %v", room, ids)
	}

	z1 := enqueue(t, s, "room-z", domain.NotifyTerminal, at(2*time.Second))
	exec(t, s, `DELETE FROM notification_rooms`)
	if room, _ := claimRoom(t, s, domain.RoomClaim{Owner: "s1", Now: now, Lease: time.Minute}); room != "" {
		t.Fatalf("claimed %s with no head at all: the test no longer plays a lost head", room)
	}
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	urgent := []string{domain.NotifyTerminal}
	if room, ids := claimRoom(t, s, domain.RoomClaim{Owner: "s1", Now: now, Lease: time.Minute, Categories: urgent}); room != "room-z" ||
		!slices.Equal(ids, []int64{z1.ID}) {
		t.Fatalf("claim after the heads were mended = %q %v, want room-z [%d]", room, ids, z1.ID)
	}
}
