package app_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/internal/app"
	"github.com/taskloom/taskloom/internal/testkit"
)

func writeAgents(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agents.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBadAgentsStopStartUp: an agents file that cannot be used — a tool
// no task has (checked once the plugins have registered theirs), an MCP
// tool of no configured server, two agents of one name, no agents —
// stops serve with one line naming TASKLOOM_AGENTS and the problem.
func TestBadAgentsStopStartUp(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, file, want string }{
		{"unknown tool", "- name: scout\n  system: You look.\n  tools: [list_files, teleport]\n",
			`agent "scout": "teleport" is not a tool tasks can use; they are `},
		{"run_command off", "- name: runner\n  system: You run.\n  tools: [run_command]\n",
			`agent "runner": "run_command" is not a tool tasks can use`},
		{"MCP tool of no server", "- name: scout\n  system: You look.\n  tools: [files.search]\n",
			`agent "scout": "files.search" names no MCP server of TASKLOOM_MCP_SERVERS`},
		{"duplicate", "- {name: scout, system: s}\n- {name: scout, system: s}\n", `the agent name "scout" is given twice`},
		{"empty", "[]\n", "the file lists no agents"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := writeAgents(t, tt.file)
			code, stderr := refusedServe(t, map[string]string{"TASKLOOM_DATA_DIR": t.TempDir(), "TASKLOOM_HTTP_ADDR": "127.0.0.1:0", "TASKLOOM_AGENTS": path})
			// The line that ends the output says it all (the log before it
			// says what started).
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			last := lines[len(lines)-1]
			if code == app.ExitOK || !strings.HasPrefix(last, `taskloom: TASKLOOM_AGENTS="`+path+`": `) || !strings.Contains(last, tt.want) {
				t.Fatalf("exit %d, stderr:\n%s\nwant a last line naming TASKLOOM_AGENTS saying %q", code, stderr, tt.want)
			}
		})
	}
}

// TestServeRunsATeamOfTASKLOOM_AGENTS: serve gives the task service the
// agents of the file: a supervisor task created through the API hands
// its step to one of them, whose step the API shows with its role.
func TestServeRunsATeamOfTASKLOOM_AGENTS(t *testing.T) {
	t.Parallel()
	fake := testkit.NewOpenAI(t)
	fake.Reply(`{"thought": "look first", "next": "scout", "instruction": "List the files", "summary": ""}`)
	fake.Reply(testkit.DecisionJSON("list_files", nil, 50, "continue"))
	fake.Reply(`{"thought": "enough", "next": "DONE", "instruction": "", "summary": "Nothing to compare yet."}`)
	path := writeAgents(t, "- name: scout\n  description: looks around\n  system: You look around.\n  tools: [list_files]\n")
	srv := launch(t, map[string]string{"TASKLOOM_DATA_DIR": t.TempDir(), "TASKLOOM_HTTP_ADDR": "127.0.0.1:0",
		"OPENAI_BASE_URL": fake.URL(), "TASKLOOM_AGENTS": path})
	defer func() {
		srv.stop()
		if code := srv.wait(t, app.ShutdownTimeout+5*time.Second); code != 0 {
			t.Errorf("exit %d:\n%s", code, srv.stderr.String())
		}
	}()
	resp, err := http.Post(srv.base+"/api/tasks", "application/json", strings.NewReader(`{"goal":"Compare the queue libraries","strategy":"supervisor"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create = %d", resp.StatusCode)
	}
	var task struct {
		Status, Summary string
		Steps           []struct{ Role, Action string }
	}
	for deadline := time.Now().Add(30 * time.Second); task.Status != "completed"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("task = %+v after 30s:\n%s", task, srv.stderr.String())
		}
		resp, err := http.Get(srv.base + "/api/tasks/1")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&task)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, s := range task.Steps {
		got = append(got, s.Role+":"+s.Action)
	}
	if strings.Join(got, ",") != "supervisor:scout,scout:list_files,supervisor:DONE" || task.Summary != "Nothing to compare yet." {
		t.Fatalf("steps %v, summary %q", got, task.Summary)
	}
	if sys := fake.Requests()[0].Body.Messages[0].Content; !strings.Contains(sys, "- scout: looks around (tools: list_files)") || strings.Contains(sys, "researcher") {
		t.Fatalf("the supervisor was not shown the file's team:\n%s", sys)
	}
}
