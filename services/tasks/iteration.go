package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// Iterator runs one agent iteration of a claimed task. It does not commit:
// the caller applies the Outcome under its lease.
type Iterator struct {
	Runtime *plugin.Runtime
	History History
	// Metrics, when set, observes the model call.
	Metrics Metrics
	// Temperature is the base temperature of a request; each failed step
	// in a row adds StressStep, up to 1 (xaibo's stress level).
	Temperature float64
	// ApproveTools are the tools a person must approve before a task runs
	// them (TASKLOOM_APPROVE_TOOLS).
	ApproveTools []string
	// Memory, when set, gives each iteration's prompt its "Relevant
	// memory" section.
	Memory MemorySection

	strategies strategies
	team       team // the agents of the multi-agent strategies
}

// DefaultTemperature is TASKLOOM_TEMPERATURE's default; StressStep is what
// each failed step in a row adds to it.
const (
	DefaultTemperature = 0.2
	StressStep         = 0.1
)

// ModelFailure is the error Run returns when the model could not be used
// at all (it did not answer, or refused the request): not the task's
// failure, so no step is recorded and the caller releases the task.
type ModelFailure struct {
	Class plugin.ModelErrorClass
	Err   error
}

func (e *ModelFailure) Error() string { return fmt.Sprintf("model %s: %v", e.Class, e.Err) }
func (e *ModelFailure) Unwrap() error { return e.Err }

// Run gives a claimed task one iteration: its strategy's claim (for
// loop: build the prompt, make the one model call, parse the decision,
// run the chosen tool) and the outcome to commit. Nothing here fails the
// task outright: a reply that is not a decision, an unknown tool or a
// tool error each become a failed step whose progress does not count, so
// the stale counter — not a crash — ends a task that cannot go on. A
// model that cannot be used at all is not the task's doing: Run returns a
// *ModelFailure and no outcome.
func (it *Iterator) Run(ctx context.Context, task domain.Task) (domain.Outcome, error) {
	return it.run(ctx, task, domain.NewFileView(it.Runtime.Store(), task.Number))
}

// run is Run with files, the iteration's view of the task's files: what
// its tool writes is kept there and committed with the outcome, under the
// lease.
func (it *Iterator) run(ctx context.Context, task domain.Task, files *domain.FileView) (domain.Outcome, error) {
	rt := it.Runtime
	finish := func(o domain.Outcome) (domain.Outcome, error) {
		o.Now = rt.Clock().Now()
		if len(o.Step.Result) > domain.MaxResultBytes {
			o.Step.Result = clipBytes(o.Step.Result, domain.MaxResultBytes)
		}
		for i := range o.Steps { // each call of a tools reply is a step, kept to the same size
			if len(o.Steps[i].Result) > domain.MaxResultBytes {
				o.Steps[i].Result = clipBytes(o.Steps[i].Result, domain.MaxResultBytes)
			}
		}
		return o, nil
	}
	turn := &Turn{Task: task, Runtime: rt, it: it, files: files}
	if task.ApprovalGranted {
		// A person approved the call this task asked to make: run exactly
		// that, with no new model call (domain.ToolRan).
		o := turn.Outcome()
		o.Approved = true
		o.Step.Action, o.Step.Params = task.ApprovalAction, json.RawMessage(task.ApprovalParams)
		// Turn.Act kept the call decoded strictly; a call asked before
		// it did (a request pending across an upgrade) is read the same
		// way, and refused rather than run otherwise than it reads.
		if a, ok := rt.Action(task.ApprovalAction); ok {
			if _, err := a.Info().DecodeParams(o.Step.Params); err != nil {
				o.Step.Success, o.Step.Error = false, err.Error()
				return finish(o)
			}
		}
		if reason, ok := it.runTool(ctx, task, files, &o); !ok {
			o.Step.Success, o.Step.Error = false, reason
		}
		return finish(o)
	}
	strategy, ok := it.strategies.byName[strategyName(task.Strategy)]
	if !ok {
		o := turn.Outcome()
		turn.Fail(&o, "", fmt.Sprintf("%v: %q", errNoStrategy, task.Strategy))
		return finish(o)
	}
	if err := it.load(ctx, turn); err != nil {
		o := turn.Outcome()
		turn.Fail(&o, "", "could not build the prompt: "+err.Error())
		return finish(o)
	}
	o, err := strategy.Claim(ctx, turn)
	if err != nil {
		var mf *ModelFailure
		if errors.As(err, &mf) {
			return domain.Outcome{}, err
		}
		o = turn.Outcome()
		turn.Fail(&o, "", err.Error())
	}
	return finish(o)
}

// runTool runs the tool call of o.Step with the iteration's files and
// records its result in o; when it fails it returns why and false. The
// changes it made to the files go into o whether it failed or not, as they
// would on a disk: a command that exits 1 may still have written.
func (it *Iterator) runTool(ctx context.Context, task domain.Task, files *domain.FileView, o *domain.Outcome) (string, bool) {
	t := task
	res, err := it.Runtime.RunAction(ctx, o.Step.Action, &plugin.Call{Task: &t, Params: o.Step.Params, Files: files})
	o.Files = files.Changes()
	o.Step.Result = res.Text
	switch {
	case err != nil:
		var ae *plugin.ActionError
		if errors.As(err, &ae) && ae.Refused {
			return ae.Err.Error(), false
		}
		return err.Error(), false
	case !res.Success:
		return firstNonEmpty(res.Error, "the tool reported a failure"), false
	}
	o.Step.Success, o.Wait, o.Notifications = true, res.Wait, res.Notifications
	// A turn may run several tools into one outcome (review's
	// decomposition): their subtasks add up.
	o.Subtasks = append(o.Subtasks, res.Subtasks...)
	return "", true
}

// approvalRequest is the 🔐 message asking the task's room to approve a
// tool call.
func approvalRequest(task domain.Task, action string, params json.RawMessage) (domain.Notification, error) {
	payload, err := json.Marshal(map[string]string{"kind": "approval", "text": action + " " + string(params), "task_name": task.Name,
		"call": domain.AskedApprovalID(task, action, params)})
	if err != nil {
		return domain.Notification{}, fmt.Errorf("approval request: %w", err)
	}
	return domain.Notification{Room: task.RoomID, TaskNumber: task.Number, Category: domain.NotifyMessage, Payload: payload,
		Asks: domain.WaitApproval}, nil
}

// load reads what a turn knows of its task's past, in reads bounded
// however old the task is (docs/PERFORMANCE.md): the latest steps the prompt
// shows, what the task's digest counts of the steps before them, the
// latest answers it was given (the events the digest points to), and
// what a retried task became.
func (it *Iterator) load(ctx context.Context, turn *Turn) error {
	st := it.Runtime.Store()
	task := turn.Task
	steps, err := st.RecentSteps(ctx, task.Number, it.History.Window())
	if err != nil {
		return fmt.Errorf("steps of task #%d: %w", task.Number, err)
	}
	digest, ok := domain.ParseDigest(task.Digest)
	if !ok {
		// A task from before digests: fold its events, as every
		// iteration of it did.
		events, err := st.TaskEvents(ctx, task.Number, 0)
		if err != nil {
			return fmt.Errorf("events of task #%d: %w", task.Number, err)
		}
		digest = domain.DigestOf(events)
	}
	shown := digest.Answers[max(0, len(digest.Answers)-it.History.withDefaults().Answers):]
	answered, err := st.EventsAt(ctx, task.Number, shown)
	if err != nil {
		return fmt.Errorf("answers of task #%d: %w", task.Number, err)
	}
	turn.Steps, turn.older, turn.Answers = steps, digest.Without(steps), answersFrom(answered)
	turn.system = it.Runtime.Character().SystemPrompt()
	turn.memory = it.recall(ctx, task, steps)
	if task.ContinuesNumber != 0 {
		created, err := st.EventsAt(ctx, task.Number, []int64{1})
		if err != nil {
			return fmt.Errorf("events of task #%d: %w", task.Number, err)
		}
		c, err := continuation(ctx, st, task.ContinuesNumber, created)
		if err != nil {
			return err
		}
		turn.system += "\n\n" + c
	}
	return nil
}

// recall is the "Relevant memory" section of task's prompt: what its room
// remembers of its goal and latest step (docs/memory.md). Memory is an aid:
// when recall fails, the iteration goes on without it, and says so in the
// log.
func (it *Iterator) recall(ctx context.Context, task domain.Task, steps []domain.Step) string {
	if it.Memory == nil {
		return ""
	}
	text := task.Goal
	if n := len(steps); n > 0 {
		s := steps[n-1]
		text += "\n" + clip(s.Thought, 300) + " " + s.Action + " " + clip(resultText(s), 500)
	}
	section, err := it.Memory.Section(ctx, plugin.MemoryAsk{Room: task.RoomID, Text: text})
	if err != nil {
		it.Runtime.Logger().Warn("the iteration goes on without recalled memory", "task", task.Number, "err", err)
		return ""
	}
	return section
}

// continuedSteps is how many of an ended task's last steps a retry's
// prompt recalls.
const continuedSteps = 10

// continuation tells a retry what became of the task it continues: its
// outcome, its last steps and what the person who retried it added (in
// created, the retry's created event). It is part of the prompt's stable
// prefix.
func continuation(ctx context.Context, st domain.Store, number int64, created []domain.TaskEvent) (string, error) {
	old, err := st.GetTask(ctx, number)
	if err != nil {
		return "", fmt.Errorf("the task #%d continues: %w", number, err)
	}
	steps, err := st.RecentSteps(ctx, number, continuedSteps)
	if err != nil {
		return "", fmt.Errorf("steps of task #%d: %w", number, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "This task continues task #%d %q, which ended %s after %d iterations at %d%%.", old.Number, old.Name, old.Status, old.Iteration, old.Progress)
	if old.Summary != "" {
		fmt.Fprintf(&b, "\nIts summary: %s", clip(old.Summary, 1000))
	}
	if old.Error != "" {
		fmt.Fprintf(&b, "\nWhy it ended: %s", clip(old.Error, 500))
	}
	if len(steps) > 0 {
		b.WriteString("\nIts last steps (its files were copied into this task's workspace):")
		for _, s := range steps {
			mark := "✓"
			if !s.Success {
				mark = "✗ " + clip(s.Error, 140)
			}
			fmt.Fprintf(&b, "\n- step %d: %s %s %s", s.Iteration, firstNonEmpty(s.Action, "(no action)"), clip(string(s.Params), 140), mark)
		}
	}
	if len(created) > 0 && created[0].Type == domain.EventCreated {
		var p domain.EventPayload
		if json.Unmarshal(created[0].Payload, &p) == nil {
			if c, _ := p.Detail["context"].(string); c != "" {
				fmt.Fprintf(&b, "\nThe person who asked to continue it adds: %s", clip(c, 2000))
			}
		}
	}
	return b.String(), nil
}

// StressTemperature is base plus StressStep for every failed step at the
// end of steps, at most 1: a model that keeps failing is nudged off its
// rut, and back to base after a success.
func StressTemperature(base float64, steps []domain.Step) float64 {
	t := base
	for i := len(steps) - 1; i >= 0 && !steps[i].Success; i-- {
		t += StressStep
	}
	return math.Round(min(t, 1)*100) / 100
}

// sameStep reports whether a decision repeats step: the same action with
// the same params, as JSON values.
func sameStep(step domain.Step, action string, params json.RawMessage) bool {
	if step.Action != action {
		return false
	}
	var a, b any
	if json.Unmarshal(step.Params, &a) != nil || json.Unmarshal(params, &b) != nil {
		return bytes.Equal(step.Params, params)
	}
	return reflect.DeepEqual(a, b)
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// clipBytes cuts s to at most n bytes without splitting a UTF-8 sequence.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
