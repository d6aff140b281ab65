package notify_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// stepReads is a store that records how the steps of a task are read:
// every step (Steps), or a page (PageSteps).
type stepReads struct {
	domain.Store
	mu    sync.Mutex
	full  int
	pages []domain.StepQuery
}

func (s *stepReads) Steps(ctx context.Context, n int64) ([]domain.Step, error) {
	s.mu.Lock()
	s.full++
	s.mu.Unlock()
	return s.Store.Steps(ctx, n)
}

func (s *stepReads) PageSteps(ctx context.Context, n int64, q domain.StepQuery) (domain.StepPage, error) {
	s.mu.Lock()
	s.pages = append(s.pages, q)
	s.mu.Unlock()
	return s.Store.PageSteps(ctx, n, q)
}

// TestTerminalMessageReadsABoundedHistory: a terminal message counts a
// task's steps and shows its last action from a read of one step without
// its result, however many steps the task ran — not a read of all of them.
func TestTerminalMessageReadsABoundedHistory(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		st := &stepReads{Store: open(t)}
		f := newFixture(t, st, "a")
		done := f.create("chat:C1", "Long task").Number
		for i := 1; i <= 30; i++ {
			f.iterate(done, i, domain.VerdictContinue, true)
		}
		f.iterate(done, 100, domain.VerdictDone, true)
		if got, err := f.svc.FlushUrgent(f.ctx); err != nil || got != 1 {
			t.Fatalf("urgent flush sent %d (%v)", got, err)
		}
		stuck := f.create("chat:C1", "Stuck task").Number
		for range 100 { // the same progress, again and again: stalemate
			if task, err := st.GetTask(f.ctx, stuck); err != nil || task.Status.Terminal() {
				break
			}
			f.iterate(stuck, 5, domain.VerdictContinue, true)
		}
		if got, err := f.svc.FlushUrgent(f.ctx); err != nil || got != 1 {
			t.Fatalf("urgent flush sent %d (%v)", got, err)
		}
		msgs := f.out.messages()
		if len(msgs) != 2 || !strings.Contains(msgs[0], "Total steps: 31") ||
			!strings.Contains(msgs[1], "stalled") || !strings.Contains(msgs[1], "Last action: `write_file part5.go` ✓") {
			t.Fatalf("messages = %q", msgs)
		}
		st.mu.Lock()
		defer st.mu.Unlock()
		if st.full != 0 {
			t.Errorf("the terminal messages read every step of a task %d times", st.full)
		}
		if len(st.pages) != 2 {
			t.Fatalf("the steps were paged %d times, want once a message: %+v", len(st.pages), st.pages)
		}
		for _, q := range st.pages {
			if q.Limit != 1 || q.ResultRunes != 0 {
				t.Errorf("a terminal message read %+v, want the last step without its result", q)
			}
		}
	})
}
