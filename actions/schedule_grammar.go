package actions

import (
	"regexp"
	"strings"
)

// The schedule commands of docs/schedules.md, as entries of the table of
// chat commands (commandtable.go) read them.
var (
	// "every `0 9 * * 1-5` task summarise the alerts", "every @daily task x",
	// "every @every 2h task x"; "schedule …" is the slash command's form.
	reEvery       = regexp.MustCompile("(?is)^(?:schedule\\s+)?every\\b\\s*(?:`([^`\\n]*)`|(@every\\s+\\S+|@\\S+))?\\s*(?:(?:task|job)\\b\\s*:?(?:\\s*goal\\s*:)?\\s*(.*))?$")
	reScheduleAdd = regexp.MustCompile("(?is)^schedule\\s+(?:`([^`\\n]*)`|(@every\\s+\\S+|@\\S+))\\s*(?:(?:task|job)\\b\\s*:?(?:\\s*goal\\s*:)?\\s*(.*))?$")
	reSchedules   = regexp.MustCompile(`(?i)^(?:(?:list|show)\s+(?:all\s+)?schedules|schedules|schedule(?:\s+list)?)$`)
	reScheduleOp  = regexp.MustCompile(`(?is)^(unschedule|(?:pause|resume|delete|remove|cancel)\s+schedule|schedule\s+(?:pause|resume|delete|remove|rm))\b(?:\s+(#?\S+))?\s*$`)
	// reScheduleLike is recognisably a schedule whose times do not read.
	reScheduleLike = regexp.MustCompile("(?is)^(?:schedule|every)\\s+.*(?:`|@|\\b(?:task|job)\\b)")
)

// scheduleOp parses the command on one schedule whose kind is kind:
// `pause schedule #2`, `resume schedule #2`, `unschedule #2` (also
// `delete schedule #2`, and the slash form `schedule pause 2`).
func scheduleOp(kind string) func(string) (Command, bool) {
	return func(s string) (Command, bool) {
		m := reScheduleOp.FindStringSubmatch(s)
		if m == nil {
			return Command{}, false
		}
		op, got := strings.ToLower(m[1]), CmdUnschedule
		switch {
		case strings.Contains(op, "pause"):
			got = CmdPauseSchedule
		case strings.Contains(op, "resume"):
			got = CmdResumeSchedule
		}
		if got != kind {
			return Command{}, false
		}
		n, beyond := taskNumber(m[2])
		return Command{Kind: kind, Number: n, Beyond: beyond}, true
	}
}

// parseEvery parses a new schedule: `every <spec> task <goal>`, or
// recognisably one whose times do not read, which its action then
// explains. ("every time I ask…" is chat, not a command.)
func parseEvery(s string) (Command, bool) {
	m := reEvery.FindStringSubmatch(s)
	if m == nil {
		m = reScheduleAdd.FindStringSubmatch(s)
	}
	if m != nil {
		return Command{Kind: CmdSchedule, Spec: strings.TrimSpace(m[1] + m[2]), Text: strings.TrimSpace(m[3])}, true
	}
	if reScheduleLike.MatchString(s) {
		return Command{Kind: CmdSchedule}, true
	}
	return Command{}, false
}

// scheduleSlashText is the chat text of Discord's /task schedule, from
// its action and the options that action takes.
func scheduleSlashText(values map[string]string) string {
	id := ""
	if v := strings.TrimSpace(values["id"]); v != "" {
		id = " #" + v
	}
	switch strings.TrimSpace(values["action"]) {
	case "add":
		spec := strings.TrimSpace(values["cron"])
		if !strings.HasPrefix(spec, "@") {
			spec = "`" + spec + "`"
		}
		return "every " + spec + " task goal: " + strings.TrimSpace(values["goal"])
	case "pause", "resume":
		return values["action"] + " schedule" + id
	case "delete":
		return "unschedule" + id
	}
	return "schedules"
}
