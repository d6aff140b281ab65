package actions

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/taskloom/taskloom/plugin"
)

// MaxWriteBytes caps what one write_file call may write.
const MaxWriteBytes = 1 << 20

// WriteFile writes a file in the calling task's workspace.
type WriteFile struct{ Workspaces Workspaces }

var _ plugin.Action = WriteFile{}

func (WriteFile) Info() plugin.ActionInfo {
	return plugin.ActionInfo{
		Name:        "write_file",
		Description: "Write a text file in the task's workspace, creating folders as needed and replacing any file already there.",
		Examples:    []string{`{"path":"notes/plan.md","content":"# Plan\n..."}`},
		Parameters:  schema(`{"type":"object","additionalProperties":false,"required":["path","content"],"properties":{"path":{"type":"string","description":"relative path inside the workspace"},"content":{"type":"string"}}}`),
		Tool:        true,
	}
}

func (a WriteFile) Handle(_ context.Context, call *plugin.Call) (plugin.Result, error) {
	task, refused := taskOf(call)
	if refused != nil {
		return *refused, nil
	}
	var p struct {
		Path    string  `json:"path"`
		Content *string `json:"content"`
	}
	if r := decode(call.Params, &p); r != nil {
		return *r, nil
	}
	if p.Content == nil {
		return fail("write_file needs content.")
	}
	if len(*p.Content) > MaxWriteBytes {
		return fail("The content is %d bytes; write_file takes at most %d.", len(*p.Content), MaxWriteBytes)
	}
	rel, err := cleanRel(p.Path)
	if err != nil {
		return fail("Cannot write: %v.", err)
	}
	root, err := a.Workspaces.Open(task.Number)
	if err != nil {
		return plugin.Result{}, err
	}
	defer root.Close()
	if dir := filepath.Dir(rel); dir != "." {
		if err := root.MkdirAll(dir, 0o750); err != nil {
			return fail("Cannot write %s: %v.", rel, err)
		}
	}
	if err := root.WriteFile(rel, []byte(*p.Content), 0o640); err != nil {
		return fail("Cannot write %s: %v.", rel, err)
	}
	return plugin.Result{Success: true, Text: fmt.Sprintf("wrote %s (%d bytes)", rel, len(*p.Content))}, nil
}
