package actions

import (
	"context"
	"encoding/json"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/render"
	"github.com/taskloom/taskloom/plugin"
)

// QueueShown caps the tasks the queue view lists.
const QueueShown = 15

// ListTasks shows the queue of the workspace: `list tasks`, `show queue`.
type ListTasks struct{ *Chat }

var (
	_ plugin.Action         = ListTasks{}
	_ plugin.CommandMatcher = ListTasks{}
)

func (ListTasks) Info() plugin.ActionInfo {
	return plugin.ActionInfo{
		Name:        "list_tasks",
		Similes:     []string{"show queue", "tasks"},
		Description: "Show the task queue of this workspace with progress bars, in the order tasks are served.",
		Examples:    []string{"list tasks", "show queue", "/task list"},
		Parameters:  schema(`{"type":"object","additionalProperties":false,"properties":{}}`),
	}
}

func (ListTasks) MatchCommand(msg *plugin.Message) (json.RawMessage, bool) {
	return match(msg, CmdList)
}

// activeStatuses are the tasks the queue view shows.
var activeStatuses = []domain.Status{domain.StatusQueued, domain.StatusRunning, domain.StatusPaused, domain.StatusWaiting}

func (a ListTasks) Handle(ctx context.Context, call *plugin.Call) (plugin.Result, error) {
	msg, refused := chatMessage(call)
	if refused != nil {
		return *refused, nil
	}
	st := call.Runtime.Store()
	f := domain.TaskFilter{WorkspaceID: WorkspaceOf(msg), Statuses: activeStatuses, Order: domain.OrderQueue}
	total, err := st.CountTasks(ctx, f)
	if err != nil {
		return plugin.Result{}, err
	}
	f.Limit = QueueShown
	list, err := st.ListTasks(ctx, f)
	if err != nil {
		return plugin.Result{}, err
	}
	return plugin.Result{Success: true, Text: render.Queue(render.ForPlatform(msg.Platform), list, total, call.Runtime.Clock().Now())}, nil
}
