// Package mcp offers the tools of MCP servers to agent tasks
// (PRODUCT §12): each server of TASKLOOM_MCP_SERVERS is reached through the
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
// A stdio server's environment is PATH and HOME and the env configured for
// it, nothing else: no key or token of Taskloom's reaches it. Nor can it
// read them in Taskloom's /proc/PID/environ: before the first stdio server
// starts, Taskloom makes itself undumpable (Linux's prctl PR_SET_DUMPABLE),
// which closes its /proc files to other processes of its user.
//
// A call has its own deadline (Options.CallTimeout) inside the caller's
// context. Its text content, joined, is the step's result; a result marked
// isError fails the step with that text. Tools are for tasks: a chat
// message cannot call one directly (it would skip tool approval).
package mcp
