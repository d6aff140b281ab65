package tasks_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// defaultBudget is TASKLOOM_MAX_TOKENS's default: every task has a
// budget in the binary, so subtasks are asked under one.
const defaultBudget = 1_000_000

// checkShares checks that the subtasks kids of parent (read after the
// commit that asked for them together) hold an even share each of what
// it had left, and no more than that together.
func checkShares(t *testing.T, f *fixture, parent domain.Task, kids ...int64) {
	t.Helper()
	left := parent.MaxTokens - parent.Tokens()
	var held int64
	for _, c := range kids {
		child := f.task(c)
		held += child.MaxTokens
		if child.MaxTokens != left/int64(len(kids)) {
			t.Errorf("subtask #%d holds %d tokens; want %d, a share of the %d its parent had left", c, child.MaxTokens, left/int64(len(kids)), left)
		}
	}
	if parent.MaxTokens != defaultBudget || held > left {
		t.Errorf("subtasks %v hold %d tokens; their parent (budget %d) had %d left", kids, held, parent.MaxTokens, left)
	}
}

// TestToolsSubtasksUnderTheDefaultBudget: a tools reply of three
// create_subtask calls, none naming a budget, makes three subtasks under
// the default budget (it made one, which took all the parent had left,
// and the others were refused); one asked alone later gets a quarter of
// what is left then.
func TestToolsSubtasksUnderTheDefaultBudget(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		fake := testkit.NewOpenAI(t)
		f := newBudgetFixture(t, open, fake, nil, defaultBudget)
		n := f.create("Build it in three parts", func(in *domain.NewTask) { in.Strategy = domain.StrategyTools }).Number
		var calls []testkit.OpenAIToolCall
		for i, part := range []string{"client", "server", "tests"} {
			calls = append(calls, testkit.OpenAIToolCall{ID: fmt.Sprintf("call_%d", i), Name: "create_subtask",
				Arguments: fmt.Sprintf(`{"goal":"Write the %s","name":"%s"}`, part, part)})
		}
		fake.ReplyToolCalls("Three parts.", calls...)
		f.step("test")
		parent := f.task(n)
		if parent.Status != domain.StatusWaiting || parent.WaitingOn != domain.WaitSubtasks {
			t.Fatalf("parent %s on %q; want waiting on its subtasks", parent.Status, parent.WaitingOn)
		}
		kids := f.children(n)
		if len(kids) != 3 {
			var results []string
			for _, s := range f.steps(n) {
				results = append(results, s.Result)
			}
			t.Fatalf("%d subtasks; want 3 (steps: %q)", len(kids), results)
		}
		checkShares(t, f, parent, kids[0].Number, kids[1].Number, kids[2].Number)
		for _, s := range f.steps(n) {
			if strings.Contains(s.Result, "not created") {
				t.Errorf("step %d refused a subtask: %s", s.Iteration, s.Result)
			}
		}
	})
}

// children lists the subtasks of task n, by number.
func (f *fixture) children(n int64) []domain.Task {
	f.t.Helper()
	kids, err := f.store.ListTasks(f.ctx, domain.TaskFilter{ParentNumber: n})
	if err != nil {
		f.t.Fatal(err)
	}
	return kids
}
