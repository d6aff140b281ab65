package render

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/taskloom/taskloom/domain"
)

func TestCard(t *testing.T) {
	t.Parallel()
	task := fixtureTask(1, "Build auth", domain.StatusRunning)
	task.Progress, task.Iteration = 40, 4
	act := step(4, "write_file", map[string]any{"path": "a.ts"}, true)
	got := Card(Plain, Update{Task: task, From: 10, LastAction: &act, Errors: []string{"disk\nfull"}})
	want := "📋 Task #1 \"Build auth\"\n" +
		"   [████░░░░░░] 40%  Running\n" +
		"   Iteration: 4\n" +
		"   Last action: `write_file a.ts` ✓\n" +
		"   ⚠️ Error: disk full"
	if got != want {
		t.Errorf("card =\n%s\nwant\n%s", got, want)
	}

	done := task
	done.Status, done.Progress, done.Iteration = domain.StatusCompleted, 100, 0
	if got := Card(Plain, Update{Task: done}); got != "📋 Task #1 \"Build auth\"\n   [██████████] 100%  Completed" {
		t.Errorf("final card =\n%s", got)
	}

	// Many errors: the latest three, and a line for the rest, so the card
	// stays one message whatever happened between two flushes.
	var errs []string
	for range 20 {
		errs = append(errs, strings.Repeat("x", 400))
	}
	errs = append(errs, "the last one")
	long := task
	long.Name = strings.Repeat("n", domain.MaxNameLength)
	got = Card(Discord, Update{Task: long, LastAction: &act, Errors: errs})
	if !strings.Contains(got, "⚠️ 18 earlier errors not shown") || strings.Count(got, "Error:") != 3 || !strings.HasSuffix(got, "the last one") {
		t.Errorf("card with many errors =\n%s", got)
	}
	if n := utf8.RuneCountInString(got); n > DiscordLimit {
		t.Errorf("the card takes %d characters, more than one Discord message", n)
	}
	if got := Card(Plain, Update{Task: task, Errors: []string{"a", "b", "c", "d"}}); !strings.Contains(got, "1 earlier error not shown") {
		t.Errorf("card =\n%s", got)
	}
}
