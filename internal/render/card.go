package render

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/taskloom/taskloom/domain"
)

// cardErrors is how many of a card's pending errors it shows, the latest;
// a line says how many earlier ones are left out, so a card stays one
// message.
const cardErrors = 3

// Card renders a task's card (TASKLOOM_NOTIFY_STYLE=card, docs/discord.md, docs/slack.md):
// one message per task and room, edited in place at every flush, that
// shows where the task is now rather than what changed:
//
//	📋 Task #1 "Build auth feature"
//	   [████░░░░░░] 40%  Running
//	   Iteration: 4
//	   Last action: `write_file src/auth/login.ts` ✓
//	   ⚠️ Error: …
//
// u.From is not used. u.Errors are the errors since the card was last
// edited, the latest cardErrors of them shown; lines with nothing to say
// are left out. An ended task's card shows its final progress and status.
func Card(f Flavor, u Update) string {
	t := u.Task
	lines := []string{
		"📋 " + title(f, t),
		fmt.Sprintf("%s%s %d%%  %s", indent, Bar(t.Progress), clampPercent(t.Progress), cardStatusWord(t)),
	}
	if t.Iteration > 0 {
		lines = append(lines, indent+"Iteration: "+itoa(t.Iteration))
	}
	if u.LastAction != nil {
		lines = append(lines, indent+"Last action: "+action(f, *u.LastAction))
	}
	var errs []string
	for _, e := range u.Errors {
		if e = oneLine(e); e != "" {
			errs = append(errs, e)
		}
	}
	if left := len(errs) - cardErrors; left > 0 {
		noun := "errors"
		if left == 1 {
			noun = "error"
		}
		lines = append(lines, indent+"⚠️ "+strconv.Itoa(left)+" earlier "+noun+" not shown")
		errs = errs[left:]
	}
	for _, e := range errs {
		lines = append(lines, indent+"⚠️ Error: "+Escape(f, clip(e, lineErrorRune)))
	}
	return strings.Join(lines, "\n")
}

// cardStatusWord is TaskStatusWord but for a started task, which a card
// shows as Running: a card is edited after an iteration, when its worker
// has just let the task go, so the lease says nothing about whether the
// task is being worked (the queue and status views tell the rotation).
func cardStatusWord(t domain.Task) string {
	if t.Status == domain.StatusRunning {
		return StatusWord(t.Status)
	}
	return TaskStatusWord(t)
}
