package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/mcp"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/tasks"
)

// everythingVar names the executable of the reference MCP server
// @modelcontextprotocol/server-everything, which scripts/test installs
// from npm.
const everythingVar = "TASKLOOM_TEST_MCP_EVERYTHING"

func everythingServer(t *testing.T) string {
	t.Helper()
	bin := os.Getenv(everythingVar)
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set: scripts/test installs @modelcontextprotocol/server-everything and sets it; CI must run this test", everythingVar)
		}
		t.Skipf("%s is not set (scripts/test installs @modelcontextprotocol/server-everything from npm and sets it)", everythingVar)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: %v", everythingVar, err)
	}
	return bin
}

// TestATaskCallsTheReferenceServer: a task whose model picks the echo tool
// of the reference MCP server, spoken to over stdio, gets the echoed text
// as its step's result; a tool named in ApproveTools by its dotted name
// waits for a person, and once approved runs — and the server, which runs
// in the sandbox (from under a folder closed to the sandbox's user, when
// scripts/test installed it as root), has the sandbox's environment and
// none of Taskloom's variables.
func TestATaskCallsTheReferenceServer(t *testing.T) {
	bin := everythingServer(t)
	t.Setenv("TASKLOOM_API_TOKEN", "hunter2-api")
	t.Setenv("OPENAI_API_KEY", "hunter2-openai")
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	st := teststore.SQLite(t)
	model := testkit.NewScriptedModel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rt := plugin.New(plugin.Options{Store: st, Clock: clk, Logger: log})
	tools := mcp.New(mcp.Options{Logger: log, Sandbox: sandbox(t), Servers: []mcp.Server{{Name: "everything", Command: bin, Args: []string{"stdio"}}}})
	err := rt.Register(
		&plugin.Plugin{Name: "model", Models: map[plugin.ModelType]plugin.Model{plugin.ModelText: model}},
		tools.Plugin(),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop(context.Background()) })
	if _, ok := rt.Action("everything.echo"); !ok {
		var names []string
		for _, a := range rt.Actions() {
			names = append(names, a.Info().Name)
		}
		t.Fatalf("no everything.echo among the actions %q", names)
	}
	svc := tasks.New(tasks.Options{Runtime: rt, Lease: time.Minute, Owner: "test", ApproveTools: []string{"everything.get-env"}})
	step := func() {
		t.Helper()
		if _, err := svc.Step(ctx, "test"); err != nil {
			t.Fatalf("step: %v", err)
		}
		clk.Advance(time.Second)
	}
	steps := func(n int64) []domain.Step {
		t.Helper()
		s, err := st.Steps(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	model.Decide("everything.echo", map[string]string{"message": "hello from a task"}, 50, "continue")
	task, err := svc.Create(ctx, domain.NewTask{Goal: "Say hello through MCP", RequestorID: "u1", Platform: "console", RoomID: "console", Actor: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	step()
	got := steps(task.Number)
	if len(got) != 1 || !got[0].Success || got[0].Action != "everything.echo" || got[0].Result != "Echo: hello from a task" {
		t.Fatalf("steps = %+v; want the echo tool's text as the result", got)
	}
	reqs := model.Requests()
	prompt := ""
	for _, m := range reqs[0].Messages {
		prompt += m.Content
	}
	if !strings.Contains(prompt, "everything.echo") || !strings.Contains(prompt, "Echoes back the input string") || !strings.Contains(prompt, `"message"`) {
		t.Errorf("the prompt does not show everything.echo with its schema:\n%s", prompt)
	}

	// A dotted name in ApproveTools: the call waits for a person.
	model.Decide("everything.get-env", nil, 80, "continue")
	step()
	waiting, err := st.GetTask(ctx, task.Number)
	if err != nil {
		t.Fatal(err)
	}
	if waiting.WaitingOn != domain.WaitApproval || waiting.ApprovalAction != "everything.get-env" || len(steps(task.Number)) != 1 {
		t.Fatalf("task = %s on %q asking %q; want it waiting for approval of everything.get-env", waiting.Status, waiting.WaitingOn, waiting.ApprovalAction)
	}
	if _, err := svc.Approve(ctx, task.Number, "u1", ""); err != nil {
		t.Fatal(err)
	}
	step()
	got = steps(task.Number)
	if len(got) != 2 || !got[1].Success || got[1].Action != "everything.get-env" {
		t.Fatalf("steps = %+v; want the approved get-env call run", got)
	}
	var env map[string]string
	if err := json.Unmarshal([]byte(got[1].Result), &env); err != nil {
		t.Fatalf("get-env result %q: %v", got[1].Result, err)
	}
	t.Logf("the reference server's environment has %s", strings.Join(slices.Sorted(maps.Keys(env)), ", "))
	if env["PATH"] != sandboxPATH || env["HOME"] != "/work" {
		t.Errorf("the server's PATH = %q and HOME = %q, want the sandbox's", env["PATH"], env["HOME"])
	}
	for k, v := range env {
		if strings.HasPrefix(k, "TASKLOOM_") || strings.Contains(v, "hunter2") {
			t.Errorf("a variable of Taskloom's reached the server: %s=%q", k, v)
		}
	}
}
