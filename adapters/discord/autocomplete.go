package discord

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// Autocomplete of /task's number option (docs/discord.md, docs/slack.md): the tasks the
// caller can see — the workspace rule of the status and list commands —
// newest first, those the subcommand can act on, filtered by what was
// typed, at most Discord's 25, each "#N name — status".

const (
	// maxChoices is Discord's limit on an autocomplete's choices, and
	// maxChoiceName on a choice's name.
	maxChoices    = 25
	maxChoiceName = 100
	// choicePage and choiceScan bound the tasks read to find the choices
	// for a typed number: the newest matches are what is shown.
	choicePage = 200
	choiceScan = 2000
)

// autocomplete answers an APPLICATION_COMMAND_AUTOCOMPLETE interaction
// with the choices for the option being typed. Discord allows no
// deferral: the choices are read from the store at once.
func (a *Adapter) autocomplete(ctx context.Context, in *discordgo.Interaction) {
	choices, err := a.taskChoices(ctx, in)
	if err != nil {
		a.log.Warn("cannot list the tasks to autocomplete", "interaction", in.ID, "err", err)
		choices = nil // "No options match your search" rather than a failure
	}
	err = a.sess.InteractionRespond(in, &discordgo.InteractionResponse{
		Type: discordgo.InteractionApplicationCommandAutocompleteResult,
		Data: &discordgo.InteractionResponseData{Choices: choices},
	}, discordgo.WithContext(ctx))
	if err != nil {
		a.log.Warn("answering an autocomplete failed", "interaction", in.ID, "err", rateLimited(err))
	}
}

// taskChoices are the choices for a task number being typed in a /task
// subcommand.
func (a *Adapter) taskChoices(ctx context.Context, in *discordgo.Interaction) ([]*discordgo.ApplicationCommandOptionChoice, error) {
	data := in.ApplicationCommandData()
	if data.Name != CommandName || len(data.Options) == 0 {
		return nil, nil
	}
	sub := data.Options[0]
	// Which tasks a subcommand offers is in actions' table of commands.
	c, ok := actions.SlashCommand(sub.Name)
	if !ok || c.Slash.Offers == nil {
		return nil, nil
	}
	offers := c.Slash.Offers
	var focused *discordgo.ApplicationCommandInteractionDataOption
	for _, o := range sub.Options {
		if o.Focused && o.Name == "number" {
			focused = o
		}
	}
	if focused == nil {
		return nil, nil
	}
	who, ok := a.caller(in)
	if !ok {
		return nil, nil
	}
	msg := plugin.Message{Platform: Name, WorkspaceID: in.GuildID, AuthorID: who.user.ID, DM: who.dm}
	f := domain.TaskFilter{WorkspaceID: actions.WorkspaceOf(&msg), Order: domain.OrderRecent, Limit: choicePage}
	keep := offers
	switch typed := typedValue(focused.Value); {
	case typed == "":
	case isDigits(typed):
		keep = func(t domain.Task) bool {
			return offers(t) && strings.HasPrefix(strconv.FormatInt(t.Number, 10), typed)
		}
	default:
		f.Query = typed // a name's words, where the client lets them through
	}
	var choices []*discordgo.ApplicationCommandOptionChoice
	for scanned := 0; len(choices) < maxChoices && scanned < choiceScan; {
		page, err := a.rt.Store().ListTasks(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("autocomplete /task %s: %w", sub.Name, err)
		}
		for _, t := range page {
			if keep(t) && len(choices) < maxChoices {
				choices = append(choices, &discordgo.ApplicationCommandOptionChoice{Name: choiceName(t), Value: t.Number})
			}
		}
		if len(page) < f.Limit {
			break
		}
		scanned += len(page)
		f.AfterNumber = page[len(page)-1].Number
	}
	return choices, nil
}

// typedValue is what the user has typed so far: Discord sends a partial
// number as a number, and nothing typed yet as "".
func typedValue(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case string:
		return strings.TrimPrefix(strings.TrimSpace(x), "#")
	}
	return ""
}

func isDigits(s string) bool {
	return s != "" && !slices.ContainsFunc([]rune(s), func(r rune) bool { return r < '0' || r > '9' })
}

// choiceName is "#N name — status", the name cut to fit Discord's 100
// characters.
func choiceName(t domain.Task) string {
	head, tail := fmt.Sprintf("#%d ", t.Number), " — "+string(t.Status)
	name := strings.Join(strings.Fields(t.Name), " ")
	if room := maxChoiceName - utf8.RuneCountInString(head+tail); utf8.RuneCountInString(name) > room {
		name = strings.TrimSpace(string([]rune(name)[:room-1])) + "…"
	}
	return head + name + tail
}
