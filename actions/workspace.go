package actions

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// Workspaces is where an earlier version of Taskloom kept each task's
// files: a directory task-N under Root (TASKLOOM_DATA_DIR/workspaces).
// Task files live in the store now (docs/deploy.md); Import moves what is
// left on disk into it.
type Workspaces struct {
	Root string
}

// Dir is the workspace directory of a task.
func (w Workspaces) Dir(task int64) string {
	return filepath.Join(w.Root, "task-"+strconv.FormatInt(task, 10))
}

// cleanRel turns a tool's path into the one the task's files keep, or
// refuses it: relative, cleaned, with "/" between its parts, never
// climbing out with "..".
func cleanRel(p string) (string, error) { return domain.CleanFilePath(p) }

// filesOf returns the task calling a file tool and its files as the
// iteration sees them, or the sentence refusing a call from chat or from
// outside an iteration.
func filesOf(call *plugin.Call) (*domain.Task, domain.Files, *plugin.Result) {
	task, refused := taskOf(call)
	if refused != nil {
		return nil, nil, refused
	}
	if call.Files == nil {
		return nil, nil, &plugin.Result{Error: "The task's files can be reached only while one of its iterations runs."}
	}
	return task, call.Files, nil
}

// fileRefusal is the phrase for a file operation the Files view refused
// (a path, a limit), or false for an error of the store.
func fileRefusal(err error) (string, bool) {
	var fe *domain.FileError
	if errors.As(err, &fe) {
		return fe.Reason, true
	}
	return "", false
}

// taskOf returns the task calling a tool, or the sentence refusing a chat
// call.
func taskOf(call *plugin.Call) (*domain.Task, *plugin.Result) {
	if call.Task == nil {
		return nil, &plugin.Result{Error: "That is a tool for agent tasks; it cannot be used from chat."}
	}
	return call.Task, nil
}

// decode reads an action's parameters into v strictly
// (plugin.DecodeStrict): anything but a JSON object of v's shape, a key
// given twice, one in another case than v's field or one v has no field
// for is refused with one sentence. Chat commands and tools alike decode
// their parameters here.
func decode(params json.RawMessage, v any) *plugin.Result {
	if err := plugin.DecodeStrict(params, v); err != nil {
		return &plugin.Result{Error: err.Error()}
	}
	return nil
}

func fail(format string, args ...any) (plugin.Result, error) {
	return plugin.Result{Error: fmt.Sprintf(format, args...)}, nil
}

func schema(s string) json.RawMessage { return json.RawMessage(s) }
