package actions

import (
	"github.com/taskloom/taskloom/plugin"
)

// ToolConfig says how the task tools may reach the world.
type ToolConfig struct {
	// Workspaces is ignored: task files live in the store (docs/deploy.md)
	// and the file tools reach them through plugin.Call.Files. It stays
	// until its callers drop it; Workspaces.Import moves the files an
	// earlier version left there into the store.
	//
	// Deprecated: leave it unset; call Workspaces.Import at start-up.
	Workspaces Workspaces
	// HTTPAllowPrivate lets http_get reach loopback and private addresses.
	HTTPAllowPrivate bool
	// RunCommand registers run_command, which runs commands in Sandbox;
	// off unless the operator enables it.
	RunCommand bool
	Sandbox    *Sandbox
	// MaxActive and MaxTokens are the limits of a subtask's requestor and
	// the token budget a subtask starts with (TASKLOOM_MAX_ACTIVE,
	// TASKLOOM_MAX_TOKENS); zero values are domain.DefaultMaxActive and no
	// budget of its own (at most what the parent has left).
	MaxActive int
	MaxTokens int64
}

// Tools returns the tools an agent task can call (docs/tasks.md).
func Tools(c ToolConfig) []plugin.Action {
	tools := []plugin.Action{
		PostMessage{},
		WriteFile{},
		ReadFile{},
		ReadResult{},
		ListFiles{},
		&HTTPGet{AllowPrivate: c.HTTPAllowPrivate},
		AskUser{},
		CreateSubtask{MaxActive: c.MaxActive, MaxTokens: c.MaxTokens},
	}
	if c.RunCommand {
		sandbox := c.Sandbox
		if sandbox == nil {
			sandbox = &Sandbox{}
		}
		tools = append(tools, RunCommand{Sandbox: sandbox})
	}
	return tools
}
