package actions

import (
	"errors"
	"regexp"
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
	// CmdForget is `forget me`: delete what the author said and the
	// facts about them, everywhere (docs/memory.md).
	CmdForget = "forget"
)

var (
	// "create task Build auth", "new task: x", "work on building auth", "/task create x", "create goal: x".
	reCreate = regexp.MustCompile(`(?is)^(?:(?:create|new|start|add)(?:\s+a)?(?:\s+(?:task|job))?\s*(?:goal)?\s*:?|work\s+on|please\s+work\s+on)(?:\s+(.*))?$`)
	// "create review task Build auth", "new react task: x" (docs/strategies.md).
	reCreateStrategy = regexp.MustCompile(`(?is)^(?:create|new|start|add)(?:\s+an?)?\s+([\p{L}\p{N}_-]+)\s+(?:task|job)\b\s*:?(?:\s+(.*))?$`)
	reList           = regexp.MustCompile(`(?i)^(?:list|show|ls)?\s*(?:all\s+)?(?:tasks|queue|task\s+list|task\s+queue|list)$|^(?:list|show\s+queue|queue)$`)
	reNumbered       = regexp.MustCompile(`(?is)^(status|pause|resume|cancel|abort|stop|unpause|continue)\b(?:\s+(?:of\s+)?(?:task\s*)?(?:number\s*:?\s*)?(\S+))?\s*$`)
	reSearch         = regexp.MustCompile(`(?is)^(?:search|find)(?:\s+(?:tasks?|for))?(?:\s+query\s*:)?(?:\s+(.*))?$`)
	reAnswer         = regexp.MustCompile(`(?is)^answer(?:\s+(?:task\s*)?(?:number\s*:?\s*)?(#?\S+))?(?:\s+(?:text\s*:\s*)?(.*))?$`)
	reApprove        = regexp.MustCompile(`(?is)^(approve|allow|deny|reject)\b(?:\s+(?:task\s*)?(?:number\s*:?\s*)?(#?\S+))?(?:\s+(?:reason\s*:\s*)?(.*))?$`)
	reCall           = regexp.MustCompile(`(?is)^call(?:\s*[:=]\s*([^\s:=]+)|\s+([0-9a-f]{8,64}))(?:\s+(.*))?$`)
	reRetry          = regexp.MustCompile(`(?is)^(?:retry|rerun|redo)(?:\s+(?:task\s*)?(?:number\s*:?\s*)?(#?\S+))?(?:\s+(?:context\s*:\s*)?(.*))?$`)
	reForget         = regexp.MustCompile(`(?i)^forget\s+(?:me|about\s+me|everything\s+about\s+me|what\s+i\s+(?:said|wrote))\s*[.!]?$`)
	reHelp           = regexp.MustCompile(`(?i)^(?:help|commands|\?|what can you do\??|how do i use (?:you|this)\??)$`)
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
	switch {
	case reHelp.MatchString(s):
		return Command{Kind: CmdHelp}, true
	case reList.MatchString(s):
		return Command{Kind: CmdList}, true
	case reForget.MatchString(s):
		return Command{Kind: CmdForget}, true
	}
	if m := reNumbered.FindStringSubmatch(s); m != nil {
		kind := strings.ToLower(m[1])
		switch kind {
		case "abort", "stop":
			kind = CmdCancel
		case "unpause", "continue":
			kind = CmdResume
		}
		n, beyond := taskNumber(m[2])
		return Command{Kind: kind, Number: n, Beyond: beyond}, true
	}
	if m := reAnswer.FindStringSubmatch(s); m != nil {
		n, beyond := taskNumber(m[1])
		return Command{Kind: CmdAnswer, Number: n, Beyond: beyond, Text: strings.TrimSpace(m[2])}, true
	}
	if m := reApprove.FindStringSubmatch(s); m != nil {
		kind := CmdApprove
		if k := strings.ToLower(m[1]); k == "deny" || k == "reject" {
			kind = CmdDeny
		}
		n, beyond := taskNumber(m[2])
		c := Command{Kind: kind, Number: n, Beyond: beyond, Text: strings.TrimSpace(m[3])}
		if id := reCall.FindStringSubmatch(c.Text); id != nil {
			c.Call, c.Text = id[1]+id[2], strings.TrimSpace(id[3])
		}
		return c, true
	}
	if m := reRetry.FindStringSubmatch(s); m != nil {
		n, beyond := taskNumber(m[1])
		return Command{Kind: CmdRetry, Number: n, Beyond: beyond, Text: strings.TrimSpace(m[2])}, true
	}
	if m := reSearch.FindStringSubmatch(s); m != nil {
		return Command{Kind: CmdSearch, Text: strings.TrimSpace(m[1])}, true
	}
	if m := reCreateStrategy.FindStringSubmatch(s); m != nil && !notStrategy[strings.ToLower(m[1])] {
		return Command{Kind: CmdCreate, Strategy: strings.ToLower(m[1]), Text: strings.TrimSpace(m[2])}, true
	}
	if m := reCreate.FindStringSubmatch(s); m != nil {
		return Command{Kind: CmdCreate, Text: strings.TrimSpace(m[1])}, true
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
