package actions

import "github.com/taskloom/taskloom/plugin"

// ToolConfig says how the task tools may reach the world.
type ToolConfig struct {
	Workspaces Workspaces
	// HTTPAllowPrivate lets http_get reach loopback and private addresses.
	HTTPAllowPrivate bool
	// RunCommand registers run_command, which runs commands in Sandbox;
	// off unless the operator enables it.
	RunCommand bool
	Sandbox    *Sandbox
}

// Tools returns the tools an agent task can call (PRODUCT §2).
func Tools(c ToolConfig) []plugin.Action {
	tools := []plugin.Action{
		PostMessage{},
		WriteFile{Workspaces: c.Workspaces},
		ReadFile{Workspaces: c.Workspaces},
		ListFiles{Workspaces: c.Workspaces},
		&HTTPGet{AllowPrivate: c.HTTPAllowPrivate},
		AskUser{},
		CreateSubtask{},
	}
	if c.RunCommand {
		sandbox := c.Sandbox
		if sandbox == nil {
			sandbox = &Sandbox{}
		}
		tools = append(tools, RunCommand{Workspaces: c.Workspaces, Sandbox: sandbox})
	}
	return tools
}
