package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// testOutboxOrder: a message a send began on that waits for its retry
// holds its room's later rows, whatever their category, so the room never
// sees an older state after a newer one; it holds no other room; it goes
// first when due, then the rows that waited behind it; a message given
// up on holds nothing.
func testOutboxOrder(t *testing.T, s domain.Store) {
	ctx := t.Context()
	old := enqueue(t, s, "room-a", domain.NotifyProgress, t0)
	ns := claimAll(t, s, "sender-1", at(time.Second), time.Minute)
	if err := s.BeginSend(ctx, "sender-1", ids(ns), "k-old", at(time.Second), `{"text":"0% → 10%"}`); err != nil {
		t.Fatal(err)
	}
	// A 500: the message waits a minute for its retry.
	retry := at(time.Minute)
	if err := s.Release(ctx, "sender-1", ids(ns), retry, "500 Internal Server Error"); err != nil {
		t.Fatal(err)
	}
	// The task moves on and ends meanwhile; another room has a row too,
	// newer than room-a's.
	newer := enqueue(t, s, "room-a", domain.NotifyProgress, at(2*time.Second))
	ended := enqueue(t, s, "room-a", domain.NotifyTerminal, at(3*time.Second))
	post := enqueue(t, s, "room-a", domain.NotifyMessage, at(4*time.Second))
	b := enqueue(t, s, "room-b", domain.NotifyProgress, at(5*time.Second))
	for _, cats := range [][]string{nil, {domain.NotifyTerminal, domain.NotifyMessage}} {
		c := domain.RoomClaim{Owner: "sender-2", Now: at(10 * time.Second), Lease: time.Minute, Categories: cats}
		if room, got := claimRoom(t, s, c); room != "room-b" || !slices.Equal(got, []int64{b.ID}) {
			if len(cats) == 0 {
				t.Errorf("claim while room-a's message waits = %s %v; want room-b [%d] (room-a held, room-b not)", room, got, b.ID)
			}
			if room == "room-a" {
				t.Fatalf("claimed room-a's later rows %v while its begun message waits for its retry", got)
			}
		}
		if room, got := claimRoom(t, s, domain.RoomClaim{Owner: "sender-3", Now: at(20 * time.Second), Lease: time.Minute,
			Room: "room-a", Categories: cats}); room != "" {
			t.Fatalf("claim of room-a (categories %v) while its begun message waits = %s %v; want nothing", cats, room, got)
		}
	}
	// At its retry time the waiting message goes first, alone, as begun.
	room, got := claimRoom(t, s, domain.RoomClaim{Owner: "sender-4", Now: retry, Lease: time.Minute})
	if room != "room-a" || !slices.Equal(got, []int64{old.ID}) {
		t.Fatalf("claim at the retry time = %s %v; want room-a's begun message [%d] alone", room, got, old.ID)
	}
	if err := s.MarkSent(ctx, "sender-4", got, []domain.RoomProgress{{Room: "room-a", TaskNumber: 1, Progress: 10}}); err != nil {
		t.Fatal(err)
	}
	room, got = claimRoom(t, s, domain.RoomClaim{Owner: "sender-4", Now: retry, Lease: time.Minute})
	if want := []int64{newer.ID, ended.ID, post.ID}; room != "room-a" || !slices.Equal(got, want) {
		t.Fatalf("claim after the waiting message went = %s %v; want room-a %v", room, got, want)
	}

	// A message given back unsent by the pacer after its send began
	// (GiveBack) waits as well; one given up on (failed) holds nothing.
	c1 := enqueue(t, s, "room-c", domain.NotifyMessage, at(time.Hour))
	_, cs := claimRoom(t, s, domain.RoomClaim{Owner: "sender-5", Now: at(time.Hour), Lease: time.Minute, Room: "room-c"})
	if err := s.BeginSend(ctx, "sender-5", cs, "k-c", at(time.Hour), `{"text":"question"}`); err != nil {
		t.Fatal(err)
	}
	if err := s.GiveBack(ctx, "sender-5", cs, at(time.Hour+time.Minute)); err != nil {
		t.Fatal(err)
	}
	c2 := enqueue(t, s, "room-c", domain.NotifyProgress, at(time.Hour+time.Second))
	if room, got := claimRoom(t, s, domain.RoomClaim{Owner: "sender-6", Now: at(time.Hour + 2*time.Second), Lease: time.Minute,
		Room: "room-c"}); room != "" {
		t.Fatalf("claim of room-c while its question waits for its turn = %s %v; want nothing", room, got)
	}
	_, cs = claimRoom(t, s, domain.RoomClaim{Owner: "sender-6", Now: at(time.Hour + time.Minute), Lease: time.Minute, Room: "room-c"})
	if !slices.Equal(cs, []int64{c1.ID}) {
		t.Fatalf("claim at the question's time = %v; want [%d]", cs, c1.ID)
	}
	if err := s.MarkFailed(ctx, "sender-6", cs, at(time.Hour+time.Minute), "gone"); err != nil {
		t.Fatal(err)
	}
	if room, got := claimRoom(t, s, domain.RoomClaim{Owner: "sender-7", Now: at(time.Hour + time.Minute), Lease: time.Minute,
		Room: "room-c"}); room != "room-c" || !slices.Equal(got, []int64{c2.ID}) {
		t.Errorf("claim of room-c after its question was given up on = %s %v; want [%d]", room, got, c2.ID)
	}
}

// testOutboxProgressNeverBack: the progress recorded as a room's last
// seen is never moved back by a message rendered against an older
// record and marked sent late; a message that showed a drop from what
// the room had seen (a review sending work back) records it.
func testOutboxProgressNeverBack(t *testing.T, s domain.Store) {
	ctx := t.Context()
	mark := func(p ...domain.RoomProgress) {
		t.Helper()
		if err := s.MarkSent(ctx, "sender-1", nil, p); err != nil {
			t.Fatal(err)
		}
	}
	last := func() int {
		t.Helper()
		got, err := s.LastSent(ctx, "room-a", []int64{1})
		if err != nil {
			t.Fatal(err)
		}
		return got[1]
	}
	mark(domain.RoomProgress{Room: "room-a", TaskNumber: 1, Progress: 38, From: 0})
	// The old "0% → 10%", sent after "0% → 38%".
	mark(domain.RoomProgress{Room: "room-a", TaskNumber: 1, Progress: 10, From: 0})
	if got := last(); got != 38 {
		t.Errorf("after a late message rendered from 0%% = %d%%, want 38%% kept", got)
	}
	mark(domain.RoomProgress{Room: "room-a", TaskNumber: 1, Progress: 60, From: 38})
	if got := last(); got != 60 {
		t.Errorf("after 38%% → 60%% = %d%%, want 60%%", got)
	}
	// "60% → 30%": the room was shown the drop.
	mark(domain.RoomProgress{Room: "room-a", TaskNumber: 1, Progress: 30, From: 60})
	if got := last(); got != 30 {
		t.Errorf("after a drop shown from 60%% = %d%%, want 30%%", got)
	}
	// A late "38% → 25%", rendered against the record before the drop,
	// changes nothing.
	mark(domain.RoomProgress{Room: "room-a", TaskNumber: 1, Progress: 25, From: 38})
	if got := last(); got != 30 {
		t.Errorf("after a late message rendered from 38%% = %d%%, want 30%% kept", got)
	}
}
