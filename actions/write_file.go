package actions

import (
	"context"
	"fmt"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// MaxWriteBytes caps what one write_file call may write: the size of one
// task file (docs/deploy.md).
const MaxWriteBytes = domain.MaxFileBytes

// WriteFile writes a file of the calling task. The write is the
// iteration's until it commits: later tools of the same iteration read it,
// and a result refused for a lost lease writes nothing.
type WriteFile struct{}

var _ plugin.Action = WriteFile{}

func (WriteFile) Info() plugin.ActionInfo {
	return plugin.ActionInfo{
		Name:        "write_file",
		Description: "Write a text file in the task's workspace, creating folders as needed and replacing any file already there (1 MiB a file; 20 MiB and 1,000 files a task).",
		Examples:    []string{`{"path":"notes/plan.md","content":"# Plan\n..."}`},
		Parameters:  schema(`{"type":"object","additionalProperties":false,"required":["path","content"],"properties":{"path":{"type":"string","description":"relative path inside the workspace"},"content":{"type":"string"}}}`),
		Tool:        true,
		TaskOnly:    true,
	}
}

func (WriteFile) Handle(ctx context.Context, call *plugin.Call) (plugin.Result, error) {
	_, files, refused := filesOf(call)
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
	if err := files.Write(ctx, rel, []byte(*p.Content)); err != nil {
		if why, ok := fileRefusal(err); ok {
			return fail("Cannot write %s: %s.", rel, why)
		}
		return plugin.Result{}, fmt.Errorf("write_file %s: %w", rel, err)
	}
	return plugin.Result{Success: true, Text: fmt.Sprintf("wrote %s (%d bytes)", rel, len(*p.Content))}, nil
}
