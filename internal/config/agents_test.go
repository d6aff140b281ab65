package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/internal/config"
)

// agentsFile writes content to a file and returns its path.
func agentsFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestAgentsFromJSONAndYAML(t *testing.T) {
	t.Parallel()
	want := []config.Agent{
		{Name: "scout", Description: "looks around", System: "You look around.", Tools: []string{"list_files", "files.search"}},
		{Name: "scribe", System: "You write.", Tools: []string{"write_file"}},
		{Name: "critic", System: "You judge.", Tools: nil},
	}
	for _, f := range []struct{ name, content string }{
		{"team.json", `[
	{"name": "scout", "description": "looks around", "system": "You look around.", "tools": ["list_files", "files.search"]},
	{"name": " scribe ", "system": "You write.", "tools": ["write_file"]},
	{"name": "critic", "system": "You judge."}
]`},
		{"team.yaml", `# the team
- name: scout
  description: looks around
  system: You look around.
  tools: [list_files, files.search]
- name: scribe
  system: |
    You write.
  tools:
    - write_file
- name: critic
  system: You judge.
`},
	} {
		c, err := config.Load(env("TASKLOOM_AGENTS", agentsFile(t, f.name, f.content)))
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		if !reflect.DeepEqual(c.Agents, want) {
			t.Errorf("%s: agents = %+v\nwant %+v", f.name, c.Agents, want)
		}
	}
	if c, err := config.Load(env()); err != nil || c.Agents != nil || c.GroupChatSpeaker != config.SpeakerRoundRobin {
		t.Fatalf("unset: agents %+v, speaker %q, err %v; want the built-in team, round robin", c.Agents, c.GroupChatSpeaker, err)
	}
}

// TestBadAgentsFiles: each mistake in a TASKLOOM_AGENTS file is one line
// naming the variable, the file and the problem.
func TestBadAgentsFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, content, want string
	}{
		{"empty list", `[]`, "the file lists no agents"},
		{"empty file", "", "the file lists no agents"},
		{"not a list", `{"name": "scout"}`, "want a JSON or YAML list of agents"},
		{"bad JSON", `[{"name": "scout",}]`, "want a JSON or YAML list of agents"},
		{"bad YAML", "- name: scout\n  system: [unclosed\n", "want a JSON or YAML list of agents"},
		{"unknown field", `[{"name": "scout", "system": "s", "tool": ["list_files"]}]`, `unknown field "tool"`},
		{"unknown YAML field", "- name: scout\n  system: s\n  tool: [list_files]\n", "field tool not found"},
		{"no name", `[{"system": "s"}]`, "agent 1 has no name"},
		{"bad name", `[{"name": "re search", "system": "s"}]`, `the agent name "re search" is not usable`},
		{"long name", `[{"name": "` + strings.Repeat("a", 33) + `", "system": "s"}]`, "is not usable: want 1 to 32"},
		{"role name", `[{"name": "Supervisor", "system": "s"}]`, `the agent name "Supervisor" is a role name`},
		{"agent role", `[{"name": "agent", "system": "s"}]`, `the agent name "agent" is a role name`},
		{"done", `[{"name": "DONE", "system": "s"}]`, `the agent name "DONE" is a role name`},
		{"duplicate", `[{"name": "scout", "system": "s"}, {"name": "Scout", "system": "s"}]`, `the agent name "Scout" is given twice`},
		{"no system", `[{"name": "scout", "system": "  "}]`, `agent "scout" has no system prompt`},
		{"bad tool", `[{"name": "scout", "system": "s", "tools": ["list files"]}]`, `agent "scout": "list files" is not a tool name`},
		{"tool twice", `[{"name": "scout", "system": "s", "tools": ["list_files", "list_files"]}]`, `agent "scout" names the tool "list_files" twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := agentsFile(t, "agents", tt.content)
			_, err := config.Load(env("TASKLOOM_AGENTS", path))
			var ce *config.Error
			if !errors.As(err, &ce) || ce.Var != "TASKLOOM_AGENTS" || ce.Value != path || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v; want one line about TASKLOOM_AGENTS=%s saying %q", err, path, tt.want)
			}
		})
	}
	_, err := config.Load(env("TASKLOOM_AGENTS", filepath.Join(t.TempDir(), "missing.yaml")))
	if err == nil || !strings.Contains(err.Error(), "cannot read the agents file: no such file or directory") {
		t.Fatalf("missing file: %v", err)
	}
}

func TestGroupChatSpeaker(t *testing.T) {
	t.Parallel()
	if c, err := config.Load(env("TASKLOOM_GROUP_CHAT_SPEAKER", "Model")); err != nil || c.GroupChatSpeaker != config.SpeakerModel {
		t.Fatalf("speaker %q, err %v", c.GroupChatSpeaker, err)
	}
	_, err := config.Load(env("TASKLOOM_GROUP_CHAT_SPEAKER", "loudest"))
	if err == nil || !strings.Contains(err.Error(), `TASKLOOM_GROUP_CHAT_SPEAKER="loudest": want round_robin or model`) {
		t.Fatalf("err = %v", err)
	}
}
