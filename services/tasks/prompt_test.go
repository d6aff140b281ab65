package tasks_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/tasks"
)

var testTools = []tasks.Tool{
	{Name: "list_files", Description: "List files.", Parameters: `{"type":"object"}`},
	{Name: "write_file", Description: "Write a file.", Parameters: `{"type":"object","required":["path","content"]}`},
}

// history makes n realistic steps, each with a sizeable result.
func history(n int) []plugin.Step {
	var steps []plugin.Step
	for i := 1; i <= n; i++ {
		steps = append(steps, plugin.Step{
			Iteration: i, Action: "write_file", Thought: "Next I write part " + fmt.Sprint(i),
			Params: json.RawMessage(fmt.Sprintf(`{"path":"src/part%d.go","content":"%s"}`, i, strings.Repeat("x", 400))),
			Result: strings.Repeat(fmt.Sprintf("line %d of the output\n", i), 40), Success: i%7 != 0,
			Time: time.Unix(int64(i), 0),
		})
	}
	return steps
}

func promptAt(t testing.TB, iteration int) []plugin.ChatMessage {
	t.Helper()
	task := plugin.Task{Number: 7, Name: "Build auth", Goal: "Build the login and logout endpoints with tests.", Iteration: iteration, MaxIterations: 50, Progress: iteration}
	msgs, err := tasks.BuildIterationPrompt(tasks.PromptInput{System: "You are Taskloom.", Tools: testTools, Task: task, Steps: history(iteration), Answers: []string{"use JWT"}})
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func TestPromptFixedPartIsByteIdentical(t *testing.T) {
	t.Parallel()
	a, b := promptAt(t, 0), promptAt(t, 37)
	if a[0].Role != plugin.RoleSystem || a[0].Content != b[0].Content {
		t.Fatal("the system message changed between iterations; prompt caching would miss")
	}
	for _, want := range []string{"list_files", "write_file", `"required":["path","content"]`, `"status": "continue" | "done" | "stuck"`} {
		if !strings.Contains(a[0].Content, want) {
			t.Errorf("system message lacks %q", want)
		}
	}
	if strings.Contains(a[0].Content, "Build auth") {
		t.Error("the system message carries the task; it must be the same for every task")
	}
}

func TestPromptCarriesGoalProgressAndHistory(t *testing.T) {
	t.Parallel()
	user := promptAt(t, 30)[1].Content
	for _, want := range []string{
		"Goal:\nBuild the login and logout endpoints with tests.",
		"Iteration 31 of at most 50. Progress so far: 30%.",
		"Before that, 10 earlier steps (9 succeeded): write_file ×10.",
		"Step 30: write_file",
		"11. write_file",
		"25. write_file",
		"- use JWT",
	} {
		if !strings.Contains(user, want) {
			t.Errorf("user message lacks %q", want)
		}
	}
	if strings.Contains(user, "Step 25:") {
		t.Error("step 25 is shown in full; only the last 5 should be")
	}
	if first := promptAt(t, 0)[1].Content; !strings.Contains(first, "No steps yet") {
		t.Errorf("first prompt:\n%s", first)
	}
}

func TestPromptSizeStaysFlat(t *testing.T) {
	t.Parallel()
	size := func(it int) int {
		n := 0
		for _, m := range promptAt(t, it) {
			n += len(m.Content)
		}
		return n
	}
	at20, at50 := size(20), size(50)
	if at50 > at20+at20/20 {
		t.Fatalf("prompt grows with the task: %d bytes at iteration 20, %d at 50", at20, at50)
	}
}

// BenchmarkPromptTokens reports the prompt size (≈ bytes/4 tokens) at
// iterations 5 and 50 of one task.
func BenchmarkPromptTokens(b *testing.B) {
	for _, it := range []int{5, 50} {
		b.Run(fmt.Sprintf("iteration=%d", it), func(b *testing.B) {
			var n int
			for b.Loop() {
				n = 0
				for _, m := range promptAt(b, it) {
					n += len(m.Content)
				}
			}
			b.ReportMetric(float64(n)/4, "prompt-tokens")
		})
	}
}
