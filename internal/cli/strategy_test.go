package cli_test

import (
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/adapters/demo"
	"github.com/taskloom/taskloom/internal/cli"
)

// TestCreateWithAStrategy is `taskloom tasks create --strategy review
// GOAL`, then list and show of the task it made, worked by the demo
// model.
func TestCreateWithAStrategy(t *testing.T) {
	s := newServer(t, demo.New(demo.Options{Think: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}), "")
	code, out, errOut := run(t, s.env, "create", "--strategy", "review", "Write", "a release note")
	if code != 0 || !strings.Contains(out, `Created task #1 "Write a release note"`) {
		t.Fatalf("create --strategy review = %d\n%s%s", code, out, errOut)
	}
	if task := mustTask(t, s, 1); task.Strategy != "review" {
		t.Fatalf("task #1's strategy is %q, want review", task.Strategy)
	}
	if code, _, _ := run(t, s.env, "create", "Plain"); code != 0 {
		t.Fatalf("create = %d", code)
	}
	s.step()
	s.step()

	code, out, errOut = run(t, s.env, "list")
	if code != 0 {
		t.Fatalf("list = %d: %s", code, errOut)
	}
	lines := strings.Split(out, "\n")
	if !strings.HasSuffix(strings.TrimSpace(lines[0]), "STRATEGY") || !strings.HasSuffix(strings.TrimSpace(lines[1]), "review") ||
		!strings.HasSuffix(strings.TrimSpace(lines[2]), "loop") {
		t.Errorf("list has no strategy column:\n%s", out)
	}

	code, out, errOut = run(t, s.env, "show", "1")
	if code != 0 {
		t.Fatalf("show = %d: %s", code, errOut)
	}
	task := mustTask(t, s, 1)
	steps, err := s.store.Steps(s.ctx, 1)
	if err != nil || len(steps) == 0 {
		t.Fatalf("task #1 has no steps (%v)", err)
	}
	for _, want := range []string{"Strategy:      review", "Phase:         " + task.Phase, "Roles:         " + steps[0].Role, "  1  07:00:00  " + steps[0].Role + "  "} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	if task.Phase == "" || steps[0].Role == "" {
		t.Errorf("the review task has phase %q and a first step's role %q; the test needs both", task.Phase, steps[0].Role)
	}

	code, _, errOut = run(t, s.env, "create", "--strategy", "telepathy", "x")
	if code != 1 || !strings.Contains(errOut, "telepathy") || !strings.Contains(errOut, "review") {
		t.Errorf("an unknown strategy = %d %q; want 1 and the server's list", code, errOut)
	}
}

// TestHelpListsTheServersStrategies keeps the names create's help and
// completion offer the server's built-in ones.
func TestHelpListsTheServersStrategies(t *testing.T) {
	s := newServer(t, demo.New(demo.Options{Think: -1}), "")
	if !slices.Equal(cli.Strategies, s.tasks.Strategies()) {
		t.Errorf("cli.Strategies = %q, the server's are %q", cli.Strategies, s.tasks.Strategies())
	}
	code, out, _ := run(t, s.env, "create", "--help")
	if code != 0 || !strings.Contains(out, "--strategy") || !strings.Contains(out, strings.Join(s.tasks.Strategies(), ", ")) {
		t.Errorf("create --help = %d:\n%s", code, out)
	}
}
