package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/render"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/tasks"
)

// CreateTask creates a task from chat: `create task Build auth`.
type CreateTask struct{ *Chat }

var (
	_ plugin.Action         = CreateTask{}
	_ plugin.CommandMatcher = CreateTask{}
)

func (a CreateTask) Info() plugin.ActionInfo {
	// The strategies are the task service's (actions/strategies.go): the
	// schema names each, so a model and a person see the same list.
	names := a.Chat.Strategies()
	enum, err := json.Marshal(names)
	if err != nil {
		enum = []byte(`["loop"]`) // strings always encode
	}
	desc, err := json.Marshal("how the task is worked: " + strategyList(names))
	if err != nil {
		desc = []byte(`""`)
	}
	return plugin.ActionInfo{
		Name:        createTaskName,
		Similes:     []string{"new task", "work on", "start task"},
		Description: "Create a background task that an agent works on step by step, reporting progress in this room.",
		Examples:    []string{"create task Build auth", "work on building auth", "/task create Build auth", "create review task Build auth"},
		Parameters:  schema(`{"type":"object","additionalProperties":false,"required":["goal"],"properties":{"goal":{"type":"string","minLength":1,"maxLength":4000},"name":{"type":"string","maxLength":80},"strategy":{"type":"string","enum":` + string(enum) + `,"description":` + string(desc) + `},"max_iterations":{"type":"integer","minimum":1,"maximum":10000}}}`),
	}
}

// Strategies lists the strategies create_task accepts: its task
// service's. The adapters read them through the runtime's create_task
// (Strategies).
func (a CreateTask) Strategies() []string { return a.Chat.Strategies() }

func (CreateTask) MatchCommand(msg *plugin.Message) (json.RawMessage, bool) {
	return match(msg, CmdCreate)
}

func (a CreateTask) Handle(ctx context.Context, call *plugin.Call) (plugin.Result, error) {
	msg, refused := chatMessage(call)
	if refused != nil {
		return *refused, nil
	}
	var p struct {
		Goal     string `json:"goal"`
		Name     string `json:"name"`
		Strategy string `json:"strategy"`
		// MaxIterations, when set (the Slack modal's field), replaces the
		// configured limit.
		MaxIterations int `json:"max_iterations"`
	}
	if r := decode(call.Params, &p); r != nil {
		return *r, nil
	}
	maxIterations := a.MaxIterations
	switch {
	case p.MaxIterations < 0 || p.MaxIterations > MaxIterationsCap:
		return fail("Cannot create the task: max iterations must be from 1 to %d.", MaxIterationsCap)
	case p.MaxIterations > 0:
		maxIterations = p.MaxIterations
	}
	if strings.TrimSpace(p.Goal) == "" {
		return fail("What should the task do? Say `create task <goal>`, for example `create task Build auth`.")
	}
	t, err := a.Tasks.Create(ctx, domain.NewTask{
		Name: p.Name, Goal: p.Goal, Strategy: p.Strategy, RequestorID: msg.AuthorID, Platform: msg.Platform, RoomID: msg.Room,
		WorkspaceID: WorkspaceOf(msg), MaxIterations: maxIterations, MaxStaleIterations: a.MaxStaleIterations,
		Origin: originOf(msg), Actor: msg.AuthorID, Now: call.Runtime.Clock().Now(),
	})
	switch {
	case errors.Is(err, domain.ErrInvalid), errors.Is(err, tasks.ErrTooManyActive):
		return fail("Cannot create the task: %s.", reason(err))
	case err != nil:
		return plugin.Result{}, err
	}
	f := render.ForPlatform(msg.Platform)
	return plugin.Result{
		Success: true, TaskNumber: t.Number,
		Text: fmt.Sprintf("🧵 Created task #%d %s. I'll post progress here; say %s to check on it.",
			t.Number, quoted(f, t.Name), inlineCode(f, fmt.Sprintf("status #%d", t.Number))),
	}, nil
}

// MaxIterationsCap is the most max_iterations a person may ask for, as
// on the API.
const MaxIterationsCap = 10000

// reason is what an error says after the sentinel it wraps ("create
// task: invalid input: the goal is empty" → "the goal is empty"), to end a
// sentence for the user.
func reason(err error) string {
	s := err.Error()
	for _, sentinel := range []error{domain.ErrInvalid, domain.ErrLimit} {
		if _, after, ok := strings.Cut(s, sentinel.Error()+": "); ok {
			return after
		}
	}
	return s
}

func quoted(f render.Flavor, name string) string { return `"` + render.Escape(f, name) + `"` }

func inlineCode(f render.Flavor, s string) string {
	if f == render.Plain {
		return "'" + s + "'"
	}
	return "`" + s + "`"
}

// originOf is the origin of a task msg asks for (domain.NewTask.Origin):
// its platform and ID, so that the message handled twice makes one task;
// "" for a message without an ID.
func originOf(msg *plugin.Message) string {
	if msg.ID == "" || msg.Platform == "" {
		return ""
	}
	return msg.Platform + ":" + msg.ID
}
