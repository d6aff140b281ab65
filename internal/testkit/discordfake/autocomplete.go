package discordfake

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
)

// MaxChoices is Discord's limit on the choices of an autocomplete answer.
const MaxChoices = 25

// Autocomplete is a user typing into an option that has autocomplete,
// for Autocomplete.
type Autocomplete struct {
	ChannelID   string
	GuildID     string // "" for a DM with the bot or a group DM
	User        User   // ID required
	UserInstall bool
	Name        string // "task" when empty
	Subcommand  string
	// Options are those the user has filled in already; Discord sends them
	// without "focused".
	Options []CommandOption
	// Focused names the option being typed in, and Typed is what the user
	// has typed so far.
	Focused string
	Typed   string
}

// Autocomplete dispatches INTERACTION_CREATE of type 4
// (APPLICATION_COMMAND_AUTOCOMPLETE) as Discord sends it while a user
// types: the command's data with the options so far, the one being typed
// marked "focused": true with its partial value. As in Discord's client,
// a partial value passes client-side validation first: an INTEGER or
// NUMBER option's value is sent as a number, or as "" before anything is
// typed; text that is not a number is not sent at all (a test error).
// Discord only sends it for an option registered with autocomplete: true.
// The answer must be APPLICATION_COMMAND_AUTOCOMPLETE_RESULT (8) with at
// most 25 choices of the option's type, within three seconds; see
// InteractionResponse.Choices.
func (s *Server) Autocomplete(a Autocomplete) Interaction {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.hasSessionLocked("INTERACTION_CREATE") {
		return Interaction{}
	}
	if a.Name == "" {
		a.Name = "task"
	}
	data := map[string]any{"id": s.newID(), "name": a.Name, "type": discordgo.ChatApplicationCommand}
	cmd := s.commandForLocked(data, a.GuildID, a.Name)
	opt := registeredOption(cmd, a.Subcommand, a.Focused)
	if opt == nil || !opt.Autocomplete {
		s.t.Errorf("discordfake: /%s %s has no option %q with autocomplete, so Discord would send no autocomplete for it", a.Name, a.Subcommand, a.Focused)
		return Interaction{}
	}
	focused := map[string]any{"name": a.Focused, "type": opt.Type, "focused": true, "value": a.Typed}
	switch opt.Type {
	case discordgo.ApplicationCommandOptionInteger, discordgo.ApplicationCommandOptionNumber:
		if a.Typed != "" {
			n, err := strconv.ParseFloat(a.Typed, 64)
			if err != nil || (opt.Type == discordgo.ApplicationCommandOptionInteger && n != math.Trunc(n)) {
				s.t.Errorf("discordfake: %q is not a valid %s; Discord's client does not send it", a.Typed, optionTypeName(opt.Type))
				return Interaction{}
			}
			focused["value"] = n
		}
	}
	opts, _ := s.wireOptionsLocked(a.Options)
	opts = append(opts, focused)
	if a.Subcommand != "" {
		opts = []any{map[string]any{"name": a.Subcommand, "type": discordgo.ApplicationCommandOptionSubCommand, "options": opts}}
	}
	data["options"] = opts
	in := s.newInteractionLocked(discordgo.InteractionApplicationCommandAutocomplete, a.ChannelID, a.GuildID, a.User)
	in.userInstall = a.UserInstall || in.context == discordgo.InteractionContextPrivateChannel
	in.focusedType = opt.Type
	if !offered(cmd, in.context) {
		s.t.Errorf("discordfake: /%s is not offered in interaction context %d", a.Name, in.context)
		return Interaction{}
	}
	s.dispatchInteractionLocked(in, data, nil)
	return Interaction{ID: in.id, Token: in.token}
}

// registeredOption finds an option of a registered command, under a
// subcommand when sub is set.
func registeredOption(cmd *discordgo.ApplicationCommand, sub, name string) *discordgo.ApplicationCommandOption {
	if cmd == nil {
		return nil
	}
	opts := cmd.Options
	if sub != "" {
		opts = nil
		for _, o := range cmd.Options {
			if o.Name == sub && o.Type == discordgo.ApplicationCommandOptionSubCommand {
				opts = o.Options
			}
		}
	}
	for _, o := range opts {
		if o.Name == name {
			return o
		}
	}
	return nil
}

func optionTypeName(t discordgo.ApplicationCommandOptionType) string {
	switch t {
	case discordgo.ApplicationCommandOptionInteger:
		return "integer"
	case discordgo.ApplicationCommandOptionNumber:
		return "number"
	}
	return fmt.Sprintf("option type %d", t)
}

// Choices decodes the choices of an autocomplete answer (type 8).
func (r InteractionResponse) Choices() ([]*discordgo.ApplicationCommandOptionChoice, error) {
	var d struct {
		Choices []*discordgo.ApplicationCommandOptionChoice `json:"choices"`
	}
	if err := json.Unmarshal(r.Data, &d); err != nil {
		return nil, fmt.Errorf("discordfake: autocomplete answer %s: %w", r.Data, err)
	}
	return d.Choices, nil
}

// validateChoices applies Discord's rules to an autocomplete answer's
// data: none at all, or at most 25 choices, each named with 1 to 100 characters, each
// value of the focused option's type.
func validateChoices(raw json.RawMessage, t discordgo.ApplicationCommandOptionType) *apiError {
	var d struct {
		Choices []struct {
			Name  string          `json:"name"`
			Value json.RawMessage `json:"value"`
		} `json:"choices"`
	}
	// No choices (or an empty list) shows "No options match your search".
	if len(raw) > 0 && json.Unmarshal(raw, &d) != nil {
		return formError("data.choices", "BASE_TYPE_BAD", "Must be an array of choices.")
	}
	if len(d.Choices) > MaxChoices {
		return formError("data.choices", "BASE_TYPE_MAX_LENGTH", fmt.Sprintf("Must be %d or fewer in length.", MaxChoices))
	}
	for i, c := range d.Choices {
		p := fmt.Sprintf("data.choices.%d.", i)
		if n := utf8.RuneCountInString(c.Name); n < 1 || n > 100 {
			return formError(p+"name", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
		}
		var str string
		var num float64
		switch t {
		case discordgo.ApplicationCommandOptionString:
			if json.Unmarshal(c.Value, &str) != nil || utf8.RuneCountInString(str) > 100 {
				return formError(p+"value", "BASE_TYPE_BAD", "Must be a string of 100 or fewer in length.")
			}
		case discordgo.ApplicationCommandOptionInteger:
			if json.Unmarshal(c.Value, &num) != nil || num != math.Trunc(num) {
				return formError(p+"value", "NUMBER_TYPE_COERCE", fmt.Sprintf("Value %q is not int.", string(c.Value)))
			}
		case discordgo.ApplicationCommandOptionNumber:
			if json.Unmarshal(c.Value, &num) != nil {
				return formError(p+"value", "NUMBER_TYPE_COERCE", fmt.Sprintf("Value %q is not a number.", string(c.Value)))
			}
		}
	}
	return nil
}
