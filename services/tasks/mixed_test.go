package tasks_test

import (
	"fmt"
	"testing"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// TestMixedStrategiesShareTheQueueFairly: five tasks of five strategies on
// one worker are served round robin — one claim is one model call, whatever
// the strategy — so their claim counts never differ by more than one, and
// each claim is the turn its strategy expects.
func TestMixedStrategiesShareTheQueueFairly(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		f := newTeamFixture(t, open, fake, nil, nil)
		strategies := []string{domain.StrategyLoop, domain.StrategyReact, domain.StrategyTools, domain.StrategyReview, domain.StrategySupervisor}
		numbers := make([]int64, len(strategies))
		for i, s := range strategies {
			numbers[i] = f.createAs(s, "Write part "+s, func(in *domain.NewTask) { in.MaxIterations, in.MaxStaleIterations = 100, 100 }).Number
		}
		// reply queues claim k of the task of strategy s, in the order a
		// fair queue serves them.
		reply := func(s string, k int) {
			file := fmt.Sprintf(`{"path":"%s-%d.md","content":"x"}`, s, k)
			switch s {
			case domain.StrategyLoop:
				fake.Reply(note(fmt.Sprintf("loop-%d", k), 5*(k+1), "continue"))
			case domain.StrategyReact:
				switch k % 3 {
				case 0:
					fake.Reply(`{"thought": "write the next part"}`)
				case 1:
					fake.Reply(`{"action": "write_file", "params": ` + file + `}`)
				default:
					fake.Reply(fmt.Sprintf(`{"observation": "written", "progress": %d, "status": "continue"}`, 5*(k+1)))
				}
			case domain.StrategyTools:
				fake.ReplyToolCalls("", testkit.OpenAIToolCall{ID: fmt.Sprintf("call_%d", k), Name: "write_file", Arguments: file})
			case domain.StrategyReview:
				if k == 0 {
					fake.Reply(`{"thought": "small enough", "decision": "execute", "plan": "write it"}`)
				} else {
					fake.Reply(note(fmt.Sprintf("review-%d", k), 5*(k+1), "continue"))
				}
			case domain.StrategySupervisor:
				if k%2 == 0 {
					fake.Reply(supReply("writer", "write the next part"))
				} else {
					fake.Reply(note(fmt.Sprintf("writer-%d", k), 5*(k+1), "continue"))
				}
			}
		}
		const rounds = 6
		for k := range rounds {
			for _, s := range strategies {
				reply(s, k)
			}
		}
		for i := range rounds * len(strategies) {
			f.stepsN(1, "w")
			claims := make([]int, len(numbers))
			for j, n := range numbers {
				claims[j] = f.task(n).Iteration
			}
			if slicesMax(claims)-slicesMin(claims) > 1 {
				t.Fatalf("after claim %d the tasks (%v) have had %v claims: more than one apart", i+1, strategies, claims)
			}
		}
		for j, n := range numbers {
			task := f.task(n)
			if task.Status != domain.StatusRunning || task.Iteration != rounds {
				t.Errorf("%s task #%d: %s after %d claims (%s); want running after %d", strategies[j], n, task.Status, task.Iteration, task.Error, rounds)
			}
			for _, s := range f.steps(n) {
				if !s.Success {
					t.Errorf("%s task #%d step %d (%s) failed: %s — the claim was not the turn its strategy expected", strategies[j], n, s.Iteration, s.Role, s.Error)
				}
			}
		}
		f.check()
	})
}
