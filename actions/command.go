package actions

import (
	"errors"
	"strconv"
	"strings"
)

// Command is one chat command recognised by the deterministic grammar of
// docs/chat.md, before any model is asked.
type Command struct {
	Kind   string // create, list, status, pause, resume, cancel, search, answer, retry, approve, deny, forget, help
	Number int64  // the task number, when the command names one (0 when missing or malformed)
	// Beyond is a task number as typed that no task can have, being more
	// than an int64 holds ("cancel #99999999999999999999"); Number is
	// then 0. It lets the answer name the task asked for.
	Beyond string
	Text   string // the goal, search query, answer, a retry's context or a denial's reason
	// Call is the approval request an approve or deny names
	// (`approve #3 call:5f0c…`, as the buttons send it): the decision is
	// for that call only. Empty: the call pending now.
	Call string
	// Strategy is the word before "task" in `create review task …`
	// (docs/strategies.md), lower-cased; empty when the command names none.
	Strategy string
	// Spec is the times of `every <spec> task <goal>` (docs/schedules.md):
	// a cron expression without its backticks, or a descriptor such as
	// @daily or @every 2h; empty when the command gave none that reads.
	Spec string
}

// Command kinds.
const (
	CmdCreate  = "create"
	CmdList    = "list"
	CmdStatus  = "status"
	CmdPause   = "pause"
	CmdResume  = "resume"
	CmdCancel  = "cancel"
	CmdSearch  = "search"
	CmdAnswer  = "answer"
	CmdRetry   = "retry"
	CmdApprove = "approve"
	CmdDeny    = "deny"
	CmdHelp    = "help"
	// The schedule commands of docs/schedules.md.
	CmdSchedule       = "schedule"
	CmdSchedules      = "schedules"
	CmdUnschedule     = "unschedule"
	CmdPauseSchedule  = "pause_schedule"
	CmdResumeSchedule = "resume_schedule"
	// CmdForget is `forget me`: delete what the author said and the
	// facts about them, everywhere (docs/memory.md).
	CmdForget = "forget"
)

// ParseCommand recognises a chat command. It reports ok for anything that
// is recognisably a command, even a malformed one ("status" with no
// number): the command's action then answers with the one sentence that
// says what is missing. Free text is not a command.
func ParseCommand(text string) (Command, bool) {
	s := strings.TrimSpace(text)
	s = strings.TrimSpace(strings.TrimPrefix(s, "/task"))
	if len(s) > 0 && s[0] == '!' {
		s = s[1:]
	}
	s = strings.TrimSpace(s)
	if s == "" {
		if strings.HasPrefix(strings.TrimSpace(text), "/task") {
			return Command{Kind: CmdHelp}, true
		}
		return Command{}, false
	}
	// The table's commands in its order (commandtable.go).
	for _, c := range chatCommands {
		if cmd, ok := c.Parse(s); ok {
			return cmd, true
		}
	}
	return Command{}, false
}

// notStrategy are words that may stand before "task" in a create
// command without naming a strategy ("create a new task", "create task
// task list").
var notStrategy = map[string]bool{"a": true, "an": true, "task": true, "job": true, "new": true, "the": true, "one": true, "another": true, "background": true}

// DecisionText is the chat command a button of an approval request
// stands for: op (approve or deny) of task number's call, named by its
// id, as ParseCommand reads it back.
func DecisionText(op string, number int64, call string) string {
	s := op + " #" + strconv.FormatInt(number, 10)
	if call != "" {
		s += " call:" + call
	}
	return s
}

// PressText is the chat command a press of a task button stands for:
// verb (pause, resume, cancel, retry, approve, deny) of the task ref
// names, "N", or for approve and deny "N:<request id>" (DecisionText's
// call). A decision must name its call: a button of an older message
// that does not would land on whatever the task asks now, so it is
// refused (false), as anything malformed is.
func PressText(verb, ref string) (string, int64, bool) {
	num, call, bound := strings.Cut(ref, ":")
	n, err := strconv.ParseInt(num, 10, 64)
	decision := verb == CmdApprove || verb == CmdDeny
	if err != nil || n <= 0 || decision != bound || (bound && (call == "" || strings.ContainsAny(call, " \t\n:"))) {
		return "", 0, false
	}
	if bound {
		return DecisionText(verb, n, call), n, true
	}
	return verb + " #" + strconv.FormatInt(n, 10), n, true
}

// taskNumber reads "#12" or "12"; 0 when it is not a positive number,
// and then beyond is the digits when they are one too large for any task.
func taskNumber(s string) (n int64, beyond string) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "#")
	n, err := strconv.ParseInt(s, 10, 64)
	if errors.Is(err, strconv.ErrRange) && s[0] != '-' && s[0] != '+' {
		return 0, s
	}
	if err != nil || n <= 0 {
		return 0, ""
	}
	return n, ""
}
