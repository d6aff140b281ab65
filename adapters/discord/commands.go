package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/plugin"
)

// CommandName is the one application command, /task.
const CommandName = "task"

// Strategies are the choices of /task create's strategy option
// (docs/strategies.md), loop first: the default.
var Strategies = []string{
	plugin.StrategyLoop, plugin.StrategyReact, plugin.StrategyTools, plugin.StrategyReview,
	plugin.StrategySupervisor, plugin.StrategyMagentic, plugin.StrategyGroupChat,
}

// Where /task can be used (docs/discord.md, docs/slack.md): the app is installable to a
// server and to a user's account, and the command works in servers, in
// DMs with the bot and — installed to a user — in group DMs and other DMs.
var (
	IntegrationTypes = []discordgo.ApplicationIntegrationType{
		discordgo.ApplicationIntegrationGuildInstall, discordgo.ApplicationIntegrationUserInstall,
	}
	Contexts = []discordgo.InteractionContextType{
		discordgo.InteractionContextGuild, discordgo.InteractionContextBotDM, discordgo.InteractionContextPrivateChannel,
	}
)

// Commands are the application commands the bot registers: /task and its
// subcommands (docs/chat.md), the task numbers autocompleted.
func Commands() []*discordgo.ApplicationCommand {
	one := 1.0
	minLen := 1
	number := func(what string) *discordgo.ApplicationCommandOption {
		return &discordgo.ApplicationCommandOption{
			Type: discordgo.ApplicationCommandOptionInteger, Name: "number",
			Description: "The task's number, as in #3, of the task to " + what, Required: true, MinValue: &one,
			Autocomplete: true,
		}
	}
	text := func(name, desc string, maxLen int) *discordgo.ApplicationCommandOption {
		return &discordgo.ApplicationCommandOption{
			Type: discordgo.ApplicationCommandOptionString, Name: name, Description: desc,
			Required: true, MinLength: &minLen, MaxLength: maxLen,
		}
	}
	optional := func(o *discordgo.ApplicationCommandOption) *discordgo.ApplicationCommandOption {
		o.Required = false
		return o
	}
	sub := func(name, desc string, opts ...*discordgo.ApplicationCommandOption) *discordgo.ApplicationCommandOption {
		return &discordgo.ApplicationCommandOption{
			Type: discordgo.ApplicationCommandOptionSubCommand, Name: name, Description: desc, Options: opts,
		}
	}
	strategy := &discordgo.ApplicationCommandOption{
		Type: discordgo.ApplicationCommandOptionString, Name: "strategy",
		Description: "How the task is worked; loop when not given",
	}
	for _, s := range Strategies {
		strategy.Choices = append(strategy.Choices, &discordgo.ApplicationCommandOptionChoice{Name: s, Value: s})
	}
	scheduleAction := &discordgo.ApplicationCommandOption{
		Type: discordgo.ApplicationCommandOptionString, Name: "action", Description: "What to do", Required: true,
	}
	for _, op := range []string{"add", "list", "pause", "resume", "delete"} {
		scheduleAction.Choices = append(scheduleAction.Choices, &discordgo.ApplicationCommandOptionChoice{Name: op, Value: op})
	}
	integrationTypes, contexts := slices.Clone(IntegrationTypes), slices.Clone(Contexts)
	return []*discordgo.ApplicationCommand{{
		Type:             discordgo.ChatApplicationCommand,
		Name:             CommandName,
		Description:      "Hand long, multi-step work to an agent and follow it",
		IntegrationTypes: &integrationTypes,
		Contexts:         &contexts,
		Options: []*discordgo.ApplicationCommandOption{
			sub("create", "Create a task; progress is posted in this channel",
				text("goal", "What the task should do", 4000), strategy),
			sub("list", "The task queue, in the order tasks are served"),
			sub("status", "One task in detail", number("show")),
			sub("pause", "Pause a task (its creator or a server manager)", number("pause")),
			sub("resume", "Resume a paused task (its creator or a server manager)", number("resume")),
			sub("cancel", "Cancel a task for good (its creator or a server manager)", number("cancel")),
			sub("search", "Tasks whose name or goal matches", text("query", "Words to look for", 200)),
			sub("answer", "Answer the question a waiting task asked",
				number("answer"), text("text", "Your answer", 4000)),
			sub("retry", "Continue an ended task as a new one, with its files",
				number("retry"), optional(text("context", "More context for the new run", 4000))),
			sub("schedule", "Run a task at the times of a cron expression, or list, pause, resume or delete schedules",
				scheduleAction, optional(text("cron", "Five fields such as 0 9 * * 1-5, or @daily, @every 2h (for add)", 200)),
				optional(text("goal", "What each run should do (for add)", 4000)),
				&discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionInteger, Name: "id",
					Description: "The schedule's number, as in #2 (for pause, resume, delete)", MinValue: &one}),
		},
	}}
}

// registerCommands makes the application's global commands Commands(),
// with one bulk overwrite — and none when they already are, so a restart
// or another replica changes nothing. The overwrite keeps a command's ID
// when one of the same name exists, so even two replicas racing through
// it end with one /task.
func (a *Adapter) registerCommands(ctx context.Context, appID string) error {
	want := Commands()
	have, err := a.sess.ApplicationCommands(appID, "", discordgo.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("list the application's commands (DISCORD_APPLICATION_ID=%s): %w", appID, rateLimited(err))
	}
	if sameCommands(have, want) {
		a.log.Info("the /task command is registered already", "application", appID)
		return nil
	}
	if _, err := a.sess.ApplicationCommandBulkOverwrite(appID, "", want, discordgo.WithContext(ctx)); err != nil {
		return fmt.Errorf("register the /task command (DISCORD_APPLICATION_ID=%s): %w", appID, rateLimited(err))
	}
	a.log.Info("registered the /task command", "application", appID, "replaced", len(have))
	return nil
}

// sameCommands reports whether the registered commands are the wanted
// ones, comparing only what a definition says: Discord adds IDs,
// versions and defaults of its own.
func sameCommands(have, want []*discordgo.ApplicationCommand) bool {
	canon := func(cs []*discordgo.ApplicationCommand) string {
		out := make([]canonCommand, 0, len(cs))
		for _, c := range cs {
			out = append(out, canonicalCommand(c))
		}
		slices.SortFunc(out, func(x, y canonCommand) int {
			return strings.Compare(fmt.Sprint(x.Type, x.Name), fmt.Sprint(y.Type, y.Name))
		})
		b, err := json.Marshal(out)
		if err != nil {
			return "" // unreachable: plain values
		}
		return string(b)
	}
	h, w := canon(have), canon(want)
	return h != "" && h == w
}

type canonCommand struct {
	Type             discordgo.ApplicationCommandType
	Name             string
	Description      string
	Permissions      *int64
	IntegrationTypes []discordgo.ApplicationIntegrationType
	Contexts         []discordgo.InteractionContextType
	Options          []canonOption
}

type canonOption struct {
	Type         discordgo.ApplicationCommandOptionType
	Name         string
	Description  string
	Required     bool
	MinValue     *float64
	MaxValue     float64
	MinLength    int
	MaxLength    int
	Autocomplete bool
	Choices      []string
	Options      []canonOption
}

func canonicalCommand(c *discordgo.ApplicationCommand) canonCommand {
	t := c.Type
	if t == 0 {
		t = discordgo.ChatApplicationCommand
	}
	cc := canonCommand{Type: t, Name: c.Name, Description: c.Description,
		Permissions: c.DefaultMemberPermissions, Options: canonicalOptions(c.Options)}
	// Unset, Discord fills in defaults of its own; set, the order does not
	// matter.
	if c.IntegrationTypes != nil {
		cc.IntegrationTypes = slices.Sorted(slices.Values(*c.IntegrationTypes))
	}
	if c.Contexts != nil {
		cc.Contexts = slices.Sorted(slices.Values(*c.Contexts))
	}
	return cc
}

func canonicalOptions(opts []*discordgo.ApplicationCommandOption) []canonOption {
	var out []canonOption
	for _, o := range opts {
		co := canonOption{Type: o.Type, Name: o.Name, Description: o.Description, Required: o.Required,
			MinValue: o.MinValue, MaxValue: o.MaxValue, MaxLength: o.MaxLength, Autocomplete: o.Autocomplete,
			Options: canonicalOptions(o.Options)}
		if o.MinLength != nil {
			co.MinLength = *o.MinLength
		}
		for _, ch := range o.Choices {
			co.Choices = append(co.Choices, fmt.Sprintf("%s=%v", ch.Name, ch.Value))
		}
		out = append(out, co)
	}
	return out
}

// commandText is the chat command a /task invocation stands for, in the
// grammar of actions.ParseCommand, so a slash command and a typed one are
// the same command. The keywords ("goal:", "query:", "text:") keep
// whatever the user typed whole, even when it starts with a word the
// grammar would otherwise take ("create task a website").
func commandText(data discordgo.ApplicationCommandInteractionData) (string, error) {
	if data.Name != CommandName {
		return "", fmt.Errorf("unknown command /%s", data.Name)
	}
	if len(data.Options) == 0 || data.Options[0].Type != discordgo.ApplicationCommandOptionSubCommand {
		return "help", nil
	}
	sub := data.Options[0]
	str := func(name string) string {
		for _, o := range sub.Options {
			if o.Name == name && o.Type == discordgo.ApplicationCommandOptionString {
				return strings.TrimSpace(o.StringValue())
			}
		}
		return ""
	}
	num := func() string {
		for _, o := range sub.Options {
			if o.Name == "number" && (o.Type == discordgo.ApplicationCommandOptionInteger || o.Type == discordgo.ApplicationCommandOptionNumber) {
				return "#" + strconv.FormatInt(o.IntValue(), 10)
			}
		}
		return ""
	}
	switch sub.Name {
	case "create":
		return "create task goal: " + str("goal"), nil
	case "list":
		return "list tasks", nil
	case "status", "pause", "resume", "cancel":
		return strings.TrimSpace(sub.Name + " " + num()), nil
	case "search":
		return "search tasks query: " + str("query"), nil
	case "answer":
		return fmt.Sprintf("answer %s text: %s", num(), str("text")), nil
	case "retry":
		if c := str("context"); c != "" {
			return fmt.Sprintf("retry %s context: %s", num(), c), nil
		}
		return "retry " + num(), nil
	case "schedule":
		return scheduleText(str("action"), str("cron"), str("goal"), sub.Options), nil
	}
	return "", fmt.Errorf("unknown subcommand /%s %s", data.Name, sub.Name)
}

// commandAction is the action and parameters of a /task invocation
// whose options say more than its text can — create, with its strategy —
// which the runtime then runs as given (plugin.Message.Action); "" for
// the others, read through their text.
func commandAction(data discordgo.ApplicationCommandInteractionData) (string, json.RawMessage) {
	if data.Name != CommandName || len(data.Options) == 0 || data.Options[0].Type != discordgo.ApplicationCommandOptionSubCommand ||
		data.Options[0].Name != "create" {
		return "", nil
	}
	params := map[string]string{}
	for _, o := range data.Options[0].Options {
		if (o.Name == "goal" || o.Name == "strategy") && o.Type == discordgo.ApplicationCommandOptionString {
			if v := strings.TrimSpace(o.StringValue()); v != "" {
				params[o.Name] = v
			}
		}
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return "", nil // unreachable: strings
	}
	return actions.CreateTask{}.Info().Name, raw
}

// Button custom IDs are "taskloom:<op>:<task number>", and for a decision
// on an approval request "taskloom:<op>:<task number>:<request id>".
const buttonPrefix = "taskloom:"

// buttonOps are the controls, in the order they are shown.
var buttonOps = []string{"pause", "resume", "cancel", "retry", "approve", "deny"}

func buttonID(op string, number int64) string {
	return buttonPrefix + op + ":" + strconv.FormatInt(number, 10)
}

// decisionID is the custom ID of an Approve or Deny button: bound to the
// call it was shown with.
func decisionID(op string, number int64, call string) string {
	return buttonID(op, number) + ":" + call
}

// buttonText is the chat command a button press stands for ("pause #12",
// "approve #12 call:5f0c…").
func buttonText(customID string) (string, bool) {
	rest, ok := strings.CutPrefix(customID, buttonPrefix)
	if !ok {
		return "", false
	}
	op, ref, ok := strings.Cut(rest, ":")
	if !ok || !slices.Contains(buttonOps, op) {
		return "", false
	}
	text, _, ok := actions.PressText(op, ref)
	return text, ok
}

// scheduleText is the chat command of /task schedule (docs/schedules.md):
// add is `every <cron> task <goal>`, the cron expression in backticks (a
// descriptor needs none); the others name the schedule by its id.
func scheduleText(action, cron, goal string, opts []*discordgo.ApplicationCommandInteractionDataOption) string {
	id := ""
	for _, o := range opts {
		if o.Name == "id" && (o.Type == discordgo.ApplicationCommandOptionInteger || o.Type == discordgo.ApplicationCommandOptionNumber) {
			id = " #" + strconv.FormatInt(o.IntValue(), 10)
		}
	}
	switch action {
	case "add":
		spec := cron
		if !strings.HasPrefix(cron, "@") {
			spec = "`" + cron + "`"
		}
		return "every " + spec + " task goal: " + goal
	case "pause", "resume":
		return action + " schedule" + id
	case "delete":
		return "unschedule" + id
	}
	return "schedules"
}
