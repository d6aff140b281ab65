package cli_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskloom/taskloom/adapters/demo"
	"github.com/taskloom/taskloom/adapters/httpapi"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/cli"
	"github.com/taskloom/taskloom/services/tasks"
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

// TestCompletionOffersTheServersStrategies: --strategy completes to the
// server's strategies (GET /api/strategies), a plugin's included; to the
// built-in ones when the server cannot be reached.
func TestCompletionOffersTheServersStrategies(t *testing.T) {
	s := newServer(t, demo.New(demo.Options{Think: -1}), "", func(o *httpapi.APIOptions) {
		o.Tasks = tasks.New(tasks.Options{Runtime: o.Runtime, Lease: time.Minute, Owner: "w",
			Strategies: map[string]tasks.Strategy{"echo": tasks.StrategyFunc(func(_ context.Context, t *tasks.Turn) (domain.Outcome, error) {
				return t.Outcome(), nil
			})}})
	})
	complete := func(env func(string) string) string {
		t.Helper()
		root := &cobra.Command{Use: "taskloom"}
		root.AddCommand(cli.Command(env))
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(io.Discard)
		root.SetArgs([]string{"__complete", "tasks", "create", "--strategy", ""})
		if err := root.ExecuteContext(context.Background()); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	if out := complete(s.env); !strings.Contains(out, "\necho\n") || !strings.HasPrefix(out, "loop\n") {
		t.Errorf("completion = %q; want the server's strategies, echo among them", out)
	}
	down := func(k string) string {
		if k == "TASKLOOM_URL" {
			return "http://127.0.0.1:1"
		}
		return ""
	}
	if out := complete(down); !strings.HasPrefix(out, strings.Join(cli.Strategies, "\n")+"\n") {
		t.Errorf("completion with the server down = %q; want the built-in strategies", out)
	}
}
