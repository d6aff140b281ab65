package actions

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/taskloom/taskloom/plugin"
)

// MaxListEntries caps list_files' answer.
const MaxListEntries = 200

// ListFiles lists the calling task's workspace.
type ListFiles struct{ Workspaces Workspaces }

var _ plugin.Action = ListFiles{}

func (ListFiles) Info() plugin.ActionInfo {
	return plugin.ActionInfo{
		Name:        "list_files",
		Description: "List the files in the task's workspace, or in one folder of it, with their sizes.",
		Examples:    []string{`{}`, `{"path":"src"}`},
		Parameters:  schema(`{"type":"object","additionalProperties":false,"properties":{"path":{"type":"string"}}}`),
		Tool:        true,
	}
}

var errEnough = errors.New("enough entries")

func (a ListFiles) Handle(_ context.Context, call *plugin.Call) (plugin.Result, error) {
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
	start := "."
	if strings.TrimSpace(p.Path) != "" {
		rel, err := cleanRel(p.Path)
		if err != nil {
			return fail("Cannot list: %v.", err)
		}
		start = rel
	}
	root, err := a.Workspaces.Open(task.Number)
	if err != nil {
		return plugin.Result{}, err
	}
	defer root.Close()
	var lines []string
	err = fs.WalkDir(root.FS(), start, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == "." {
			return nil
		}
		if len(lines) == MaxListEntries {
			return errEnough
		}
		switch {
		case d.IsDir():
			lines = append(lines, path+"/")
		case d.Type()&fs.ModeSymlink != 0:
			lines = append(lines, path+" (link)")
		default:
			size := int64(-1)
			if info, err := d.Info(); err == nil {
				size = info.Size()
			}
			lines = append(lines, fmt.Sprintf("%s (%d bytes)", path, size))
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return fail("Cannot list %s: %v.", start, err)
	}
	if len(lines) == 0 {
		return plugin.Result{Success: true, Text: "the workspace is empty"}, nil
	}
	text := strings.Join(lines, "\n")
	if errors.Is(err, errEnough) {
		text += fmt.Sprintf("\n[only the first %d entries are listed]", MaxListEntries)
	}
	return plugin.Result{Success: true, Text: text}, nil
}
