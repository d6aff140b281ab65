package actions

import (
	"regexp"
	"strings"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/render"
)

// The chat commands of docs/chat.md, one entry each: the grammar
// (ParseCommand), the help, Discord's /task subcommands and their
// autocomplete, and the usage hint of Slack's /task all read this table,
// so a command is added in one place.
//
// To add one: a Cmd* kind in command.go, an entry below (its Parse, Usage,
// Help and, when it is a /task subcommand, its Slash), and the action that
// answers it in Commands (chat.go), matching its kind with match.

// ChatCommand is one chat command.
type ChatCommand struct {
	// Kind is the Command.Kind it parses to (Cmd*).
	Kind string
	// Usage are examples of it as typed, the first its usual form: the
	// help shows them.
	Usage []string
	// Help is its line in `help`; every typed command has one, or shares
	// another's: HelpWith names the kind whose line it shares instead.
	Help, HelpWith string
	// Parse reads it from text (trimmed, without "/task" or "!"); false
	// when the text is not this command. A malformed one (no number) is
	// still it: its action says what is missing.
	Parse func(s string) (Command, bool)
	// Slash is its /task subcommand; nil when it has none.
	Slash *Slash
	// SlackHint, when set, is its part of Slack's usage hint when it has
	// no subcommand, instead of its first usage.
	SlackHint string
	// DiscordHelp and SlackHelp, when set, are its /task forms in the
	// help instead of its subcommand's name and its options' examples.
	DiscordHelp, SlackHelp string
}

// Slash is a command's /task subcommand (docs/discord.md, docs/slack.md).
type Slash struct {
	// Name and Description are the subcommand's.
	Name, Description string
	// Text is the chat text the subcommand stands for, before its options
	// (Text): "create task", "status".
	Text string
	// Options are its options, in order.
	Options []SlashOption
	// Offers says which tasks the autocomplete of its number option
	// offers; nil for a subcommand without one.
	Offers func(domain.Task) bool
	// Build, when set, makes the chat text from the options' values
	// instead of SlashText's rule: a subcommand whose first option picks
	// what it does (/task schedule action:pause id:2).
	Build func(values map[string]string) string
	// SlackHint, when set, is its part of Slack's usage hint instead of
	// its name and its options' hints (Slack's /task text goes through
	// the grammar).
	SlackHint string
}

// OptionKind is what a subcommand's option holds.
type OptionKind int

// Option kinds: a task number (autocompleted), text, a strategy (the
// task service's, as choices), one of the option's Choices, a whole
// number that is not a task's (a schedule's).
const (
	OptNumber OptionKind = iota
	OptText
	OptStrategy
	OptChoice
	OptInteger
)

// SlashOption is one option of a subcommand.
type SlashOption struct {
	Name, Description string
	Kind              OptionKind
	Optional          bool
	// MaxLength bounds a text option, in characters.
	MaxLength int
	// Example is its value in the help's example of the subcommand (""
	// leaves it out); Hint its name in Slack's usage hint.
	Example, Hint string
	// Choices are the values an OptChoice option takes.
	Choices []string
}

// ChatCommands lists the chat commands, in the order the grammar tries
// them, Discord lists the subcommands and the help lists them.
func ChatCommands() []ChatCommand { return chatCommands }

// SlashCommand finds the command whose /task subcommand is name.
func SlashCommand(name string) (ChatCommand, bool) {
	for _, c := range chatCommands {
		if c.Slash != nil && c.Slash.Name == name {
			return c, true
		}
	}
	return ChatCommand{}, false
}

// number is the task number option of a subcommand that acts on a task.
func number(what string) SlashOption {
	return SlashOption{Name: "number", Description: "The task's number, as in #3, of the task to " + what, Kind: OptNumber, Hint: "n"}
}

var chatCommands = []ChatCommand{
	{
		Kind: CmdCreate, Usage: []string{"create task Build auth", "work on building auth"},
		Help: "creates a task and replies with its number", Parse: parseCreate,
		Slash: &Slash{Name: "create", Description: "Create a task; progress is posted in this channel", Text: "create task",
			Options: []SlashOption{
				{Name: "goal", Description: "What the task should do", Kind: OptText, MaxLength: domain.MaxGoalLength, Example: "Build auth", Hint: "goal"},
				{Name: "strategy", Description: "How the task is worked; loop when not given", Kind: OptStrategy, Optional: true},
			}},
	},
	{
		Kind: CmdList, Usage: []string{"list tasks", "show queue"}, Help: "shows the queue",
		Parse: matching(regexp.MustCompile(`(?i)^(?:list|show|ls)?\s*(?:all\s+)?(?:tasks|queue|task\s+list|task\s+queue|list)$|^(?:list|show\s+queue|queue)$`), CmdList),
		Slash: &Slash{Name: "list", Description: "The task queue, in the order tasks are served", Text: "list tasks"},
	},
	{
		Kind: CmdStatus, Usage: []string{"status #1"}, Help: "shows one task in detail: progress, steps, summary",
		Parse: numbered(CmdStatus, "status"),
		Slash: &Slash{Name: "status", Description: "One task in detail", Text: "status",
			Options: []SlashOption{withExample(number("show"), "1")}, Offers: func(domain.Task) bool { return true }},
	},
	{
		Kind: CmdPause, Usage: []string{"pause #1"}, Help: "pauses, resumes (a paused task only) or cancels a task you created",
		Parse: numbered(CmdPause, "pause"),
		Slash: &Slash{Name: "pause", Description: "Pause a task (its creator or a server manager)", Text: "pause",
			Options: []SlashOption{withExample(number("pause"), "1")}, Offers: func(t domain.Task) bool {
				return t.Status == domain.StatusQueued || t.Status == domain.StatusRunning || t.Status == domain.StatusWaiting
			}},
	},
	{
		Kind: CmdResume, Usage: []string{"resume #1"}, HelpWith: CmdPause,
		Parse: numbered(CmdResume, "resume", "unpause", "continue"),
		Slash: &Slash{Name: "resume", Description: "Resume a paused task (its creator or a server manager)", Text: "resume",
			Options: []SlashOption{number("resume")}, Offers: func(t domain.Task) bool { return t.Status == domain.StatusPaused }},
	},
	{
		Kind: CmdCancel, Usage: []string{"cancel #1"}, HelpWith: CmdPause,
		Parse: numbered(CmdCancel, "cancel", "abort", "stop"),
		Slash: &Slash{Name: "cancel", Description: "Cancel a task for good (its creator or a server manager)", Text: "cancel",
			Options: []SlashOption{number("cancel")}, Offers: func(t domain.Task) bool { return !t.Status.Terminal() }},
	},
	{
		Kind: CmdSearch, Usage: []string{"search tasks auth"}, Help: "finds tasks whose name or goal matches",
		Parse: withText(regexp.MustCompile(`(?is)^(?:search|find)(?:\s+(?:tasks?|for))?(?:\s+query\s*:)?(?:\s+(.*))?$`), CmdSearch),
		Slash: &Slash{Name: "search", Description: "Tasks whose name or goal matches", Text: "search tasks",
			Options: []SlashOption{{Name: "query", Description: "Words to look for", Kind: OptText, MaxLength: 200, Example: "auth", Hint: "words"}}},
	},
	{
		Kind: CmdAnswer, Usage: []string{"answer #3 use JWT"}, Help: "answers the question task #3 asked; replying to the question works too",
		Parse: numberAndText(CmdAnswer, "answer", "text"),
		Slash: &Slash{Name: "answer", Description: "Answer the question a waiting task asked", Text: "answer",
			Options: []SlashOption{withExample(number("answer"), "3"),
				{Name: "text", Description: "Your answer", Kind: OptText, MaxLength: 4000, Example: "use JWT", Hint: "text"}},
			Offers: func(t domain.Task) bool { return t.Status == domain.StatusWaiting && t.WaitingOn == domain.WaitAnswer }},
	},
	{
		Kind: CmdRetry, Usage: []string{"retry #3 use JWT this time"}, Help: "continues an ended task as a new one, with its files and what you add",
		Parse: numberAndText(CmdRetry, "retry|rerun|redo", "context"),
		Slash: &Slash{Name: "retry", Description: "Continue an ended task as a new one, with its files", Text: "retry",
			Options: []SlashOption{withExample(number("retry"), "3"),
				{Name: "context", Description: "More context for the new run", Kind: OptText, MaxLength: 4000, Optional: true, Example: "use JWT this time", Hint: "context"}},
			Offers: func(t domain.Task) bool { return t.Status.Terminal() }},
	},
	// The schedule commands (docs/schedules.md). The grammars of the task
	// commands above cannot read them ("pause schedule #2" is not a
	// task's pause: pause takes one word after it).
	{
		Kind: CmdSchedule, Usage: []string{"every `0 9 * * 1-5` task summarise the alerts", "every @daily task …"},
		Help: "creates a task at each time of a cron expression (in backticks) or descriptor", Parse: parseEvery,
		DiscordHelp: "/task schedule action:add cron:0 9 * * 1-5 goal:…", SlackHelp: "/task schedule @daily task …",
		Slash: &Slash{Name: "schedule", Description: "Run a task at the times of a cron expression, or list, pause, resume or delete schedules",
			Text: "schedules", Build: scheduleSlashText,
			SlackHint: "schedule <when> task <goal>",
			Options: []SlashOption{
				{Name: "action", Description: "What to do", Kind: OptChoice, Choices: []string{"add", "list", "pause", "resume", "delete"}, Example: "add"},
				{Name: "cron", Description: "Five fields such as 0 9 * * 1-5, or @daily, @every 2h (for add)", Kind: OptText, MaxLength: 200, Optional: true, Example: "0 9 * * 1-5"},
				{Name: "goal", Description: "What each run should do (for add)", Kind: OptText, MaxLength: domain.MaxGoalLength, Optional: true, Example: "summarise the alerts"},
				{Name: "id", Description: "The schedule's number, as in #2 (for pause, resume, delete)", Kind: OptInteger, Optional: true},
			}},
	},
	{
		Kind: CmdSchedules, Usage: []string{"schedules"}, Help: "lists schedules; pauses, resumes or deletes one you created",
		DiscordHelp: "/task schedule action:list", SlackHelp: "/task schedule list",
		Parse: matching(reSchedules, CmdSchedules),
	},
	{Kind: CmdPauseSchedule, Usage: []string{"pause schedule #2"}, HelpWith: CmdSchedules, Parse: scheduleOp(CmdPauseSchedule)},
	{Kind: CmdResumeSchedule, Usage: []string{"resume schedule #2"}, HelpWith: CmdSchedules, Parse: scheduleOp(CmdResumeSchedule)},
	{Kind: CmdUnschedule, Usage: []string{"unschedule #2"}, HelpWith: CmdSchedules, Parse: scheduleOp(CmdUnschedule)},
	{
		Kind: CmdApprove, Usage: []string{"approve #3"}, Help: "approves or denies (with a reason) the tool call task #3 asked to make; the buttons of its 🔐 message do the same",
		SlackHint: "approve <n> | deny <n> [reason]",
		Parse:     decision(CmdApprove, "approve", "allow"),
	},
	{Kind: CmdDeny, Usage: []string{"deny #3 not that file"}, HelpWith: CmdApprove, Parse: decision(CmdDeny, "deny", "reject")},
	{
		Kind: CmdForget, Usage: []string{"forget me"}, Help: "deletes every message you wrote and every fact about you, in every room",
		Parse: matching(regexp.MustCompile(`(?i)^forget\s+(?:me|about\s+me|everything\s+about\s+me|what\s+i\s+(?:said|wrote))\s*[.!]?$`), CmdForget),
	},
	{
		Kind: CmdHelp, Usage: []string{"help"}, Help: "shows this list",
		Parse: matching(regexp.MustCompile(`(?i)^(?:help|commands|\?|what can you do\??|how do i use (?:you|this)\??)$`), CmdHelp),
	},
}

func withExample(o SlashOption, example string) SlashOption {
	o.Example = example
	return o
}

// matching parses a command that takes nothing: text that re matches.
func matching(re *regexp.Regexp, kind string) func(string) (Command, bool) {
	return func(s string) (Command, bool) {
		if !re.MatchString(s) {
			return Command{}, false
		}
		return Command{Kind: kind}, true
	}
}

// withText parses a command whose text is re's first group.
func withText(re *regexp.Regexp, kind string) func(string) (Command, bool) {
	return func(s string) (Command, bool) {
		m := re.FindStringSubmatch(s)
		if m == nil {
			return Command{}, false
		}
		return Command{Kind: kind, Text: strings.TrimSpace(m[1])}, true
	}
}

// numbered parses a command naming a task, one of words and its number:
// `pause #3`, `status of task 3`. `pause schedule` is not about a task:
// the schedule commands below read it.
func numbered(kind string, words ...string) func(string) (Command, bool) {
	re := regexp.MustCompile(`(?is)^(?:` + strings.Join(words, "|") + `)\b(?:\s+(?:of\s+)?(?:task\s*)?(?:number\s*:?\s*)?(\S+))?\s*$`)
	return func(s string) (Command, bool) {
		m := re.FindStringSubmatch(s)
		if m == nil || strings.EqualFold(m[1], "schedule") {
			return Command{}, false
		}
		n, beyond := taskNumber(m[1])
		return Command{Kind: kind, Number: n, Beyond: beyond}, true
	}
}

// numberAndText parses a command naming a task with text after it,
// which may start with "keyword:" (as the slash form writes it): one of
// words (a regexp alternation), `answer #3 use JWT`.
func numberAndText(kind, words, keyword string) func(string) (Command, bool) {
	re := regexp.MustCompile(`(?is)^(?:` + words + `)(?:\s+(?:task\s*)?(?:number\s*:?\s*)?(#?\S+))?(?:\s+(?:` + keyword + `\s*:\s*)?(.*))?$`)
	return func(s string) (Command, bool) {
		m := re.FindStringSubmatch(s)
		if m == nil {
			return Command{}, false
		}
		n, beyond := taskNumber(m[1])
		return Command{Kind: kind, Number: n, Beyond: beyond, Text: strings.TrimSpace(m[2])}, true
	}
}

// reCall reads the call a decision names: `call:5f0c…`.
var reCall = regexp.MustCompile(`(?is)^call(?:\s*[:=]\s*([^\s:=]+)|\s+([0-9a-f]{8,64}))(?:\s+(.*))?$`)

// decision parses an approve or a deny: one of words, the task, maybe
// the call it decides on, and a reason.
func decision(kind string, words ...string) func(string) (Command, bool) {
	re := regexp.MustCompile(`(?is)^(?:` + strings.Join(words, "|") + `)\b(?:\s+(?:task\s*)?(?:number\s*:?\s*)?(#?\S+))?(?:\s+(?:reason\s*:\s*)?(.*))?$`)
	return func(s string) (Command, bool) {
		m := re.FindStringSubmatch(s)
		if m == nil {
			return Command{}, false
		}
		n, beyond := taskNumber(m[1])
		c := Command{Kind: kind, Number: n, Beyond: beyond, Text: strings.TrimSpace(m[2])}
		if id := reCall.FindStringSubmatch(c.Text); id != nil {
			c.Call, c.Text = id[1]+id[2], strings.TrimSpace(id[3])
		}
		return c, true
	}
}

var (
	// "create task Build auth", "new task: x", "work on building auth", "/task create x", "create goal: x".
	reCreate = regexp.MustCompile(`(?is)^(?:(?:create|new|start|add)(?:\s+a)?(?:\s+(?:task|job))?\s*(?:goal)?\s*:?|work\s+on|please\s+work\s+on)(?:\s+(.*))?$`)
	// "create review task Build auth", "new react task: x" (docs/strategies.md).
	reCreateStrategy = regexp.MustCompile(`(?is)^(?:create|new|start|add)(?:\s+an?)?\s+([\p{L}\p{N}_-]+)\s+(?:task|job)\b\s*:?(?:\s+(.*))?$`)
)

func parseCreate(s string) (Command, bool) {
	if m := reCreateStrategy.FindStringSubmatch(s); m != nil && !notStrategy[strings.ToLower(m[1])] {
		return Command{Kind: CmdCreate, Strategy: strings.ToLower(m[1]), Text: strings.TrimSpace(m[2])}, true
	}
	if m := reCreate.FindStringSubmatch(s); m != nil {
		return Command{Kind: CmdCreate, Text: strings.TrimSpace(m[1])}, true
	}
	return Command{}, false
}

// SlashText is the chat text a /task subcommand stands for, given its
// options' values by name, in the grammar ParseCommand reads: Text, then
// each option given — a number as #N, text after its name and a colon,
// so whatever was typed is kept whole ("create task goal: status #3").
// A strategy is not in the text: the adapters pass it as create_task's
// parameter.
func (s *Slash) SlashText(values map[string]string) string {
	if s.Build != nil {
		return s.Build(values)
	}
	parts := []string{s.Text}
	for _, o := range s.Options {
		v := strings.TrimSpace(values[o.Name])
		if v == "" {
			continue
		}
		switch o.Kind {
		case OptNumber:
			parts = append(parts, "#"+v)
		case OptText:
			parts = append(parts, o.Name+": "+v)
		}
	}
	return strings.Join(parts, " ")
}

// helpRows are the help's lines, from the table: each listed command's
// usage and those of the commands that share its line, and its /task
// forms on Discord and Slack.
func helpRows() []render.HelpRow {
	var rows []render.HelpRow
	at := map[string]int{}
	for _, c := range chatCommands {
		say := codes(c.Usage)
		if c.HelpWith != "" {
			if i, ok := at[c.HelpWith]; ok {
				rows[i].Say += ", " + codes(c.Usage[:1])
			}
			continue
		}
		if c.Help == "" {
			continue
		}
		row := render.HelpRow{Say: say, Does: c.Help}
		if c.Slash != nil {
			row.Discord, row.Slack = "/task "+c.Slash.Name, "/task "+c.Slash.Name
			for _, o := range c.Slash.Options {
				if o.Example != "" {
					row.Discord += " " + o.Name + ":" + o.Example
					row.Slack += " " + o.Example
				}
			}
		}
		if c.DiscordHelp != "" {
			row.Discord = c.DiscordHelp
		}
		if c.SlackHelp != "" {
			row.Slack = c.SlackHelp
		}
		at[c.Kind] = len(rows)
		rows = append(rows, row)
	}
	return rows
}

// codes shows each usage as code, but one that has code of its own (a
// cron expression in backticks) as it is typed.
func codes(usage []string) string {
	out := make([]string, len(usage))
	for i, u := range usage {
		out[i] = u
		if !strings.Contains(u, "`") {
			out[i] = "`" + u + "`"
		}
	}
	return strings.Join(out, ", ")
}

// SlackUsageHint is the usage hint of Slack's /task (the app manifest's
// usage_hint): each subcommand with its options, then the commands help
// lists that have none.
func SlackUsageHint() string {
	var parts []string
	for _, c := range chatCommands {
		if c.Slash == nil {
			switch {
			case c.SlackHint != "":
				parts = append(parts, c.SlackHint)
			case c.Help != "":
				parts = append(parts, c.Usage[0])
			}
			continue
		}
		if c.Slash.SlackHint != "" {
			parts = append(parts, c.Slash.SlackHint)
			continue
		}
		p := c.Slash.Name
		for _, o := range c.Slash.Options {
			switch {
			case o.Hint == "":
			case o.Optional:
				p += " [" + o.Hint + "]"
			default:
				p += " <" + o.Hint + ">"
			}
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " | ")
}
