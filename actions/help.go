package actions

import (
	"context"
	"encoding/json"

	"github.com/taskloom/taskloom/internal/render"
	"github.com/taskloom/taskloom/plugin"
)

// HelpCommand lists the chat commands: `help`. It is also the runtime's
// fallback for text no command matches when no real model is configured.
type HelpCommand struct{ *Chat }

var (
	_ plugin.Action         = HelpCommand{}
	_ plugin.CommandMatcher = HelpCommand{}
)

func (HelpCommand) Info() plugin.ActionInfo {
	return plugin.ActionInfo{
		Name:        "help",
		Description: "List the commands.",
		Examples:    []string{"help"},
		Parameters:  schema(`{"type":"object","properties":{}}`),
	}
}

func (HelpCommand) MatchCommand(msg *plugin.Message) (json.RawMessage, bool) {
	return match(msg, CmdHelp)
}

func (h HelpCommand) Handle(_ context.Context, call *plugin.Call) (plugin.Result, error) {
	f := render.Plain
	if call.Message != nil {
		f = render.ForPlatform(call.Message.Platform)
	}
	return plugin.Result{Success: true, Text: HelpText(f, h.Chat.Strategies()), Ephemeral: true}, nil
}

// HelpText is the help in flavor f, from the table of commands
// (commandtable.go), with strategies, the task service's.
func HelpText(f render.Flavor, strategies []string) string {
	return render.Help(f, helpRows(), strategies)
}
