package plugin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/taskloom/taskloom/plugin"
)

// Roll is an action: a chat command ("roll 20") and, through its JSON
// Schema, a tool an agent task can call with {"sides": 20}.
type Roll struct{}

var (
	_ plugin.Action         = Roll{}
	_ plugin.CommandMatcher = Roll{}
)

func (Roll) Info() plugin.ActionInfo {
	return plugin.ActionInfo{
		Name:        "roll",
		Similes:     []string{"dice", "random number"},
		Description: "Rolls a die with the given number of sides.",
		Examples:    []string{"roll 20"},
		Parameters:  json.RawMessage(`{"type":"object","properties":{"sides":{"type":"integer","minimum":2}},"required":["sides"]}`),
	}
}

// MatchCommand is the deterministic grammar: no model call is needed for
// "roll 20".
func (Roll) MatchCommand(msg *plugin.Message) (json.RawMessage, bool) {
	var sides int
	if _, err := fmt.Sscanf(strings.TrimSpace(msg.Text), "roll %d", &sides); err != nil {
		return nil, false
	}
	return json.RawMessage(fmt.Sprintf(`{"sides":%d}`, sides)), true
}

func (Roll) Handle(_ context.Context, call *plugin.Call) (plugin.Result, error) {
	var p struct{ Sides int }
	if err := json.Unmarshal(call.Params, &p); err != nil || p.Sides < 2 {
		return plugin.Result{Error: "A die needs at least 2 sides."}, nil
	}
	// A real plugin would roll; the example stays deterministic.
	return plugin.Result{Success: true, Text: fmt.Sprintf("🎲 You rolled %d (d%d).", p.Sides/2, p.Sides)}, nil
}

// Example shows a plugin with one action going through the message
// pipeline the way a Discord or Slack message does.
func Example() {
	rt := plugin.New(plugin.Options{Logger: quietLogger()})
	err := rt.Register(&plugin.Plugin{
		Name:        "dice",
		Description: "Rolls dice.",
		Actions:     []plugin.Action{Roll{}},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if err := rt.Start(ctx); err != nil {
		panic(err)
	}
	defer rt.Stop(ctx)

	reply := func(_ context.Context, r plugin.Response) error {
		fmt.Println(r.Text)
		return nil
	}
	for _, text := range []string{"roll 20", "roll 1"} {
		msg := plugin.Message{Platform: "console", Room: "console", AuthorID: "me", Text: text, DM: true}
		if err := rt.HandleMessage(ctx, msg, reply); err != nil {
			panic(err)
		}
	}
	// Output:
	// 🎲 You rolled 10 (d20).
	// A die needs at least 2 sides.
}
