package actions

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/tasks"
)

// ReadResult pages through the whole result of one of the calling task's
// steps. A step keeps its tool result up to domain.MaxResultBytes; the
// prompt shows only its beginning and ends it with a note naming this tool
// and the offset to read on from.
//
// Offsets and lengths count characters (runes), as the prompt does, so a
// page never splits a character and the note's offset can be copied as is.
type ReadResult struct{}

var _ plugin.Action = ReadResult{}

func (ReadResult) Info() plugin.ActionInfo {
	return plugin.ActionInfo{
		Name: "read_result",
		Description: fmt.Sprintf("Read the whole result of one of this task's earlier steps, %d characters at a time from offset (in characters, not bytes; default 0). "+
			"Use it when a result in the prompt ends with a note saying how many characters are left; the answer ends with the same kind of note until the result's end.", tasks.ResultPage),
		Examples:   []string{`{"step":7}`, `{"step":7,"offset":8000}`, `{"step":7,"call":2}`},
		Parameters: schema(`{"type":"object","additionalProperties":false,"required":["step"],"properties":{"step":{"type":"integer","minimum":1,"description":"the step's number, as in \"Step 7\""},"call":{"type":"integer","minimum":1,"description":"which call of the step, as the 2 in \"Step 7.2\"; 1 (the default) is its first"},"offset":{"type":"integer","minimum":0,"description":"characters to skip from the start of the result"}}}`),
		Tool:       true,
		TaskOnly:   true,
	}
}

func (ReadResult) Handle(ctx context.Context, call *plugin.Call) (plugin.Result, error) {
	task, refused := taskOf(call)
	if refused != nil {
		return *refused, nil
	}
	var p struct {
		Step   *int `json:"step"`
		Call   *int `json:"call"`
		Offset *int `json:"offset"`
	}
	if r := decode(call.Params, &p); r != nil {
		return *r, nil
	}
	switch {
	case p.Step == nil:
		return fail("read_result needs a step: the number of one of this task's earlier steps.")
	case *p.Step < 1:
		return fail("There is no step %d: steps are numbered from 1.", *p.Step)
	case p.Call != nil && *p.Call < 1:
		return fail("There is no call %d: a step's calls are numbered from 1, as in \"Step 7.2\".", *p.Call)
	case p.Offset != nil && *p.Offset < 0:
		return fail("The offset is %d; it counts characters from the start of the result, from 0.", *p.Offset)
	}
	offset := 0
	if p.Offset != nil {
		offset = *p.Offset
	}
	callIndex := 0 // domain.Step.Call counts from 0, the tool's call from 1
	if p.Call != nil {
		callIndex = *p.Call - 1
	}
	step, err := stepOf(ctx, call.Runtime, task.Number, *p.Step, callIndex)
	if errors.Is(err, errNoStep) {
		return fail("Task #%d has no step %s.", task.Number, tasks.StepLabel(domain.Step{Iteration: *p.Step, Call: callIndex}))
	}
	if err != nil {
		return plugin.Result{}, err
	}
	result := step.Result
	total := utf8.RuneCountInString(result)
	switch {
	case total == 0:
		return fail("Step %s has no result to read.", tasks.StepLabel(step))
	case offset >= total:
		return fail("Step %s's result has %d characters; there is nothing to read at offset %d.", tasks.StepLabel(step), total, offset)
	}
	start, end, i := len(result), len(result), 0
	for pos := range result {
		if i == offset {
			start = pos
		}
		if i == offset+tasks.ResultPage {
			end = pos
			break
		}
		i++
	}
	text := result[start:end]
	if left := total - offset - utf8.RuneCountInString(text); left > 0 {
		return plugin.Result{Success: true, Text: text + "\n" + tasks.ReadResultCallNote(step.Iteration, step.Call, offset+tasks.ResultPage, left)}, nil
	}
	return plugin.Result{Success: true, Text: text + fmt.Sprintf("\n[end of step %s's result]", tasks.StepLabel(step))}, nil
}

var errNoStep = errors.New("no such step")

// stepOf reads the step of task's iteration whose Call is callIndex: one
// row, however many steps the task has (docs/PERFORMANCE.md).
func stepOf(ctx context.Context, rt *plugin.Runtime, task int64, iteration, callIndex int) (domain.Step, error) {
	if rt == nil || rt.Store() == nil {
		return domain.Step{}, fmt.Errorf("read step %d of task #%d: no store", iteration, task)
	}
	s, err := rt.Store().StepCall(ctx, task, iteration, callIndex)
	if errors.Is(err, domain.ErrNotFound) {
		return domain.Step{}, errNoStep
	}
	if err != nil {
		return domain.Step{}, fmt.Errorf("read step %d of task #%d: %w", iteration, task, err)
	}
	return s, nil
}
