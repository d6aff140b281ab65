package actions

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/taskloom/taskloom/plugin"
)

// Workspaces gives each task a directory of its own under Root. File tools
// open it with os.Root, so no path — "..", an absolute path, or a symlink
// planted in the workspace — reaches outside it.
type Workspaces struct {
	Root string
}

// Dir is the workspace directory of a task.
func (w Workspaces) Dir(task int64) string {
	return filepath.Join(w.Root, "task-"+strconv.FormatInt(task, 10))
}

// Open creates (if needed) and opens a task's workspace.
func (w Workspaces) Open(task int64) (*os.Root, error) {
	if w.Root == "" {
		return nil, errors.New("no workspace root is configured")
	}
	dir := w.Dir(task)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("workspace of task #%d: %w", task, err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace of task #%d: %w", task, err)
	}
	return r, nil
}

// Copy copies the regular files of task from's workspace into task to's
// (a retry starts with the files of the task it continues). Symbolic links
// and other special files are left behind: they could point anywhere.
func (w Workspaces) Copy(from, to int64) error {
	if _, err := os.Stat(w.Dir(from)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	src, err := w.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := w.Open(to)
	if err != nil {
		return err
	}
	defer dst.Close()
	err = fs.WalkDir(src.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir():
			if p == "." {
				return nil
			}
			return dst.Mkdir(p, 0o750)
		case !d.Type().IsRegular():
			return nil
		}
		data, err := src.ReadFile(p)
		if err != nil {
			return err
		}
		return dst.WriteFile(p, data, 0o640)
	})
	if err != nil {
		return fmt.Errorf("copy the files of task #%d to #%d: %w", from, to, err)
	}
	return nil
}

// cleanRel turns a tool's path into one relative to the workspace, or
// refuses it.
func cleanRel(p string) (string, error) {
	p = strings.TrimSpace(p)
	if p == "" {
		return "", errors.New("the path is empty")
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "~") {
		return "", fmt.Errorf("%q is outside the task's workspace: use a relative path", p)
	}
	c := filepath.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%q is outside the task's workspace", p)
	}
	return c, nil
}

// taskOf returns the task calling a tool, or the sentence refusing a chat
// call.
func taskOf(call *plugin.Call) (*plugin.Task, *plugin.Result) {
	if call.Task == nil {
		return nil, &plugin.Result{Error: "That is a tool for agent tasks; it cannot be used from chat."}
	}
	return call.Task, nil
}

// decode reads a tool's parameters into v, refusing anything that is not
// a JSON object of the right shape.
func decode(params json.RawMessage, v any) *plugin.Result {
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	if err := json.Unmarshal(params, v); err != nil {
		return &plugin.Result{Error: "The parameters are not valid: " + err.Error()}
	}
	return nil
}

func fail(format string, args ...any) (plugin.Result, error) {
	return plugin.Result{Error: fmt.Sprintf(format, args...)}, nil
}

func schema(s string) json.RawMessage { return json.RawMessage(s) }
