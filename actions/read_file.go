package actions

import (
	"context"
	"fmt"
	"io"

	"github.com/taskloom/taskloom/plugin"
)

// MaxReadBytes caps what read_file returns to the model.
const MaxReadBytes = 64 << 10

// ReadFile reads a file from the calling task's workspace.
type ReadFile struct{ Workspaces Workspaces }

var _ plugin.Action = ReadFile{}

func (ReadFile) Info() plugin.ActionInfo {
	return plugin.ActionInfo{
		Name:        "read_file",
		Description: "Read a text file from the task's workspace (at most 64 KiB are returned).",
		Examples:    []string{`{"path":"notes/plan.md"}`},
		Parameters:  schema(`{"type":"object","additionalProperties":false,"required":["path"],"properties":{"path":{"type":"string"}}}`),
		Tool:        true,
	}
}

func (a ReadFile) Handle(_ context.Context, call *plugin.Call) (plugin.Result, error) {
	task, refused := taskOf(call)
	if refused != nil {
		return *refused, nil
	}
	var p struct {
		Path string `json:"path"`
	}
	if r := decode(call.Params, &p); r != nil {
		return *r, nil
	}
	rel, err := cleanRel(p.Path)
	if err != nil {
		return fail("Cannot read: %v.", err)
	}
	root, err := a.Workspaces.Open(task.Number)
	if err != nil {
		return plugin.Result{}, err
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		return fail("Cannot read %s: %v.", rel, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return fail("%s is a folder; use list_files.", rel)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxReadBytes+1))
	if err != nil {
		return fail("Cannot read %s: %v.", rel, err)
	}
	text := string(data)
	if len(data) > MaxReadBytes {
		text = string(data[:MaxReadBytes]) + fmt.Sprintf("\n[truncated: the file is longer than %d bytes]", MaxReadBytes)
	}
	return plugin.Result{Success: true, Text: text}, nil
}
