package storetest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

func testMemoryDedup(t *testing.T, s domain.Store) {
	first := domain.Memory{Platform: "discord", MessageID: "1001", Room: "room-1", WorkspaceID: "guild-1",
		AuthorID: "u1", AuthorName: "Ada", Text: "start a task", CreatedAt: at(time.Second)}
	stored, isNew, err := s.SaveMemory(t.Context(), first)
	if err != nil || !isNew || stored.ID == 0 {
		t.Fatalf("SaveMemory = %+v, %v, %v", stored, isNew, err)
	}
	want := first
	want.ID = stored.ID
	if !sameMemory(stored, want) {
		t.Errorf("stored memory = %+v, want %+v", stored, want)
	}

	// A redelivery, even with other content, returns what was stored.
	again := first
	again.Text = "edited"
	got, isNew, err := s.SaveMemory(t.Context(), again)
	if err != nil || isNew || !sameMemory(got, want) {
		t.Errorf("redelivered SaveMemory = %+v, new=%v, %v; want the stored one, false", got, isNew, err)
	}

	cases := []struct {
		name string
		m    domain.Memory
	}{
		{"same message ID on another platform", domain.Memory{Platform: "slack", MessageID: "1001", Room: "room-1", Text: "hi"}},
		{"no message ID", domain.Memory{Platform: "discord", Room: "room-1", Text: "bot reply", FromBot: true}},
		{"no message ID again", domain.Memory{Platform: "discord", Room: "room-1", Text: "bot reply", FromBot: true}},
	}
	ids := map[int64]bool{stored.ID: true}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, isNew, err := s.SaveMemory(t.Context(), tc.m)
			if err != nil || !isNew || ids[m.ID] || m.FromBot != tc.m.FromBot || m.Text != tc.m.Text {
				t.Errorf("SaveMemory = %+v, new=%v, %v; want a new memory", m, isNew, err)
			}
			ids[m.ID] = true
		})
	}
	all, err := s.RecentMemories(t.Context(), "room-1", 100)
	if err != nil || len(all) != 4 {
		t.Errorf("RecentMemories = %d memories, %v; want 4", len(all), err)
	}
}

func testRecentMemories(t *testing.T, s domain.Store) {
	for i := range 5 {
		for _, room := range []string{"room-1", "room-2"} {
			m := domain.Memory{Platform: "discord", MessageID: fmt.Sprintf("%s-%d", room, i), Room: room,
				Text: fmt.Sprintf("message %d", i), CreatedAt: at(time.Duration(i) * time.Second)}
			if _, _, err := s.SaveMemory(t.Context(), m); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := []struct {
		room  string
		limit int
		want  []string
	}{
		{"room-1", 3, []string{"message 2", "message 3", "message 4"}},
		{"room-1", 1, []string{"message 4"}},
		{"room-2", 10, []string{"message 0", "message 1", "message 2", "message 3", "message 4"}},
		{"room-3", 10, nil},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%d", tc.room, tc.limit), func(t *testing.T) {
			got, err := s.RecentMemories(t.Context(), tc.room, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			var texts []string
			for _, m := range got {
				if m.Room != tc.room {
					t.Errorf("memory of %s in %s", m.Room, tc.room)
				}
				texts = append(texts, m.Text)
			}
			if fmt.Sprint(texts) != fmt.Sprint(tc.want) {
				t.Errorf("RecentMemories = %q, want %q", texts, tc.want)
			}
		})
	}
}

func testEventsSince(t *testing.T, s domain.Store) {
	a := create(t, s, newTask("First"))
	b := create(t, s, newTask("Second"))
	c := claim(t, s, "w1", t0, time.Minute)
	iterate(t, s, c, at(time.Second), 30, domain.VerdictContinue)
	update(t, s, b.Number, func(cur domain.Task) (domain.Mutation, error) { return domain.Paused(cur, "u1", at(2*time.Second)) })
	create(t, s, newTask("Third"))
	// created #1, created #2, claimed #1, iterated #1, paused #2, created #3.
	wantOrder := []struct {
		task int64
		seq  int64
	}{{a.Number, 1}, {b.Number, 1}, {a.Number, 2}, {a.Number, 3}, {b.Number, 2}, {3, 1}}

	all, err := s.EventsSince(t.Context(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(wantOrder) {
		t.Fatalf("EventsSince(0) = %d events, want %d", len(all), len(wantOrder))
	}
	for i, e := range all {
		if e.TaskNumber != wantOrder[i].task || e.Sequence != wantOrder[i].seq {
			t.Errorf("event %d is #%d/%d, want #%d/%d", i, e.TaskNumber, e.Sequence, wantOrder[i].task, wantOrder[i].seq)
		}
		if i > 0 && e.ID <= all[i-1].ID {
			t.Errorf("event ids not increasing: %d after %d", e.ID, all[i-1].ID)
		}
	}
	// The same events, page by page.
	var paged []domain.TaskEvent
	for after := int64(0); ; {
		page, err := s.EventsSince(t.Context(), after, 4)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > 4 {
			t.Fatalf("page of %d events with limit 4", len(page))
		}
		if len(page) == 0 {
			break
		}
		paged = append(paged, page...)
		after = page[len(page)-1].ID
	}
	if len(paged) != len(all) {
		t.Fatalf("paging returned %d events, want %d", len(paged), len(all))
	}
	for i := range all {
		if paged[i].ID != all[i].ID || !jsonEqual(paged[i].Payload, all[i].Payload) || !paged[i].Time.Equal(all[i].Time) {
			t.Errorf("paged event %d = %+v, want %+v", i, paged[i], all[i])
		}
	}
	if rest, err := s.EventsSince(t.Context(), all[len(all)-1].ID, 10); err != nil || len(rest) != 0 {
		t.Errorf("EventsSince(last) = %v, %v; want none", rest, err)
	}
	// EventsSince and TaskEvents agree.
	one := events(t, s, a.Number)
	if len(one) != 3 || one[2].ID != all[3].ID {
		t.Errorf("TaskEvents(#1) = %v", one)
	}
}

func sameMemory(a, b domain.Memory) bool {
	ta, tb := a.CreatedAt, b.CreatedAt
	a.CreatedAt, b.CreatedAt = time.Time{}, time.Time{}
	return a == b && ta.Equal(tb)
}

// testEventsSinceWhileWriting reads the event log the way a Server-Sent
// Events stream does — resuming after the last ID seen — while writers
// commit concurrently, and fails if the reader ever skips an event (one
// whose ID became visible after a higher one).
func testEventsSinceWhileWriting(t *testing.T, s domain.Store) {
	const writers, each = 4, 60
	ctx := ctxTimeout(t, 2*time.Minute)
	var done atomic.Bool
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				task, err := s.CreateTask(ctx, newTask(fmt.Sprintf("Writer %d task %d", w, i)))
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				if _, err := s.UpdateTask(ctx, task.Number, func(cur domain.Task) (domain.Mutation, error) {
					return domain.Paused(cur, "u1", t0)
				}); err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		})
	}
	seen := map[int64]bool{}
	var after int64
	read := func() {
		page, err := s.EventsSince(ctx, after, 50)
		if err != nil {
			t.Fatalf("EventsSince(%d): %v", after, err)
		}
		for _, e := range page {
			seen[e.ID] = true
			after = e.ID
		}
	}
	go func() { wg.Wait(); done.Store(true) }()
	for !done.Load() && ctx.Err() == nil {
		read()
	}
	wg.Wait()
	for range writers * each * 2 {
		read() // drain
	}
	all, err := s.EventsSince(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != writers*each*2 {
		t.Errorf("%d events, want %d", len(all), writers*each*2)
	}
	missed := 0
	for _, e := range all {
		if !seen[e.ID] {
			missed++
		}
	}
	if missed > 0 {
		t.Errorf("a reader resuming by ID missed %d of %d events", missed, len(all))
	}
}

// testPruneMemories: memories older than the cut are deleted, newer ones
// and every task event kept.
func testPruneMemories(t *testing.T, s domain.Store) {
	for i, d := range []time.Duration{time.Hour, 2 * time.Hour, 30 * 24 * time.Hour, 31 * 24 * time.Hour} {
		m := domain.Memory{Platform: "discord", MessageID: fmt.Sprint(2000 + i), Room: "room-1", Text: fmt.Sprint("m", i), CreatedAt: at(d)}
		if _, _, err := s.SaveMemory(t.Context(), m); err != nil {
			t.Fatal(err)
		}
	}
	task := create(t, s, newTask("keep my events"))
	n, err := s.PruneMemories(t.Context(), at(30*24*time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("PruneMemories = %d, %v; want the 2 older ones", n, err)
	}
	left, err := s.RecentMemories(t.Context(), "room-1", 0)
	if err != nil || len(left) != 2 || left[0].Text != "m2" || left[1].Text != "m3" {
		t.Fatalf("left = %+v, %v; want m2 and m3", left, err)
	}
	if evs := events(t, s, task.Number); len(evs) != 1 {
		t.Fatalf("events of #%d after pruning = %d; want them kept", task.Number, len(evs))
	}
	if n, err := s.PruneMemories(t.Context(), at(30*24*time.Hour)); err != nil || n != 0 {
		t.Fatalf("pruning again = %d, %v; want nothing", n, err)
	}
}
