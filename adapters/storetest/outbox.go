package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

func enqueue(t *testing.T, s domain.Store, room, category string, created time.Time) domain.Notification {
	t.Helper()
	n, err := s.Enqueue(t.Context(), domain.Notification{
		Room: room, TaskNumber: 1, Category: category, CreatedAt: created,
		Payload: json.RawMessage(fmt.Sprintf(`{"room":%q,"at":%q}`, room, created.Format(time.RFC3339))),
	})
	if err != nil {
		t.Fatalf("Enqueue(%s): %v", room, err)
	}
	return n
}

func claimRoom(t *testing.T, s domain.Store, c domain.RoomClaim) (string, []int64) {
	t.Helper()
	room, ns, err := s.ClaimRoom(t.Context(), c)
	if err != nil {
		t.Fatalf("ClaimRoom(%+v): %v", c, err)
	}
	if room == "" && len(ns) > 0 {
		t.Fatalf("ClaimRoom returned no room but %d notifications", len(ns))
	}
	ids := make([]int64, len(ns))
	for i, n := range ns {
		if n.Room != room {
			t.Errorf("claimed a notification of %s with room %s", n.Room, room)
		}
		if i > 0 && (n.CreatedAt.Before(ns[i-1].CreatedAt) || (n.CreatedAt.Equal(ns[i-1].CreatedAt) && n.ID < ns[i-1].ID)) {
			t.Errorf("claimed notifications are not oldest first: %+v", ns)
		}
		ids[i] = n.ID
	}
	return room, ids
}

func pending(t *testing.T, s domain.Store) int {
	t.Helper()
	n, err := s.Pending(t.Context())
	if err != nil {
		t.Fatalf("Pending: %v", err)
	}
	return n
}

func testOutboxEnqueue(t *testing.T, s domain.Store) {
	n := enqueue(t, s, "room-1", domain.NotifyProgress, at(time.Second))
	if n.ID == 0 || n.Room != "room-1" || n.TaskNumber != 1 || n.Category != domain.NotifyProgress ||
		!n.CreatedAt.Equal(at(time.Second)) || !n.NextAttemptAt.Equal(at(time.Second)) || n.Attempts != 0 ||
		!jsonEqual(n.Payload, []byte(`{"room":"room-1","at":"2026-01-02T03:04:06Z"}`)) {
		t.Errorf("enqueued = %+v (payload %s)", n, n.Payload)
	}
	later, err := s.Enqueue(t.Context(), domain.Notification{Room: "room-1", Category: domain.NotifyError,
		CreatedAt: t0, NextAttemptAt: at(time.Hour)})
	if err != nil || !later.NextAttemptAt.Equal(at(time.Hour)) || later.ID <= n.ID {
		t.Errorf("enqueue for later = %+v, %v", later, err)
	}
	for _, bad := range []domain.Notification{
		{Room: "room-1", Category: domain.NotifyProgress, Payload: json.RawMessage(`{not json`)},
		{Category: domain.NotifyProgress},
		{Room: "room-1"},
	} {
		if _, err := s.Enqueue(t.Context(), bad); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("Enqueue(%+v) = %v, want ErrInvalid", bad, err)
		}
	}
	if got := pending(t, s); got != 2 {
		t.Errorf("Pending = %d, want 2", got)
	}
}

func testOutboxClaimExclusive(t *testing.T, s domain.Store) {
	a1 := enqueue(t, s, "room-a", domain.NotifyProgress, at(1*time.Second))
	b1 := enqueue(t, s, "room-b", domain.NotifyProgress, at(2*time.Second))
	a2 := enqueue(t, s, "room-a", domain.NotifyAction, at(3*time.Second))
	c := domain.RoomClaim{Now: at(time.Minute), Lease: time.Minute}

	c.Owner = "sender-1"
	room, ids := claimRoom(t, s, c)
	if room != "room-a" || !slices.Equal(ids, []int64{a1.ID, a2.ID}) {
		t.Fatalf("first claim = %s %v, want room-a (the oldest) with [%d %d]", room, ids, a1.ID, a2.ID)
	}
	c.Owner = "sender-2"
	if room, ids := claimRoom(t, s, c); room != "room-b" || !slices.Equal(ids, []int64{b1.ID}) {
		t.Fatalf("second claim = %s %v, want room-b [%d]", room, ids, b1.ID)
	}
	// A row that arrives while sender-1 holds room-a waits for it: one
	// sender per room at a time.
	enqueue(t, s, "room-a", domain.NotifyTerminal, at(time.Minute))
	c.Owner = "sender-3"
	if room, ids := claimRoom(t, s, c); room != "" {
		t.Errorf("third claim = %s %v, want nothing", room, ids)
	}
	c.Room = "room-a"
	if room, ids := claimRoom(t, s, c); room != "" {
		t.Errorf("claim of the held room-a = %s %v, want nothing", room, ids)
	}
	if got := pending(t, s); got != 4 {
		t.Errorf("Pending = %d, want 4 (claimed rows are pending until sent)", got)
	}
}

func testOutboxClaimExpiry(t *testing.T, s domain.Store) {
	n1 := enqueue(t, s, "room-a", domain.NotifyProgress, t0)
	n2 := enqueue(t, s, "room-a", domain.NotifyError, at(time.Second))
	c1 := domain.RoomClaim{Owner: "sender-1", Now: at(time.Minute), Lease: time.Minute}
	if room, ids := claimRoom(t, s, c1); room != "room-a" || len(ids) != 2 {
		t.Fatalf("claim = %s %v", room, ids)
	}
	c2 := domain.RoomClaim{Owner: "sender-2", Now: at(2*time.Minute - time.Microsecond), Lease: time.Minute}
	if room, _ := claimRoom(t, s, c2); room != "" {
		t.Fatalf("claimed %s before sender-1's claim expired", room)
	}
	// sender-1 stalls; its claim expires and sender-2 takes the room.
	c2.Now = at(2 * time.Minute)
	room, ids := claimRoom(t, s, c2)
	if room != "room-a" || !slices.Equal(ids, []int64{n1.ID, n2.ID}) {
		t.Fatalf("claim after expiry = %s %v", room, ids)
	}
	// sender-1 comes back and may no longer mark them sent.
	err := s.MarkSent(t.Context(), "sender-1", ids, []domain.RoomProgress{{Room: "room-a", TaskNumber: 1, Progress: 10}})
	if !errors.Is(err, domain.ErrStaleFence) {
		t.Errorf("MarkSent by the owner whose claim expired: %v, want ErrStaleFence", err)
	}
	if err := s.Release(t.Context(), "sender-1", ids, at(time.Hour), "late"); !errors.Is(err, domain.ErrStaleFence) {
		t.Errorf("Release by the owner whose claim expired: %v, want ErrStaleFence", err)
	}
	if got := pending(t, s); got != 2 {
		t.Errorf("Pending = %d after a refused MarkSent, want 2", got)
	}
	if got, err := s.LastSent(t.Context(), "room-a", []int64{1}); err != nil || len(got) != 0 {
		t.Errorf("LastSent after a refused MarkSent = %v, %v; want nothing", got, err)
	}
	if err := s.MarkSent(t.Context(), "sender-2", ids, nil); err != nil {
		t.Fatalf("MarkSent by the holder: %v", err)
	}
	if got := pending(t, s); got != 0 {
		t.Errorf("Pending = %d, want 0", got)
	}
	// Marking them again finds nothing of sender-2's.
	if err := s.MarkSent(t.Context(), "sender-2", ids, nil); !errors.Is(err, domain.ErrStaleFence) {
		t.Errorf("MarkSent twice: %v, want ErrStaleFence", err)
	}
}

func testOutboxRelease(t *testing.T, s domain.Store) {
	n1 := enqueue(t, s, "room-a", domain.NotifyProgress, t0)
	c := domain.RoomClaim{Owner: "sender-1", Now: at(time.Second), Lease: time.Minute}
	_, ids := claimRoom(t, s, c)
	retryAt := at(5 * time.Minute)
	if err := s.Release(t.Context(), "sender-1", ids, retryAt, "429 Too Many Requests"); err != nil {
		t.Fatalf("Release: %v", err)
	}
	// Not due before retryAt, for anyone.
	for _, now := range []time.Time{at(2 * time.Second), retryAt.Add(-time.Microsecond)} {
		if room, ids := claimRoom(t, s, domain.RoomClaim{Owner: "sender-2", Now: now, Lease: time.Minute}); room != "" {
			t.Errorf("claimed %s %v at %v, before the retry time", room, ids, now)
		}
	}
	_, ns, err := s.ClaimRoom(t.Context(), domain.RoomClaim{Owner: "sender-2", Now: retryAt, Lease: time.Minute})
	if err != nil || len(ns) != 1 {
		t.Fatalf("claim at the retry time = %v, %v", ns, err)
	}
	if n := ns[0]; n.ID != n1.ID || n.Attempts != 1 || n.LastError != "429 Too Many Requests" || !n.NextAttemptAt.Equal(retryAt) {
		t.Errorf("released notification = %+v", n)
	}
	// A second failure counts again.
	if err := s.Release(t.Context(), "sender-2", []int64{n1.ID}, at(10*time.Minute), "timeout"); err != nil {
		t.Fatal(err)
	}
	_, ns, err = s.ClaimRoom(t.Context(), domain.RoomClaim{Owner: "sender-3", Now: at(10 * time.Minute), Lease: time.Minute})
	if err != nil || len(ns) != 1 || ns[0].Attempts != 2 || ns[0].LastError != "timeout" {
		t.Errorf("after two failures = %+v, %v", ns, err)
	}
}

// testOutboxGiveBack: rows given back unsent are due again at the time
// given, for any sender, with no attempt counted and the last error kept.
func testOutboxGiveBack(t *testing.T, s domain.Store) {
	n1 := enqueue(t, s, "room-a", domain.NotifyProgress, t0)
	_, ids := claimRoom(t, s, domain.RoomClaim{Owner: "sender-1", Now: at(time.Second), Lease: time.Minute})
	if err := s.Release(t.Context(), "sender-1", ids, at(2*time.Second), "502 Bad Gateway"); err != nil {
		t.Fatal(err)
	}
	_, ids = claimRoom(t, s, domain.RoomClaim{Owner: "sender-1", Now: at(2 * time.Second), Lease: time.Minute})
	due := at(7 * time.Second)
	if err := s.GiveBack(t.Context(), "sender-1", ids, due); err != nil {
		t.Fatalf("GiveBack: %v", err)
	}
	if room, ids := claimRoom(t, s, domain.RoomClaim{Owner: "sender-2", Now: due.Add(-time.Microsecond), Lease: time.Minute}); room != "" {
		t.Errorf("claimed %s %v before the time it was given back for", room, ids)
	}
	_, ns, err := s.ClaimRoom(t.Context(), domain.RoomClaim{Owner: "sender-2", Now: due, Lease: time.Minute})
	if err != nil || len(ns) != 1 {
		t.Fatalf("claim at the due time = %v, %v", ns, err)
	}
	if n := ns[0]; n.ID != n1.ID || n.Attempts != 1 || n.LastError != "502 Bad Gateway" {
		t.Errorf("given-back notification = %+v, want attempts 1 and the last error kept", n)
	}
	// Only the holder gives rows back.
	if err := s.GiveBack(t.Context(), "sender-1", []int64{n1.ID}, due); !errors.Is(err, domain.ErrStaleFence) {
		t.Errorf("GiveBack by a sender that lost the rows: %v, want ErrStaleFence", err)
	}
}

// testOutboxSettleQueued: a reply queued ahead of its direct send, due
// once that send could no longer be running, is deleted when the send
// succeeds and made due at once when it fails; a row a sender holds, or
// whose send began, is not touched (that sender sends it under its key).
func testOutboxSettleQueued(t *testing.T, s domain.Store) {
	ctx := t.Context()
	later := at(time.Minute)
	queue := func(room string) domain.Notification {
		n, err := s.Enqueue(ctx, domain.Notification{Room: room, Category: domain.NotifyReply,
			Payload: []byte(`{"text":"Created task #1"}`), CreatedAt: t0, NextAttemptAt: later})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	sent, failed := queue("room-a"), queue("room-b")
	if room, ids := claimRoom(t, s, domain.RoomClaim{Owner: "sender-1", Now: at(time.Second), Lease: time.Minute}); room != "" {
		t.Fatalf("claimed %s %v before the replies were due", room, ids)
	}
	if err := s.SettleQueued(ctx, sent.ID, true, time.Time{}); err != nil {
		t.Fatalf("settle a sent reply: %v", err)
	}
	if err := s.SettleQueued(ctx, failed.ID, false, at(time.Second)); err != nil {
		t.Fatalf("settle a failed reply: %v", err)
	}
	room, ids := claimRoom(t, s, domain.RoomClaim{Owner: "sender-1", Now: at(time.Second), Lease: time.Minute})
	if room != "room-b" || !slices.Equal(ids, []int64{failed.ID}) {
		t.Fatalf("claim after settling = %s %v, want the failed reply of room-b, now due", room, ids)
	}
	if room, ids := claimRoom(t, s, domain.RoomClaim{Owner: "sender-2", Now: later, Lease: time.Hour}); room != "" {
		t.Fatalf("claimed %s %v: the sent reply was not deleted", room, ids)
	}
	// The failed reply is sender-1's now: settling it is refused and
	// changes nothing.
	if err := s.SettleQueued(ctx, failed.ID, true, time.Time{}); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("settle a claimed reply: %v, want ErrNotFound", err)
	}
	if err := s.SettleQueued(ctx, sent.ID, true, time.Time{}); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("settle a deleted reply: %v, want ErrNotFound", err)
	}
	if err := s.MarkSent(ctx, "sender-1", ids, nil); err != nil {
		t.Fatalf("the holder marks the claimed reply sent: %v", err)
	}
}

// testOutboxSkipPlatforms: a claim that skips a platform passes over its
// rooms, however long they have waited, to the next platform's; a room
// named like a platform's prefix without its colon is not taken for it.
func testOutboxSkipPlatforms(t *testing.T, s domain.Store) {
	enqueue(t, s, "slack:C1", domain.NotifyProgress, t0)
	enqueue(t, s, "slack:C2:1.5", domain.NotifyProgress, at(time.Second))
	enqueue(t, s, "slackish:C3", domain.NotifyProgress, at(2*time.Second))
	d := enqueue(t, s, "discord:4", domain.NotifyProgress, at(3*time.Second))
	c := domain.RoomClaim{Owner: "sender-1", Now: at(time.Minute), Lease: time.Minute, SkipPlatforms: []string{"slack"}}
	if room, _ := claimRoom(t, s, c); room != "slackish:C3" {
		t.Fatalf("first claim skipping slack = %s, want slackish:C3", room)
	}
	if room, ids := claimRoom(t, s, c); room != "discord:4" || !slices.Equal(ids, []int64{d.ID}) {
		t.Fatalf("second claim = %s %v, want discord:4", room, ids)
	}
	if room, ids := claimRoom(t, s, c); room != "" {
		t.Fatalf("third claim = %s %v, want none: only slack's rooms are left", room, ids)
	}
	c.SkipPlatforms = nil
	if room, _ := claimRoom(t, s, c); room != "slack:C1" {
		t.Fatalf("claim skipping nothing = %s, want slack:C1", room)
	}
}

func testOutboxCategories(t *testing.T, s domain.Store) {
	enqueue(t, s, "room-a", domain.NotifyProgress, t0)
	b1 := enqueue(t, s, "room-b", domain.NotifyProgress, at(time.Second))
	b2 := enqueue(t, s, "room-b", domain.NotifyTerminal, at(2*time.Second))
	c := domain.RoomClaim{Owner: "sender-1", Now: at(time.Minute), Lease: time.Minute,
		Categories: []string{domain.NotifyTerminal, domain.NotifyError}}
	// room-a is older but has no terminal row; room-b is claimed whole.
	if room, ids := claimRoom(t, s, c); room != "room-b" || !slices.Equal(ids, []int64{b1.ID, b2.ID}) {
		t.Fatalf("claim of terminal rooms = %s %v, want room-b [%d %d]", room, ids, b1.ID, b2.ID)
	}
	if room, ids := claimRoom(t, s, c); room != "" {
		t.Errorf("second claim of terminal rooms = %s %v, want nothing", room, ids)
	}
	c.Categories = nil
	if room, _ := claimRoom(t, s, c); room != "room-a" {
		t.Errorf("claim of any room = %s, want room-a", room)
	}
}

// testOutboxClaimLimit: a room claim takes at most its limit of new rows
// (a message's worth), terminal rows and posts first, then the rest, each
// oldest first; the rows of a message a send began on are claimed again
// whole, alone, before any other; the others wait for the next claim, and
// every row is claimed once.
func testOutboxClaimLimit(t *testing.T, s domain.Store) {
	var progress []int64
	for i := range 9 {
		progress = append(progress, enqueue(t, s, "room-a", domain.NotifyProgress, at(time.Duration(i)*time.Second)).ID)
	}
	term := enqueue(t, s, "room-a", domain.NotifyTerminal, at(10*time.Second)).ID
	post := enqueue(t, s, "room-a", domain.NotifyMessage, at(11*time.Second)).ID
	now, later := at(time.Minute), at(time.Hour)
	c := domain.RoomClaim{Owner: "sender-1", Now: now, Lease: time.Minute, Limit: 3}
	// The terminal row and the post go first, behind no backlog.
	k1 := []int64{progress[0], term, post}
	if room, got := claimRoom(t, s, c); room != "room-a" || !slices.Equal(got, k1) {
		t.Fatalf("first claim = %s %v, want room-a %v", room, got, k1)
	}
	// A send begins on those rows and fails: while the message waits for
	// its retry the room's other rows wait behind it (testOutboxOrder).
	if err := s.BeginSend(t.Context(), "sender-1", k1, "k1", now, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(t.Context(), "sender-1", k1, later, "timeout"); err != nil {
		t.Fatal(err)
	}
	c.Owner = "sender-2"
	if room, got := claimRoom(t, s, c); room != "" {
		t.Fatalf("second claim = %s %v, want nothing while the begun message waits", room, got)
	}
	// When it is due again, the message begun is claimed whole and alone,
	// before any other row — even a terminal row that came since, and
	// however high the limit.
	term2 := enqueue(t, s, "room-a", domain.NotifyTerminal, at(12*time.Second)).ID
	c.Now, c.Limit, c.Owner = later, 5, "sender-3"
	if _, got := claimRoom(t, s, c); !slices.Equal(got, k1) {
		t.Fatalf("claim after the begun send = %v, want the rows of its message %v", got, k1)
	}
	if err := s.MarkSent(t.Context(), c.Owner, k1, nil); err != nil {
		t.Fatal(err)
	}
	// The backlog goes out a limit at a time, each row once.
	c.Limit = 3
	var seen [][]int64
	for i := range 5 {
		c.Owner = fmt.Sprintf("sender-%d", 5+i)
		_, got := claimRoom(t, s, c)
		if len(got) == 0 {
			break
		}
		if err := s.MarkSent(t.Context(), c.Owner, got, nil); err != nil {
			t.Fatal(err)
		}
		seen = append(seen, got)
	}
	if want := [][]int64{{progress[1], progress[2], term2}, progress[3:6], progress[6:9]}; !reflect.DeepEqual(seen, want) {
		t.Errorf("the backlog was claimed as %v, want %v", seen, want)
	}
	// No limit asked: RoomClaimRows.
	for i := range domain.RoomClaimRows + 1 {
		enqueue(t, s, "room-b", domain.NotifyError, at(time.Duration(i)*time.Millisecond))
	}
	if _, got := claimRoom(t, s, domain.RoomClaim{Owner: "sender-9", Now: now, Lease: time.Minute}); len(got) != domain.RoomClaimRows {
		t.Errorf("a claim without a limit took %d rows, want %d", len(got), domain.RoomClaimRows)
	}
}

func testOutboxRoom(t *testing.T, s domain.Store) {
	enqueue(t, s, "room-a", domain.NotifyProgress, t0)
	b := enqueue(t, s, "room-b", domain.NotifyProgress, at(time.Second))
	enqueue(t, s, "room-c", domain.NotifyProgress, at(time.Hour)) // due later
	c := domain.RoomClaim{Owner: "sender-1", Now: at(time.Minute), Lease: time.Minute, Room: "room-b"}
	if room, ids := claimRoom(t, s, c); room != "room-b" || !slices.Equal(ids, []int64{b.ID}) {
		t.Errorf("claim of room-b = %s %v", room, ids)
	}
	c.Room = "room-c"
	if room, ids := claimRoom(t, s, c); room != "" {
		t.Errorf("claim of room-c before its row is due = %s %v", room, ids)
	}
	c.Room = "room-z"
	if room, ids := claimRoom(t, s, c); room != "" {
		t.Errorf("claim of an empty room = %s %v", room, ids)
	}
	c.Room = "room-a"
	c.Categories = []string{domain.NotifyTerminal}
	if room, ids := claimRoom(t, s, c); room != "" {
		t.Errorf("claim of room-a for terminal rows = %s %v, want nothing", room, ids)
	}
}

func testOutboxLastSent(t *testing.T, s domain.Store) {
	n := enqueue(t, s, "room-a", domain.NotifyProgress, t0)
	_, ids := claimRoom(t, s, domain.RoomClaim{Owner: "sender-1", Now: t0, Lease: time.Minute})
	sent := []domain.RoomProgress{{Room: "room-a", TaskNumber: 1, Progress: 40}, {Room: "room-a", TaskNumber: 2, Progress: 10}}
	if err := s.MarkSent(t.Context(), "sender-1", ids, sent); err != nil || !slices.Equal(ids, []int64{n.ID}) {
		t.Fatalf("MarkSent(%v): %v", ids, err)
	}
	// Progress alone (nothing to delete) is recorded too, and overwrites.
	if err := s.MarkSent(t.Context(), "sender-1", nil, []domain.RoomProgress{{Room: "room-a", TaskNumber: 1, Progress: 75},
		{Room: "room-b", TaskNumber: 1, Progress: 5}}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		room  string
		tasks []int64
		want  map[int64]int
	}{
		{"room-a", []int64{1, 2, 3}, map[int64]int{1: 75, 2: 10}},
		{"room-a", []int64{2}, map[int64]int{2: 10}},
		{"room-b", []int64{1, 2}, map[int64]int{1: 5}},
		{"room-c", []int64{1}, map[int64]int{}},
		{"room-a", nil, map[int64]int{}},
	}
	for _, tc := range cases {
		got, err := s.LastSent(t.Context(), tc.room, tc.tasks)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("LastSent(%s, %v) = %v, %v; want %v", tc.room, tc.tasks, got, err, tc.want)
		}
	}
	if got := pending(t, s); got != 0 {
		t.Errorf("Pending = %d, want 0", got)
	}
}

func testOutboxFromMutation(t *testing.T, s domain.Store) {
	task := create(t, s, newTask("Tell the room"))
	update(t, s, task.Number, func(cur domain.Task) (domain.Mutation, error) {
		m, err := domain.Paused(cur, "u1", at(time.Second))
		m.Notifications = []domain.Notification{{Room: cur.RoomID, Category: domain.NotifyProgress, Payload: json.RawMessage(`{"status":"paused"}`)}}
		return m, err
	})
	// A refused mutation enqueues nothing.
	_, err := s.UpdateTask(t.Context(), task.Number, func(cur domain.Task) (domain.Mutation, error) {
		m, err := domain.Paused(cur, "u1", at(2*time.Second))
		m.Notifications = []domain.Notification{{Room: cur.RoomID, Category: domain.NotifyError}}
		return m, err
	})
	if !errors.Is(err, domain.ErrInvalidState) {
		t.Fatalf("pausing twice: %v", err)
	}
	if got := pending(t, s); got != 1 {
		t.Fatalf("Pending = %d, want 1", got)
	}
	room, ns, err := s.ClaimRoom(t.Context(), domain.RoomClaim{Owner: "sender", Now: at(time.Minute), Lease: time.Minute})
	if err != nil || room != task.RoomID || len(ns) != 1 {
		t.Fatalf("ClaimRoom = %s %v, %v", room, ns, err)
	}
	if n := ns[0]; n.TaskNumber != task.Number || !n.CreatedAt.Equal(at(time.Second)) || !jsonEqual(n.Payload, []byte(`{"status":"paused"}`)) {
		t.Errorf("notification from the mutation = %+v", n)
	}
}

// testOutboxConcurrent has senders claim rooms at the same time and fails if
// two ever hold the same room or get the same row.
func testOutboxConcurrent(t *testing.T, s domain.Store) {
	const senders, rooms, perRoom = 4, 20, 3
	for r := range rooms {
		for i := range perRoom {
			enqueue(t, s, fmt.Sprintf("room-%02d", r), domain.NotifyProgress, at(time.Duration(r*perRoom+i)*time.Millisecond))
		}
	}
	ctx := ctxTimeout(t, time.Minute)
	var (
		mu      sync.Mutex
		held    = map[string]string{}
		claimed = map[int64]string{}
		batches = map[string]int{}
	)
	var wg sync.WaitGroup
	for w := range senders {
		owner := fmt.Sprintf("sender-%d", w)
		wg.Go(func() {
			for ctx.Err() == nil {
				room, ns, err := s.ClaimRoom(ctx, domain.RoomClaim{Owner: owner, Now: at(time.Minute), Lease: time.Hour})
				if err != nil {
					t.Errorf("%s: ClaimRoom: %v", owner, err)
					return
				}
				if room == "" {
					n, err := s.Pending(ctx)
					if err != nil || n == 0 {
						return
					}
					runtime.Gosched()
					continue
				}
				ids := make([]int64, len(ns))
				mu.Lock()
				if other, ok := held[room]; ok {
					t.Errorf("%s claimed %s while %s holds it", owner, room, other)
				}
				held[room] = owner
				batches[room]++
				for i, n := range ns {
					if other, ok := claimed[n.ID]; ok {
						t.Errorf("notification %d claimed by %s and %s", n.ID, other, owner)
					}
					claimed[n.ID] = owner
					ids[i] = n.ID
				}
				mu.Unlock()
				err = s.MarkSent(ctx, owner, ids, []domain.RoomProgress{{Room: room, TaskNumber: 1, Progress: len(ids)}})
				mu.Lock()
				delete(held, room)
				mu.Unlock()
				if err != nil {
					t.Errorf("%s: MarkSent: %v", owner, err)
					return
				}
			}
			t.Errorf("%s: timed out", owner)
		})
	}
	wg.Wait()
	if len(claimed) != rooms*perRoom {
		t.Errorf("%d notifications claimed, want %d", len(claimed), rooms*perRoom)
	}
	for r := range rooms {
		room := fmt.Sprintf("room-%02d", r)
		if batches[room] != 1 {
			t.Errorf("%s was claimed in %d batches, want its %d rows in one", room, batches[room], perRoom)
		}
	}
	if got := pending(t, s); got != 0 {
		t.Errorf("Pending = %d, want 0", got)
	}
}

// claimAll claims room for owner at now and returns its rows.
func claimAll(t *testing.T, s domain.Store, owner string, now time.Time, lease time.Duration) []domain.Notification {
	t.Helper()
	_, ns, err := s.ClaimRoom(t.Context(), domain.RoomClaim{Owner: owner, Now: now, Lease: lease})
	if err != nil {
		t.Fatalf("ClaimRoom(%s at %v): %v", owner, now, err)
	}
	return ns
}

func ids(ns []domain.Notification) []int64 {
	out := make([]int64, len(ns))
	for i, n := range ns {
		out[i] = n.ID
	}
	return out
}

// testOutboxRenewClaim: a sender renews its claim while it sends; the
// room stays its own past the first lease, and a sender whose claim was
// taken over renews nothing.
func testOutboxRenewClaim(t *testing.T, s domain.Store) {
	a1 := enqueue(t, s, "room-a", domain.NotifyProgress, t0)
	a2 := enqueue(t, s, "room-a", domain.NotifyError, at(time.Second))
	ns := claimAll(t, s, "sender-1", at(time.Minute), time.Minute)
	if !slices.Equal(ids(ns), []int64{a1.ID, a2.ID}) {
		t.Fatalf("claimed %v", ids(ns))
	}
	if err := s.RenewClaim(t.Context(), "sender-1", ids(ns), at(3*time.Minute)); err != nil {
		t.Fatalf("RenewClaim: %v", err)
	}
	if room, got := claimRoom(t, s, domain.RoomClaim{Owner: "sender-2", Now: at(3*time.Minute - time.Microsecond), Lease: time.Minute}); room != "" {
		t.Fatalf("sender-2 claimed %s %v within the renewed claim", room, got)
	}
	if err := s.RenewClaim(t.Context(), "sender-1", nil, at(time.Hour)); err != nil {
		t.Errorf("RenewClaim of nothing: %v", err)
	}
	// The renewed claim expires; sender-2 takes the room, and sender-1 can
	// no longer renew any of it, not even partly.
	if _, got := claimRoom(t, s, domain.RoomClaim{Owner: "sender-2", Now: at(3 * time.Minute), Lease: time.Minute}); len(got) != 2 {
		t.Fatalf("claim after the renewed claim expired = %v", got)
	}
	if err := s.RenewClaim(t.Context(), "sender-1", ids(ns), at(time.Hour)); !errors.Is(err, domain.ErrStaleFence) {
		t.Errorf("RenewClaim by the sender whose claim was taken: %v, want ErrStaleFence", err)
	}
	if room, got := claimRoom(t, s, domain.RoomClaim{Owner: "sender-3", Now: at(4 * time.Minute), Lease: time.Minute}); room != "room-a" || len(got) != 2 {
		t.Errorf("claim at sender-2's expiry = %s %v; sender-1's refused renewal must not have extended it", room, got)
	}
}

// testOutboxBeginSend: the key of a message being sent and the time its
// first attempt began stay on its rows for every later attempt.
func testOutboxBeginSend(t *testing.T, s domain.Store) {
	a1 := enqueue(t, s, "room-a", domain.NotifyProgress, t0)
	a2 := enqueue(t, s, "room-a", domain.NotifyError, at(time.Second))
	if n := a1; n.Status != domain.NotificationPending || n.DeliveryKey != "" || !n.SendingAt.IsZero() {
		t.Errorf("enqueued = %+v, want pending with no send begun", n)
	}
	ns := claimAll(t, s, "sender-1", at(time.Minute), time.Minute)
	if err := s.BeginSend(t.Context(), "sender-1", ids(ns), "k1", at(time.Minute), `{"text":"first"}`); err != nil {
		t.Fatalf("BeginSend: %v", err)
	}
	if err := s.BeginSend(t.Context(), "sender-1", ids(ns), "", at(time.Minute), ""); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("BeginSend without a key: %v, want ErrInvalid", err)
	}
	// sender-1 dies; sender-2 finds the rows as sender-1 left them.
	ns = claimAll(t, s, "sender-2", at(3*time.Minute), time.Minute)
	if len(ns) != 2 {
		t.Fatalf("claim after expiry = %v", ns)
	}
	for _, n := range ns {
		if n.DeliveryKey != "k1" || !n.SendingAt.Equal(at(time.Minute)) {
			t.Errorf("row %d after a begun send = key %q sending at %v; want k1 at %v", n.ID, n.DeliveryKey, n.SendingAt, at(time.Minute))
		}
	}
	// The rendering is kept once, on the message's first row.
	if got := renderings(ns); !slices.Equal(got, []string{`{"text":"first"}`, ""}) {
		t.Errorf("renderings after a begun send = %q; want the message on the first row only", got)
	}
	// sender-1 may not touch them now, not even one of them.
	if err := s.BeginSend(t.Context(), "sender-1", []int64{a1.ID}, "k2", at(3*time.Minute), ""); !errors.Is(err, domain.ErrStaleFence) {
		t.Errorf("BeginSend by the sender whose claim expired: %v, want ErrStaleFence", err)
	}
	// A second attempt keeps the first attempt's time and rendering.
	if err := s.BeginSend(t.Context(), "sender-2", []int64{a1.ID, a2.ID}, "k1", at(4*time.Minute), `{"text":"second"}`); err != nil {
		t.Fatalf("BeginSend again: %v", err)
	}
	if err := s.Release(t.Context(), "sender-2", []int64{a1.ID, a2.ID}, at(5*time.Minute), "timeout"); err != nil {
		t.Fatal(err)
	}
	again := claimAll(t, s, "sender-3", at(5*time.Minute), time.Hour)
	for _, n := range again {
		if n.DeliveryKey != "k1" || !n.SendingAt.Equal(at(time.Minute)) || n.Attempts != 1 {
			t.Errorf("row %d after a retry = %+v; want key k1, first sent at %v, 1 attempt", n.ID, n, at(time.Minute))
		}
	}
	if got := renderings(again); !slices.Equal(got, []string{`{"text":"first"}`, ""}) {
		t.Errorf("renderings after a second attempt = %q; want the first attempt's, kept", got)
	}
	// All or none: one row of another sender's refuses the whole call.
	b := enqueue(t, s, "room-b", domain.NotifyProgress, at(6*time.Minute))
	nb := claimAll(t, s, "sender-4", at(6*time.Minute), time.Minute)
	if err := s.BeginSend(t.Context(), "sender-4", append(ids(nb), a1.ID), "k3", at(6*time.Minute), ""); !errors.Is(err, domain.ErrStaleFence) {
		t.Errorf("BeginSend with a row of another sender: %v, want ErrStaleFence", err)
	}
	list, err := s.ListNotifications(t.Context(), "", b.ID-1, 1)
	if err != nil || len(list) != 1 || list[0].ID != b.ID || list[0].DeliveryKey != "" || !list[0].SendingAt.IsZero() {
		t.Errorf("room-b's row after a refused BeginSend = %+v, %v; want it untouched", list, err)
	}
}

// renderings are the Rendered of rows, in order.
func renderings(rows []domain.Notification) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Rendered
	}
	return out
}

// testOutboxDeadLetters: a notification given up on is kept, listed and
// never claimed, until it is retried.
func testOutboxDeadLetters(t *testing.T, s domain.Store) {
	a1 := enqueue(t, s, "room-a", domain.NotifyProgress, t0)
	a2 := enqueue(t, s, "room-a", domain.NotifyTerminal, at(time.Second))
	ns := claimAll(t, s, "sender-1", at(time.Minute), time.Minute)
	if err := s.BeginSend(t.Context(), "sender-1", ids(ns), "k1", at(time.Minute), ""); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkFailed(t.Context(), "sender-2", ids(ns), at(time.Minute), "not mine"); !errors.Is(err, domain.ErrStaleFence) {
		t.Errorf("MarkFailed by another sender: %v, want ErrStaleFence", err)
	}
	if err := s.MarkFailed(t.Context(), "sender-1", []int64{a1.ID}, at(2*time.Minute), "Unknown Channel"); err != nil {
		t.Fatalf("MarkFailed: %v", err)
	}
	if err := s.Release(t.Context(), "sender-1", []int64{a2.ID}, at(2*time.Minute), "timeout"); err != nil {
		t.Fatal(err)
	}
	if got := pending(t, s); got != 1 {
		t.Errorf("Pending = %d with one dead letter and one pending, want 1", got)
	}
	// Only the pending row is claimed, however late: the dead letter
	// neither goes out nor holds its room.
	if ns := claimAll(t, s, "sender-2", at(time.Hour), time.Minute); !slices.Equal(ids(ns), []int64{a2.ID}) {
		t.Errorf("claim with a dead letter in the room = %v, want only [%d]", ids(ns), a2.ID)
	}
	failed, err := s.ListNotifications(t.Context(), domain.NotificationFailed, 0, 0)
	if err != nil || len(failed) != 1 {
		t.Fatalf("failed notifications = %+v, %v", failed, err)
	}
	if f := failed[0]; f.ID != a1.ID || f.Status != domain.NotificationFailed || f.LastError != "Unknown Channel" ||
		!f.FailedAt.Equal(at(2*time.Minute)) || f.Attempts != 1 || f.DeliveryKey != "k1" || !jsonEqual(f.Payload, a1.Payload) {
		t.Errorf("dead letter = %+v", f)
	}
	if err := s.MarkFailed(t.Context(), "sender-1", []int64{a1.ID}, at(3*time.Minute), "again"); !errors.Is(err, domain.ErrStaleFence) {
		t.Errorf("MarkFailed of a dead letter: %v, want ErrStaleFence", err)
	}

	// Retrying: only a dead letter, and it is due at once with a fresh
	// count of attempts; its key stays, so the platform still knows it.
	if _, err := s.RetryNotification(t.Context(), a2.ID, at(time.Hour)); !errors.Is(err, domain.ErrInvalidState) {
		t.Errorf("RetryNotification of a pending row: %v, want ErrInvalidState", err)
	}
	if _, err := s.RetryNotification(t.Context(), a2.ID+100, at(time.Hour)); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("RetryNotification of no row: %v, want ErrNotFound", err)
	}
	r, err := s.RetryNotification(t.Context(), a1.ID, at(2*time.Hour))
	if err != nil {
		t.Fatalf("RetryNotification: %v", err)
	}
	if r.ID != a1.ID || r.Status != domain.NotificationPending || r.Attempts != 0 || r.LastError != "" || !r.FailedAt.IsZero() ||
		!r.RetriedAt.Equal(at(2*time.Hour)) || !r.NextAttemptAt.Equal(at(2*time.Hour)) || r.DeliveryKey != "k1" {
		t.Errorf("retried = %+v", r)
	}
	if _, err := s.RetryNotification(t.Context(), a1.ID, at(2*time.Hour)); !errors.Is(err, domain.ErrInvalidState) {
		t.Errorf("retrying twice: %v, want ErrInvalidState", err)
	}
	if got := pending(t, s); got != 2 {
		t.Errorf("Pending after the retry = %d, want 2", got)
	}
	// sender-2 still holds a2 until 1h+1m; at 2h the room is free.
	if ns := claimAll(t, s, "sender-3", at(2*time.Hour), time.Minute); !slices.Equal(ids(ns), []int64{a1.ID, a2.ID}) {
		t.Errorf("claim after the retry = %v, want [%d %d]", ids(ns), a1.ID, a2.ID)
	}
}

// testOutboxListNotifications: by status, in ID order, in pages.
func testOutboxListNotifications(t *testing.T, s domain.Store) {
	var all []int64
	for i := range 5 {
		all = append(all, enqueue(t, s, fmt.Sprintf("room-%d", i), domain.NotifyProgress, at(time.Duration(i)*time.Second)).ID)
	}
	for _, id := range []int64{all[1], all[3]} {
		_, ns, err := s.ClaimRoom(t.Context(), domain.RoomClaim{Owner: "sender", Now: at(time.Minute), Lease: time.Minute,
			Room: fmt.Sprintf("room-%d", slices.Index(all, id))})
		if err != nil || len(ns) != 1 {
			t.Fatalf("claim: %v %v", ns, err)
		}
		if err := s.MarkFailed(t.Context(), "sender", ids(ns), at(time.Minute), "gone"); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		status string
		after  int64
		limit  int
		want   []int64
	}{
		{"", 0, 0, all},
		{domain.NotificationFailed, 0, 0, []int64{all[1], all[3]}},
		{domain.NotificationPending, 0, 0, []int64{all[0], all[2], all[4]}},
		{domain.NotificationPending, 0, 2, []int64{all[0], all[2]}},
		{domain.NotificationPending, all[2], 2, []int64{all[4]}},
		{domain.NotificationFailed, all[3], 0, nil},
	}
	for _, tc := range cases {
		got, err := s.ListNotifications(t.Context(), tc.status, tc.after, tc.limit)
		if err != nil || !slices.Equal(ids(got), tc.want) {
			t.Errorf("ListNotifications(%q, %d, %d) = %v, %v; want %v", tc.status, tc.after, tc.limit, ids(got), err, tc.want)
		}
	}
	if _, err := s.ListNotifications(t.Context(), "sent", 0, 0); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("ListNotifications(sent): %v, want ErrInvalid", err)
	}
}

// testOutboxReplyNotHeldBehindProgress: a reply to a person queued after
// its direct send failed is claimed ahead of a backlog of progress, as a
// task's terminal message is: the person waits for it.
func testOutboxReplyNotHeldBehindProgress(t *testing.T, s domain.Store) {
	for i := range 9 {
		enqueue(t, s, "room-a", domain.NotifyProgress, at(time.Duration(i)*time.Second))
	}
	reply := enqueue(t, s, "room-a", domain.NotifyReply, at(10*time.Second)).ID
	c := domain.RoomClaim{Owner: "sender-1", Now: at(time.Minute), Lease: time.Minute, Limit: 3}
	if _, got := claimRoom(t, s, c); !slices.Contains(got, reply) {
		t.Fatalf("first claim = %v; want the reply #%d among them, ahead of the progress", got, reply)
	}
}
