package actions

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/taskloom/taskloom/plugin"
)

// MaxListEntries caps list_files' answer.
const MaxListEntries = 200

// ListFiles lists the calling task's files, with the writes of its
// iteration so far.
type ListFiles struct{}

var _ plugin.Action = ListFiles{}

func (ListFiles) Info() plugin.ActionInfo {
	return plugin.ActionInfo{
		Name:        "list_files",
		Description: "List the files in the task's workspace, or in one folder of it, with their sizes.",
		Examples:    []string{`{}`, `{"path":"src"}`},
		Parameters:  schema(`{"type":"object","additionalProperties":false,"properties":{"path":{"type":"string"}}}`),
		Tool:        true,
		TaskOnly:    true,
	}
}

func (ListFiles) Handle(ctx context.Context, call *plugin.Call) (plugin.Result, error) {
	_, files, refused := filesOf(call)
	if refused != nil {
		return *refused, nil
	}
	var p struct {
		Path string `json:"path"`
	}
	if r := decode(call.Params, &p); r != nil {
		return *r, nil
	}
	start := ""
	if s := strings.TrimSpace(p.Path); s != "" && path.Clean(s) != "." {
		rel, err := cleanRel(s)
		if err != nil {
			return fail("Cannot list: %v.", err)
		}
		start = rel
	}
	all, err := files.List(ctx)
	if err != nil {
		return plugin.Result{}, fmt.Errorf("list_files: %w", err)
	}
	// The files come by path, a folder's together: each folder is named
	// once, before its first file, as a walk of the tree would.
	var lines []string
	shown := map[string]bool{}
	for _, f := range all {
		if start != "" && f.Path != start && !strings.HasPrefix(f.Path, start+"/") {
			continue
		}
		var dirs []string
		for d := path.Dir(f.Path); d != "." && d != start && !shown[d]; d = path.Dir(d) {
			dirs = append(dirs, d)
		}
		for i := len(dirs) - 1; i >= 0; i-- {
			shown[dirs[i]] = true
			lines = append(lines, dirs[i]+"/")
		}
		lines = append(lines, fmt.Sprintf("%s (%d bytes)", f.Path, f.Size))
	}
	switch {
	case len(lines) > 0:
	case start != "":
		return fail("Cannot list %s: there is no such file or folder.", start)
	default:
		return plugin.Result{Success: true, Text: "the workspace is empty"}, nil
	}
	if len(lines) > MaxListEntries {
		return plugin.Result{Success: true, Text: strings.Join(lines[:MaxListEntries], "\n") +
			fmt.Sprintf("\n[only the first %d of %d entries are listed]", MaxListEntries, len(lines))}, nil
	}
	return plugin.Result{Success: true, Text: strings.Join(lines, "\n")}, nil
}
