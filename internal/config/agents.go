package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Agent is one agent profile of TASKLOOM_AGENTS: the team of the
// multi-agent strategies (docs/strategies.md). Whether its tools exist is checked
// once the plugins have registered their actions (internal/app).
type Agent struct {
	Name        string   `json:"name" yaml:"name"`
	Description string   `json:"description" yaml:"description"`
	System      string   `json:"system" yaml:"system"`
	Tools       []string `json:"tools" yaml:"tools"`
}

// Group chat speaker choices (TASKLOOM_GROUP_CHAT_SPEAKER).
const (
	SpeakerRoundRobin = "round_robin"
	SpeakerModel      = "model"
)

// maxAgentsFile bounds the TASKLOOM_AGENTS file: a team's profiles are
// a few kilobytes.
const maxAgentsFile = 1 << 20

// maxAgentName bounds an agent's name, which is a role on every step it
// takes and in every notification about them.
const maxAgentName = 32

// reservedAgentNames are role names that mean something else in a
// multi-agent task (docs/strategies.md), and the supervisor's word for the end.
// reviewer is not among them: docs/strategies.md names it as a built-in agent.
var reservedAgentNames = []string{"supervisor", "agent", "thought", "action", "observation", "analysis", "done"}

// agents reads TASKLOOM_AGENTS: the path of a JSON or YAML file holding a
// list of {name, description, system, tools}. Unset is nil (the built-in
// agents). Names must be usable as roles, unique and none of the
// reserved ones; every agent needs a system prompt.
func (r *reader) agents(name string) []Agent {
	path := strings.TrimSpace(r.getenv(name))
	if path == "" {
		return nil
	}
	bad := func(format string, args ...any) []Agent {
		r.fail(&Error{Var: name, Value: path, Reason: fmt.Sprintf(format, args...)})
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return bad("cannot read the agents file: %v", unwrapPath(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxAgentsFile+1))
	if err != nil {
		return bad("cannot read the agents file: %v", unwrapPath(err))
	}
	if len(data) > maxAgentsFile {
		return bad("the agents file is larger than %d bytes", maxAgentsFile)
	}
	agents, err := decodeAgents(data)
	if err != nil {
		return bad("want a JSON or YAML list of agents, each {name, description, system, tools}: %v", err)
	}
	if len(agents) == 0 {
		return bad("the file lists no agents")
	}
	seen := map[string]bool{}
	for i, a := range agents {
		a.Name, a.System, a.Description = strings.TrimSpace(a.Name), strings.TrimSpace(a.System), strings.TrimSpace(a.Description)
		switch {
		case a.Name == "":
			return bad("agent %d has no name", i+1)
		case !agentName(a.Name):
			return bad("the agent name %q is not usable: want 1 to %d letters, digits, _ or -", a.Name, maxAgentName)
		case slices.Contains(reservedAgentNames, strings.ToLower(a.Name)):
			return bad("the agent name %q is a role name; choose another (not %s)", a.Name, strings.Join(reservedAgentNames, ", "))
		case seen[strings.ToLower(a.Name)]:
			return bad("the agent name %q is given twice", a.Name)
		case a.System == "":
			return bad("agent %q has no system prompt", a.Name)
		}
		seen[strings.ToLower(a.Name)] = true
		tools := map[string]bool{}
		for j, t := range a.Tools {
			t = strings.TrimSpace(t)
			switch {
			case !toolName(t):
				return bad("agent %q: %q is not a tool name", a.Name, t)
			case tools[t]:
				return bad("agent %q names the tool %q twice", a.Name, t)
			}
			tools[t], a.Tools[j] = true, t
		}
		agents[i] = a
	}
	return agents
}

// decodeAgents reads a list of agents from JSON (a file that starts with
// [ or {) or YAML, refusing fields an agent does not have: a typo such
// as "tool" would otherwise leave an agent without its tools.
func decodeAgents(data []byte) ([]Agent, error) {
	var agents []Agent
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && (trimmed[0] == '[' || trimmed[0] == '{') {
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&agents); err != nil {
			return nil, errors.New(strings.TrimPrefix(err.Error(), "json: "))
		}
		if dec.More() {
			return nil, errors.New("more than one JSON value")
		}
		return agents, nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(&agents)
	var te *yaml.TypeError
	switch {
	case errors.As(err, &te):
		// One line: its errors, without the Go type they speak of.
		msg := strings.Join(te.Errors, "; ")
		return nil, errors.New(strings.ReplaceAll(msg, " in type config.Agent", ""))
	case err != nil && !errors.Is(err, io.EOF):
		return nil, errors.New(strings.Join(strings.Fields(strings.TrimPrefix(err.Error(), "yaml: ")), " "))
	}
	return agents, nil
}

func agentName(s string) bool {
	if len(s) > maxAgentName {
		return false
	}
	for _, c := range s {
		if c != '_' && c != '-' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return s != ""
}

// toolName says whether s looks like a tool's name: letters, digits, _
// and -, and . for an MCP server's tools (server.tool).
func toolName(s string) bool {
	return s != "" && strings.TrimFunc(s, func(c rune) bool {
		return c == '_' || c == '-' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
	}) == ""
}

// unwrapPath drops the path from a file error: the line already names it.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// speaker reads TASKLOOM_GROUP_CHAT_SPEAKER: how a group chat chooses
// who speaks, round_robin (the default) or model.
func (r *reader) speaker(name string) string {
	v := strings.ToLower(strings.TrimSpace(r.getenv(name)))
	switch v {
	case "":
		return SpeakerRoundRobin
	case SpeakerRoundRobin, SpeakerModel:
		return v
	}
	r.fail(&Error{Var: name, Value: v, Reason: "want round_robin or model"})
	return SpeakerRoundRobin
}
