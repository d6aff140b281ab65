package app

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/taskloom/taskloom/internal/config"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/tasks"
)

// teamOf is the task service's team: the agents of TASKLOOM_AGENTS (nil
// for the built-in ones) and how a group chat chooses who speaks.
func teamOf(cfg config.Config) ([]tasks.Agent, tasks.TeamOptions) {
	var agents []tasks.Agent
	for _, a := range cfg.Agents {
		agents = append(agents, tasks.Agent{Name: a.Name, Description: a.Description, System: a.System, Tools: slices.Clone(a.Tools)})
	}
	return agents, tasks.TeamOptions{Speaker: cfg.GroupChatSpeaker}
}

// checkAgents refuses a TASKLOOM_AGENTS whose agents name a tool no task
// has, once the plugins have registered their actions: the agent could
// never take the step it is there for. An MCP server's tools
// (server.tool) are listed only once it has started, so for them only
// the server is checked here, and warnAgentTools looks again after
// start-up.
func checkAgents(cfg config.Config, rt *plugin.Runtime) error {
	if len(cfg.Agents) == 0 {
		return nil
	}
	tools, err := newToolCheck(cfg, rt)
	if err != nil {
		return err
	}
	for _, a := range cfg.Agents {
		for _, tool := range a.Tools {
			if reason := tools.check(tool); reason != "" {
				return &config.Error{Var: "TASKLOOM_AGENTS", Value: cfg.AgentsFile, Reason: fmt.Sprintf("agent %q: %s", a.Name, reason)}
			}
		}
	}
	return nil
}

// checkApproveTools refuses a TASKLOOM_APPROVE_TOOLS that names a tool no
// task has (run_command is always allowed: it is the default, whether or
// not TASKLOOM_RUN_COMMAND turns it on): a typo would let the tool meant
// run unapproved.
func checkApproveTools(cfg config.Config, rt *plugin.Runtime) error {
	tools, err := newToolCheck(cfg, rt)
	if err != nil {
		return err
	}
	for _, name := range cfg.ApproveTools {
		if name == "run_command" {
			continue
		}
		if reason := tools.check(name); reason != "" {
			return &config.Error{Var: "TASKLOOM_APPROVE_TOOLS", Value: strings.Join(cfg.ApproveTools, ","), Reason: reason}
		}
	}
	return nil
}

// toolCheck knows, before the runtime starts, which tools tasks will
// have: the tool actions of the registered plugins (the runtime adds them
// only as it starts each plugin) and the MCP servers configured.
type toolCheck struct {
	cfg   config.Config
	known map[string]bool
}

func newToolCheck(cfg config.Config, rt *plugin.Runtime) (toolCheck, error) {
	plugins, err := rt.StartOrder()
	if err != nil {
		return toolCheck{}, err
	}
	known := map[string]bool{}
	for _, p := range plugins {
		for _, act := range p.Actions {
			if info := act.Info(); info.Tool {
				known[info.Name] = true
			}
		}
	}
	return toolCheck{cfg: cfg, known: known}, nil
}

// check says why tool is not one tasks can use, or "" when it is. For
// server.tool only the server can be checked before it starts.
func (c toolCheck) check(tool string) string {
	if server, _, ok := strings.Cut(tool, "."); ok {
		if !slices.ContainsFunc(c.cfg.MCPServers, func(s config.MCPServer) bool { return s.Name == server }) {
			return fmt.Sprintf("%q names no MCP server of TASKLOOM_MCP_SERVERS", tool)
		}
		return ""
	}
	if !c.known[tool] {
		return fmt.Sprintf("%q is not a tool tasks can use; they are %s", tool, strings.Join(slices.Sorted(maps.Keys(c.known)), ", "))
	}
	return ""
}

// warnAgentTools logs, once the runtime has started, each MCP tool an
// agent names that its server does not offer: the server may offer it
// later (its tools can change while it runs), so it is not fatal.
func warnAgentTools(cfg config.Config, rt *plugin.Runtime, log *slog.Logger) {
	for _, a := range cfg.Agents {
		for _, tool := range a.Tools {
			if _, ok := rt.Action(tool); !ok && strings.Contains(tool, ".") {
				log.Warn("TASKLOOM_AGENTS names an MCP tool that its server does not offer (now); check the name", "agent", a.Name, "tool", tool)
			}
		}
	}
}
