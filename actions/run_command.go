package actions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/taskloom/taskloom/plugin"
)

// RunCommand runs a shell command inside the Sandbox, in a temporary
// directory holding the task's files as its iteration sees them; what the
// command changes there is written back to the iteration's files, within
// the limits of the task's files (1 MiB a file, 20 MiB and 1,000 files a
// task), and committed with its result. A command a sandbox limit stopped
// fails its step with a sentence naming the limit.
// It is registered only when the operator enables it
// (TASKLOOM_RUN_COMMAND=true), and start-up refuses that when the sandbox
// cannot be made.
type RunCommand struct {
	Sandbox *Sandbox
}

var _ plugin.Action = RunCommand{}

func (RunCommand) Info() plugin.ActionInfo {
	return plugin.ActionInfo{
		Name:        "run_command",
		Description: "Run a shell command in a sandbox whose working directory (" + SandboxWorkDir + ") holds the task's workspace, and return its exit status and output (60 seconds and 64 KiB of output at most; limits on memory, processes, file size, writable space and CPU time; no network unless the operator allows it, and then only public addresses through an HTTP proxy given as HTTP_PROXY/HTTPS_PROXY). Regular files it creates, changes or removes there are kept in the workspace (1 MiB a file; 20 MiB and 1,000 files a task); empty folders, links and file modes are not.",
		Examples:    []string{`{"command":"go test ./..."}`},
		Parameters:  schema(`{"type":"object","additionalProperties":false,"required":["command"],"properties":{"command":{"type":"string"}}}`),
		Tool:        true,
		TaskOnly:    true,
	}
}

func (a RunCommand) Handle(ctx context.Context, call *plugin.Call) (plugin.Result, error) {
	task, files, refused := filesOf(call)
	if refused != nil {
		return *refused, nil
	}
	var p struct {
		Command string `json:"command"`
	}
	if r := decode(call.Params, &p); r != nil {
		return *r, nil
	}
	if strings.TrimSpace(p.Command) == "" {
		return fail("run_command needs a command.")
	}
	if a.Sandbox == nil {
		return plugin.Result{}, errors.New("run_command has no sandbox")
	}
	dir, err := layOut(ctx, a.Sandbox, files, task.Number)
	if err != nil {
		return plugin.Result{}, fmt.Errorf("run_command for task #%d: %w", task.Number, err)
	}
	defer func() {
		if err := dir.remove(); err != nil && call.Runtime != nil {
			call.Runtime.Logger().Warn("run_command left its directory behind", "task", task.Number, "err", err)
		}
	}()
	out, err := a.Sandbox.Run(ctx, dir.dir, p.Command, task.Number)
	if err != nil {
		return plugin.Result{}, fmt.Errorf("run_command for task #%d: %w", task.Number, err)
	}
	notes, err := dir.writeBack(ctx, files)
	if err != nil {
		return plugin.Result{}, fmt.Errorf("run_command for task #%d: keep its files: %w", task.Number, err)
	}
	text := out.Text
	if out.Dropped > 0 {
		text += fmt.Sprintf("\n[%d more bytes of output dropped]", out.Dropped)
	}
	if len(notes) > 0 {
		text += "\n" + strings.Join(notes, "\n")
	}
	cut := ""
	if out.CutOff != "" {
		cut = "The command was cut off from the network: " + out.CutOff + "."
		text += "\n[cut off from the network]"
	}
	switch {
	case out.TimedOut:
		timeout := a.Sandbox.Timeout
		if timeout <= 0 {
			timeout = DefaultCommandTimeout
		}
		return plugin.Result{Text: text, Error: joinSentences(fmt.Sprintf("The command ran out of time after %s and was killed with everything it started.", timeout), cut)}, nil
	case out.ExitCode != 0:
		why := fmt.Sprintf("The command exited with status %d.", out.ExitCode)
		if out.Limit != "" {
			why += " " + a.Sandbox.Limits.Describe(out.Limit)
			text += "\n[stopped by the " + out.Limit + " limit]"
		}
		return plugin.Result{Text: fmt.Sprintf("exit status %d\n%s", out.ExitCode, text), Error: joinSentences(why, cut)}, nil
	case cut != "":
		// It exited 0, but what it did through the network was cut
		// short: the step fails and says so.
		return plugin.Result{Text: "exit status 0\n" + text, Error: cut}, nil
	}
	return plugin.Result{Success: true, Text: "exit status 0\n" + text}, nil
}

// joinSentences joins the sentences that are not empty with a space.
func joinSentences(s ...string) string {
	return strings.Join(slices.DeleteFunc(s, func(x string) bool { return x == "" }), " ")
}
