package actions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/taskloom/taskloom/plugin"
)

// Defaults for run_command.
const (
	DefaultCommandTimeout = 2 * time.Minute
	DefaultCommandOutput  = 64 << 10
)

// RunCommand runs a shell command in the task's workspace. It is
// registered only when the operator enables it (TASKLOOM_RUN_COMMAND=1): it
// is as powerful as the account Taskloom runs as.
type RunCommand struct {
	Workspaces Workspaces
	Timeout    time.Duration
	MaxOutput  int
}

var _ plugin.Action = RunCommand{}

func (RunCommand) Info() plugin.ActionInfo {
	return plugin.ActionInfo{
		Name:        "run_command",
		Description: "Run a shell command in the task's workspace and return its exit status and output (time and output are capped).",
		Examples:    []string{`{"command":"go test ./..."}`},
		Parameters:  schema(`{"type":"object","additionalProperties":false,"required":["command"],"properties":{"command":{"type":"string"}}}`),
		Tool:        true,
	}
}

// capped keeps the first n bytes written to it and counts the rest.
type capped struct {
	buf     bytes.Buffer
	n       int
	dropped int
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.n - c.buf.Len()
	if room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	if len(p) > room {
		c.dropped += len(p) - max(room, 0)
	}
	return len(p), nil
}

func (a RunCommand) Handle(ctx context.Context, call *plugin.Call) (plugin.Result, error) {
	task, refused := taskOf(call)
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
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = DefaultCommandTimeout
	}
	limit := a.MaxOutput
	if limit <= 0 {
		limit = DefaultCommandOutput
	}
	dir := a.Workspaces.Dir(task.Number)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return plugin.Result{}, fmt.Errorf("workspace of task #%d: %w", task.Number, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", p.Command)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TASKLOOM_TASK="+fmt.Sprint(task.Number))
	// Kill the whole process group on timeout, not just the shell.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	out := &capped{n: limit}
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	text := out.buf.String()
	if out.dropped > 0 {
		text += fmt.Sprintf("\n[%d more bytes of output dropped]", out.dropped)
	}
	var exit *exec.ExitError
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return plugin.Result{Text: text, Error: fmt.Sprintf("The command ran out of time after %s.", timeout)}, nil
	case errors.As(err, &exit):
		return plugin.Result{Text: fmt.Sprintf("exit status %d\n%s", exit.ExitCode(), text), Error: fmt.Sprintf("The command exited with status %d.", exit.ExitCode())}, nil
	case err != nil:
		return fail("Cannot run the command: %v.", err)
	}
	return plugin.Result{Success: true, Text: "exit status 0\n" + text}, nil
}
