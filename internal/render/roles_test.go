package render

import (
	"strings"
	"testing"

	"github.com/taskloom/taskloom/domain"
)

// TestLastActionNamesTheRole: for a task whose strategy is not loop, the
// progress block, the stalled message and status #N say whose step it was
// (docs/strategies.md: "Last action: researcher → http_get …"); a loop task's
// steps read as before.
func TestLastActionNamesTheRole(t *testing.T) {
	t.Parallel()
	task := fixtureTask(1, "Compare the queues", domain.StatusRunning)
	task.Strategy, task.Progress, task.Iteration = domain.StrategySupervisor, 30, 4
	get := step(4, "http_get", map[string]any{"url": "https://riverqueue.com"}, true)
	get.Role = "researcher"
	decide := step(3, "researcher", map[string]any{"instruction": "Read River's docs"}, true)
	decide.Role = domain.RoleSupervisor

	if got := Progress(Plain, []Update{{Task: task, From: 10, LastAction: &get}}); !strings.Contains(got, "   Last action: researcher → `http_get https://riverqueue.com` ✓") {
		t.Errorf("progress:\n%s", got)
	}
	stalled := task
	stalled.Status, stalled.StaleCounter, stalled.MaxStaleIterations = domain.StatusStalemate, 3, 3
	if got := Stalled(Plain, stalled, &get); !strings.Contains(got, "Last action: researcher → `http_get") {
		t.Errorf("stalled:\n%s", got)
	}
	got := Status(Plain, task, everyStep([]domain.Step{decide, get}))
	for _, want := range []string{"Step 1: supervisor → `researcher Read River's docs` ✓", "Step 2: researcher → `http_get https://riverqueue.com` ✓"} {
		if !strings.Contains(got, want) {
			t.Errorf("status lacks %q:\n%s", want, got)
		}
	}
	// Discord: the role is escaped like any text a person did not write.
	odd := get
	odd.Role = "data_scout"
	if got := Progress(Discord, []Update{{Task: task, From: 10, LastAction: &odd}}); !strings.Contains(got, `Last action: data\_scout → `) {
		t.Errorf("discord:\n%s", got)
	}

	loop := task
	loop.Strategy = domain.StrategyLoop
	agent := get
	agent.Role = domain.RoleAgent
	for _, s := range []string{Progress(Plain, []Update{{Task: loop, From: 10, LastAction: &agent}}), Status(Plain, loop, everyStep([]domain.Step{agent}))} {
		if strings.Contains(s, "→ `") || strings.Contains(s, "agent") {
			t.Errorf("a loop task's step names its role:\n%s", s)
		}
	}
}
