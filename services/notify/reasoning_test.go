package notify_test

import (
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// say commits one claim of task n whose step is step, as the task
// service does, with the progress estimate p (judged unless unjudged).
func (f *fixture) say(n int64, step domain.Step, p int, unjudged bool) {
	f.t.Helper()
	if _, err := f.store.ClaimTask(f.ctx, domain.Claim{Owner: "w", Now: f.clk.Now(), Lease: time.Minute}); err != nil {
		f.t.Fatal(err)
	}
	_, err := f.store.UpdateTask(f.ctx, n, func(cur domain.Task) (domain.Mutation, error) {
		m, err := domain.Iterated(cur, domain.Outcome{Owner: "w", Fence: cur.Fence, Now: f.clk.Now(), Progress: p,
			Verdict: domain.VerdictContinue, Step: step, Unjudged: unjudged, Cycle: 1})
		if err == nil {
			m.Notifications = f.svc.Outbox(cur, m.Task, &m)
		}
		return m, err
	})
	if err != nil {
		f.t.Fatal(err)
	}
	f.clk.Advance(time.Second)
}

// TestReasoningLines: a react task's thoughts and observations show in
// the batched message as 💭 and 🔍 lines, the latest of each winning, and
// are not taken for its last action.
func TestReasoningLines(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open(t), "a")
		n := f.create("chat:C1", "Tune the pool").Number
		thought := func(s string) domain.Step {
			return domain.Step{Role: domain.RoleThought, Thought: s, Success: true}
		}

		f.say(n, thought("I should read the config first."), 0, true)
		f.flush()
		msgs := f.out.messages()
		if len(msgs) != 1 || !strings.Contains(msgs[0], "   💭 Thought: I should read the config first.") ||
			strings.Contains(msgs[0], "Last action") || strings.Contains(msgs[0], "🔍") {
			t.Fatalf("message after a thought = %q", msgs)
		}

		f.say(n, domain.Step{Role: domain.RoleAction, Action: "read_file", Params: []byte(`{"path":"db.yaml"}`), Success: true}, 0, true)
		f.say(n, domain.Step{Role: domain.RoleObservation, Thought: "The config sets\nno pool size.", Success: true}, 30, false)
		f.say(n, thought("Set the pool size to 20."), 0, true)
		f.flush()
		msgs = f.out.messages()
		last := msgs[len(msgs)-1]
		if len(msgs) != 2 || !strings.Contains(last, "💭 Thought: Set the pool size to 20.") || strings.Contains(last, "read the config first") ||
			!strings.Contains(last, "🔍 Observation: The config sets no pool size.") ||
			!strings.Contains(last, "Last action: `read_file db.yaml` ✓") || !strings.Contains(last, "Progress: 0% → 30%") {
			t.Fatalf("message after a cycle = %q", last)
		}

		loop := f.create("chat:C2", "A loop task").Number
		f.say(loop, domain.Step{Role: domain.RoleAgent, Thought: "loop thoughts stay out", Action: "list_files", Success: true}, 10, false)
		f.flush()
		msgs = f.out.messages()
		if last := msgs[len(msgs)-1]; strings.Contains(last, "💭") || strings.Contains(last, "loop thoughts") {
			t.Fatalf("a loop task's message shows its thought: %q", last)
		}
	})
}
