package tasks

import (
	"fmt"
	"strconv"

	"github.com/taskloom/taskloom/domain"
)

// StepLabel is how prompts, chat and the CLI name a step: its iteration,
// "7", and for the further calls of a tools reply of several, which are
// steps of the same iteration (domain.Step.Call), the call's number from
// 1 after a dot: "7.2" is the second call of iteration 7, whose first is
// "7".
func StepLabel(s domain.Step) string {
	if s.Call <= 0 {
		return strconv.Itoa(s.Iteration)
	}
	return fmt.Sprintf("%d.%d", s.Iteration, s.Call+1)
}

// ReadResultCallNote is ReadResultNote for the step of iteration step
// whose Call is call: read_result's call parameter counts from 1, as
// StepLabel does, and is left out for an iteration's first step.
func ReadResultCallNote(step, call, offset, left int) string {
	if call <= 0 {
		return ReadResultNote(step, offset, left)
	}
	return fmt.Sprintf(`[… %s more characters: %s {"step": %d, "call": %d, "offset": %d}]`, thousands(left), readResultTool, step, call+1, offset)
}
