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
)

// CommandName is the one application command, /task.
const CommandName = "task"

// MaxChoices is how many choices Discord lets an option have: with more
// strategies than that, /task create's strategy is typed, and the task
// service says when it names none of them.
const MaxChoices = 25

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
// subcommands, those of actions' table of chat commands (docs/chat.md),
// the task numbers autocompleted, and the choices of /task create's
// strategy the strategies given — the task service's
// (actions.Strategies), loop first: the default.
func Commands(strategies []string) []*discordgo.ApplicationCommand {
	var subs []*discordgo.ApplicationCommandOption
	for _, c := range actions.ChatCommands() {
		if c.Slash == nil {
			continue
		}
		sub := &discordgo.ApplicationCommandOption{
			Type: discordgo.ApplicationCommandOptionSubCommand, Name: c.Slash.Name, Description: c.Slash.Description,
		}
		for _, o := range c.Slash.Options {
			sub.Options = append(sub.Options, slashOption(o, strategies))
		}
		subs = append(subs, sub)
	}
	integrationTypes, contexts := slices.Clone(IntegrationTypes), slices.Clone(Contexts)
	return []*discordgo.ApplicationCommand{{
		Type:             discordgo.ChatApplicationCommand,
		Name:             CommandName,
		Description:      "Hand long, multi-step work to an agent and follow it",
		IntegrationTypes: &integrationTypes,
		Contexts:         &contexts,
		Options:          subs,
	}}
}

// slashOption is Discord's form of one option of a subcommand.
func slashOption(o actions.SlashOption, strategies []string) *discordgo.ApplicationCommandOption {
	out := &discordgo.ApplicationCommandOption{Name: o.Name, Description: o.Description, Required: !o.Optional}
	switch o.Kind {
	case actions.OptNumber:
		one := 1.0
		out.Type, out.MinValue, out.Autocomplete = discordgo.ApplicationCommandOptionInteger, &one, true
	case actions.OptText:
		minLen := 1
		out.Type, out.MinLength, out.MaxLength = discordgo.ApplicationCommandOptionString, &minLen, o.MaxLength
	case actions.OptStrategy:
		out.Type = discordgo.ApplicationCommandOptionString
		if len(strategies) <= MaxChoices {
			for _, s := range strategies {
				out.Choices = append(out.Choices, &discordgo.ApplicationCommandOptionChoice{Name: s, Value: s})
			}
		}
	case actions.OptChoice:
		out.Type = discordgo.ApplicationCommandOptionString
		for _, c := range o.Choices {
			out.Choices = append(out.Choices, &discordgo.ApplicationCommandOptionChoice{Name: c, Value: c})
		}
	case actions.OptInteger:
		one := 1.0
		out.Type, out.MinValue = discordgo.ApplicationCommandOptionInteger, &one
	}
	return out
}

// registerCommands makes the application's global commands Commands(…),
// with one bulk overwrite — and none when they already are, so a restart
// or another replica changes nothing. The overwrite keeps a command's ID
// when one of the same name exists, so even two replicas racing through
// it end with one /task.
func (a *Adapter) registerCommands(ctx context.Context, appID string) error {
	want := Commands(actions.Strategies(a.rt))
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
	c, ok := actions.SlashCommand(sub.Name)
	if !ok {
		return "", fmt.Errorf("unknown subcommand /%s %s", data.Name, sub.Name)
	}
	// Only the options the table declares, of the type it declares them
	// with: a crafted interaction's others are ignored.
	kinds := map[string]actions.OptionKind{}
	for _, o := range c.Slash.Options {
		kinds[o.Name] = o.Kind
	}
	values := map[string]string{}
	for _, o := range sub.Options {
		kind, declared := kinds[o.Name]
		switch {
		case !declared:
		case (kind == actions.OptNumber || kind == actions.OptInteger) && (o.Type == discordgo.ApplicationCommandOptionInteger || o.Type == discordgo.ApplicationCommandOptionNumber):
			values[o.Name] = strconv.FormatInt(o.IntValue(), 10)
		case kind != actions.OptNumber && kind != actions.OptInteger && o.Type == discordgo.ApplicationCommandOptionString:
			values[o.Name] = o.StringValue()
		}
	}
	return c.Slash.SlashText(values), nil
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
