package actions_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/render"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// pagedSteps is a store that records how the steps of a task are read.
type pagedSteps struct {
	domain.Store
	mu    sync.Mutex
	full  int
	pages []domain.StepQuery
}

func (s *pagedSteps) Steps(ctx context.Context, n int64) ([]domain.Step, error) {
	s.mu.Lock()
	s.full++
	s.mu.Unlock()
	return s.Store.Steps(ctx, n)
}

func (s *pagedSteps) PageSteps(ctx context.Context, n int64, q domain.StepQuery) (domain.StepPage, error) {
	s.mu.Lock()
	s.pages = append(s.pages, q)
	s.mu.Unlock()
	return s.Store.PageSteps(ctx, n, q)
}

// TestStatusReadsTheLastSteps: `status #N` of a task with many steps,
// each with a long result, reads its last few steps without their results
// and the count, not every step — and still numbers them, and shows the
// question of a task waiting on an answer.
func TestStatusReadsTheLastSteps(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		var st *pagedSteps
		k := newChat(t, func(t testing.TB) domain.Store {
			st = &pagedSteps{Store: open(t)}
			return st
		})
		k.expect("ann", "create task Build auth", "#1")
		for i := 1; i <= 40; i++ {
			k.clk.Advance(time.Second)
			claimed, err := k.store.ClaimTask(k.ctx, domain.Claim{Owner: "w", Now: k.clk.Now(), Lease: time.Minute})
			if err != nil || claimed.Number != 1 {
				t.Fatalf("claim: %+v %v", claimed, err)
			}
			o := domain.Outcome{Owner: "w", Fence: claimed.Fence, Now: k.clk.Now(), Progress: i,
				Step: domain.Step{Action: "read_file", Params: []byte(fmt.Sprintf(`{"path":"f%d"}`, i)), Result: strings.Repeat("r", 64<<10), Success: true}}
			if i == 40 {
				o.Wait = domain.WaitAnswer
				o.Step = domain.Step{Action: "ask_user", Params: []byte(`{"question":"Which license?"}`), Success: true}
			}
			if _, err := k.store.UpdateTask(k.ctx, 1, func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, o) }); err != nil {
				t.Fatal(err)
			}
		}
		got := k.say("bob", "status #1")
		for _, w := range []string{"Steps (last 5 of 40):", "Step 36: `read_file f36` ✓", "Step 40: `ask_user Which license?` ✓", "Asks: Which license?"} {
			if !strings.Contains(got, w) {
				t.Errorf("want %q in\n%s", w, got)
			}
		}
		if strings.Contains(got, "Step 35:") || strings.Contains(got, "rrrr") {
			t.Errorf("only the last 5 steps, without results:\n%s", got)
		}
		st.mu.Lock()
		defer st.mu.Unlock()
		if st.full != 0 {
			t.Errorf("status read every step %d times", st.full)
		}
		if len(st.pages) != 1 || st.pages[0] != (domain.StepQuery{Limit: render.StatusSteps}) {
			t.Errorf("status read the pages %+v, want the last %d steps without results", st.pages, render.StatusSteps)
		}
	})
}
