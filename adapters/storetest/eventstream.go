package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// testEventStreamExactlyOnce: two writers claim, iterate and end tasks —
// among them subtasks, whose ending writes their parent's event in the
// child's transaction — while a reader follows the event log as the
// Server-Sent Events stream does, resuming after the last ID it was given.
// The reader must see every event exactly once, each task's events in
// sequence order with no gap, and in an order consistent with the commits:
// a write that returned before another began comes first.
func testEventStreamExactlyOnce(t *testing.T, s domain.Store) {
	ctx := ctxTimeout(t, 2*time.Minute)
	var tick atomic.Int64
	now := func() time.Time { return at(time.Duration(tick.Add(1)) * time.Second) }

	// Parents waiting on two subtasks each, and tasks of their own.
	var parents []int64
	for p := range 3 {
		parent := create(t, s, newTask(fmt.Sprintf("Parent %d", p)))
		waitOn(t, s, parent.Number, now(), domain.WaitSubtasks)
		parents = append(parents, parent.Number)
	}
	for _, p := range parents {
		for c := range 2 {
			in := newTask(fmt.Sprintf("Child %d of #%d", c, p))
			in.ParentNumber = p
			create(t, s, in)
		}
	}
	for i := range 4 {
		create(t, s, newTask(fmt.Sprintf("Plain %d", i)))
	}

	// op is one write of a writer: the event it wrote (task, sequence) and
	// when the call began and returned.
	type op struct {
		task, seq  int64
		start, end time.Time
	}
	const writers, each = 2, 40
	ops := make([][]op, writers)
	var wg sync.WaitGroup
	for w := range writers {
		owner := fmt.Sprintf("writer-%d", w)
		record := func(start time.Time, task domain.Task) {
			ops[w] = append(ops[w], op{task.Number, task.EventSeq, start, time.Now()})
		}
		wg.Go(func() {
			for i := 0; i < each && ctx.Err() == nil; i++ {
				start := time.Now()
				c, err := s.ClaimTask(ctx, domain.Claim{Owner: owner, Now: now(), Lease: time.Hour})
				if errors.Is(err, domain.ErrNoTask) {
					continue
				}
				if err != nil {
					t.Errorf("%s: claim: %v", owner, err)
					return
				}
				record(start, c)
				verdict := domain.VerdictContinue
				if c.ParentNumber != 0 {
					verdict = domain.VerdictDone // ends it, and writes its parent's event
				}
				o := outcome(c, now(), min(c.Iteration+1, 99), verdict)
				start = time.Now()
				after, err := s.UpdateTask(ctx, c.Number, func(cur domain.Task) (domain.Mutation, error) {
					return domain.Iterated(cur, o)
				})
				if err != nil {
					t.Errorf("%s: iterate #%d: %v", owner, c.Number, err)
					return
				}
				record(start, after)
			}
		})
	}

	var stream []domain.TaskEvent
	var after int64
	read := func() int {
		page, err := s.EventsSince(ctx, after, 7)
		if err != nil {
			t.Fatalf("EventsSince(%d): %v", after, err)
		}
		stream = append(stream, page...)
		if len(page) > 0 {
			after = page[len(page)-1].ID
		}
		return len(page)
	}
	var done atomic.Bool
	go func() { wg.Wait(); done.Store(true) }()
	for !done.Load() && ctx.Err() == nil {
		read()
	}
	wg.Wait()
	for read() > 0 {
	}

	all, err := s.EventsSince(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Exactly once, in ID order.
	if len(stream) != len(all) {
		t.Errorf("the reader saw %d events, the log has %d", len(stream), len(all))
	}
	pos := map[[2]int64]int{}
	for i, e := range stream {
		if i > 0 && e.ID <= stream[i-1].ID {
			t.Fatalf("event %d after %d: the stream went back", e.ID, stream[i-1].ID)
		}
		pos[[2]int64{e.TaskNumber, e.Sequence}] = i
	}
	for _, e := range all {
		if _, ok := pos[[2]int64{e.TaskNumber, e.Sequence}]; !ok {
			t.Errorf("the reader missed event %d (#%d/%d, %s)", e.ID, e.TaskNumber, e.Sequence, e.Type)
		}
	}
	// Each task's events in sequence, with no gap.
	next := map[int64]int64{}
	parentEvents := 0
	for _, e := range stream {
		if e.Sequence != next[e.TaskNumber]+1 {
			t.Errorf("task #%d: event %d has sequence %d after %d", e.TaskNumber, e.ID, e.Sequence, next[e.TaskNumber])
		}
		next[e.TaskNumber] = e.Sequence
		if e.Type == domain.EventSubtaskEnded {
			parentEvents++
		}
	}
	if parentEvents == 0 {
		t.Errorf("no subtask ended during the run: the test did not exercise a child writing its parent's event")
	}
	// In commit order: a write that returned before another began is
	// read first.
	var flat []op
	for _, w := range ops {
		flat = append(flat, w...)
	}
	if len(flat) < writers*each {
		t.Errorf("%d writes, want at least %d", len(flat), writers*each)
	}
	posOf := func(o op) int {
		p, ok := pos[[2]int64{o.task, o.seq}]
		if !ok {
			t.Fatalf("the reader never saw #%d/%d", o.task, o.seq)
		}
		return p
	}
	byEnd := slices.Clone(flat)
	slices.SortFunc(byEnd, func(a, b op) int { return a.end.Compare(b.end) })
	byStart := slices.Clone(flat)
	slices.SortFunc(byStart, func(a, b op) int { return a.start.Compare(b.start) })
	latest, j := -1, 0 // the furthest stream position of the writes returned so far
	var latestOp op
	for _, b := range byStart {
		for ; j < len(byEnd) && byEnd[j].end.Before(b.start); j++ {
			if p := posOf(byEnd[j]); p > latest {
				latest, latestOp = p, byEnd[j]
			}
		}
		if latest >= 0 && posOf(b) < latest {
			t.Errorf("#%d/%d began after #%d/%d had returned, but the stream has it first", b.task, b.seq, latestOp.task, latestOp.seq)
		}
	}
}
