// Package mcp offers the tools of MCP servers to agent tasks:
// each server of TASKLOOM_MCP_SERVERS is reached through the
// official Go SDK (github.com/modelcontextprotocol/go-sdk), over stdio for
// a command or over streamable HTTP for a URL, and each of its tools
// becomes the action "<server>.<tool>", with the tool's input schema as its
// parameters, so the iteration prompt shows it and TASKLOOM_APPROVE_TOOLS
// can name it like any other tool.
//
// Tools.Plugin is the "mcp" plugin. Its service connects to every server
// at once when it starts and registers their tools with
// plugin.Runtime.SetActions, one source per server ("mcp:<server>"). When a
// server says its tools changed (notifications/tools/list_changed), they
// are listed again and the source replaced; when a server goes away, its
// tools go with it. A server that cannot be started, reached or listed is
// one log line naming it and has no tools: the rest runs. Stop closes every
// session, and ends a stdio server's process group.
//
// A stdio server runs in the sandbox run_command uses (Options.Sandbox,
// an *actions.Sandbox; see actions.Sandbox.Server): its environment is
// PATH, HOME and LANG and the env configured for it, nothing else — no
// key or token of Taskloom's reaches it; it sees no process but its own,
// and of the host only the system and its own files, read-only; its HOME
// is a scratch directory of its own; the memory, process and file size
// limits hold (CPU time does not: it adds up over the days a server
// runs); and it has no network unless its configuration says so, and
// then only through the egress proxy. Its stdin and stdout carry the
// protocol through bwrap; its stderr is logged at debug level.
//
// A call has its own deadline (Options.CallTimeout) inside the caller's
// context. Its text content, joined, is the step's result; a result marked
// isError fails the step with that text. Tools are for tasks: a chat
// message cannot call one directly (it would skip tool approval).
package mcp
