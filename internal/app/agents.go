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
	// The runtime adds the plugins' actions as it starts them, and the
	// task service is one of them: the tools are read from the plugins,
	// so no task runs before the team is checked.
	plugins, err := rt.StartOrder()
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for _, p := range plugins {
		for _, act := range p.Actions {
			if info := act.Info(); info.Tool {
				known[info.Name] = true
			}
		}
	}
	for _, a := range cfg.Agents {
		for _, tool := range a.Tools {
			if server, _, ok := strings.Cut(tool, "."); ok {
				if !slices.ContainsFunc(cfg.MCPServers, func(s config.MCPServer) bool { return s.Name == server }) {
					return &config.Error{Var: "TASKLOOM_AGENTS", Value: cfg.AgentsFile,
						Reason: fmt.Sprintf("agent %q: %q names no MCP server of TASKLOOM_MCP_SERVERS", a.Name, tool)}
				}
				continue
			}
			if !known[tool] {
				return &config.Error{Var: "TASKLOOM_AGENTS", Value: cfg.AgentsFile,
					Reason: fmt.Sprintf("agent %q: %q is not a tool tasks can use; they are %s", a.Name, tool, strings.Join(slices.Sorted(maps.Keys(known)), ", "))}
			}
		}
	}
	return nil
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
