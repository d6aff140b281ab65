package discord

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/domain"
)

// invocation builds the data of a /task invocation as discordgo decodes
// it from the gateway.
func invocation(t *testing.T, sub string, opts map[string]any) discordgo.ApplicationCommandInteractionData {
	t.Helper()
	var options []map[string]any
	for name, v := range opts {
		typ := discordgo.ApplicationCommandOptionString
		if _, ok := v.(int); ok {
			typ = discordgo.ApplicationCommandOptionInteger
		}
		options = append(options, map[string]any{"name": name, "type": typ, "value": v})
	}
	raw, err := json.Marshal(map[string]any{"id": "1", "name": "task", "type": 1, "options": []any{
		map[string]any{"name": sub, "type": discordgo.ApplicationCommandOptionSubCommand, "options": options},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var d discordgo.ApplicationCommandInteractionData
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestCommandTextParsesAsTheSameCommand checks that every subcommand
// becomes chat text the command grammar reads back as the same command,
// whatever the user typed into its options.
func TestCommandTextParsesAsTheSameCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		sub  string
		opts map[string]any
		want actions.Command
	}{
		{"create", map[string]any{"goal": "Build auth"}, actions.Command{Kind: actions.CmdCreate, Text: "Build auth"}},
		{"create", map[string]any{"goal": "a website"}, actions.Command{Kind: actions.CmdCreate, Text: "a website"}},
		{"create", map[string]any{"goal": "task force setup"}, actions.Command{Kind: actions.CmdCreate, Text: "task force setup"}},
		{"create", map[string]any{"goal": "goal: ship it"}, actions.Command{Kind: actions.CmdCreate, Text: "goal: ship it"}},
		{"create", map[string]any{"goal": "status #3"}, actions.Command{Kind: actions.CmdCreate, Text: "status #3"}},
		{"create", map[string]any{"goal": "list"}, actions.Command{Kind: actions.CmdCreate, Text: "list"}},
		{"create", map[string]any{"goal": "@everyone hello\nsecond line"}, actions.Command{Kind: actions.CmdCreate, Text: "@everyone hello\nsecond line"}},
		{"list", nil, actions.Command{Kind: actions.CmdList}},
		{"status", map[string]any{"number": 3}, actions.Command{Kind: actions.CmdStatus, Number: 3}},
		{"pause", map[string]any{"number": 12}, actions.Command{Kind: actions.CmdPause, Number: 12}},
		{"resume", map[string]any{"number": 1}, actions.Command{Kind: actions.CmdResume, Number: 1}},
		{"cancel", map[string]any{"number": 7}, actions.Command{Kind: actions.CmdCancel, Number: 7}},
		{"search", map[string]any{"query": "auth"}, actions.Command{Kind: actions.CmdSearch, Text: "auth"}},
		{"search", map[string]any{"query": "tasks for login"}, actions.Command{Kind: actions.CmdSearch, Text: "tasks for login"}},
		{"answer", map[string]any{"number": 3, "text": "use JWT"}, actions.Command{Kind: actions.CmdAnswer, Number: 3, Text: "use JWT"}},
		{"answer", map[string]any{"number": 3, "text": "text: plain"}, actions.Command{Kind: actions.CmdAnswer, Number: 3, Text: "text: plain"}},
		{"schedule", map[string]any{"action": "add", "cron": "0 9 * * 1-5", "goal": "summarise the alerts"},
			actions.Command{Kind: actions.CmdSchedule, Spec: "0 9 * * 1-5", Text: "summarise the alerts"}},
		{"schedule", map[string]any{"action": "add", "cron": "@every 2h", "goal": "goal: task list"},
			actions.Command{Kind: actions.CmdSchedule, Spec: "@every 2h", Text: "goal: task list"}},
		{"schedule", map[string]any{"action": "list"}, actions.Command{Kind: actions.CmdSchedules}},
		{"schedule", map[string]any{"action": "pause", "id": 2}, actions.Command{Kind: actions.CmdPauseSchedule, Number: 2}},
		{"schedule", map[string]any{"action": "resume", "id": 2}, actions.Command{Kind: actions.CmdResumeSchedule, Number: 2}},
		{"schedule", map[string]any{"action": "delete", "id": 9}, actions.Command{Kind: actions.CmdUnschedule, Number: 9}},
		{"schedule", map[string]any{"action": "delete"}, actions.Command{Kind: actions.CmdUnschedule}},
	}
	for _, tt := range tests {
		text, err := commandText(invocation(t, tt.sub, tt.opts))
		if err != nil {
			t.Errorf("/task %s %v: %v", tt.sub, tt.opts, err)
			continue
		}
		got, ok := actions.ParseCommand(text)
		if !ok || got != tt.want {
			t.Errorf("/task %s %v → %q → %+v (ok %v), want %+v", tt.sub, tt.opts, text, got, ok, tt.want)
		}
	}
	if _, err := commandText(discordgo.ApplicationCommandInteractionData{Name: "other"}); err == nil {
		t.Error("an unknown command was accepted")
	}
	if _, err := commandText(invocation(t, "explode", nil)); err == nil {
		t.Error("an unknown subcommand was accepted")
	}
}

func TestButtons(t *testing.T) {
	t.Parallel()
	tests := []struct {
		customID string
		want     string
		ok       bool
	}{
		{buttonID("pause", 12), "pause #12", true},
		{buttonID("resume", 1), "resume #1", true},
		{buttonID("cancel", 3), "cancel #3", true},
		{"taskloom:delete:3", "", false},
		{"taskloom:pause:0", "", false},
		{"taskloom:pause:x", "", false},
		{"taskloom:pause", "", false},
		{"other:pause:3", "", false},
	}
	for _, tt := range tests {
		got, ok := buttonText(tt.customID)
		if got != tt.want || ok != tt.ok {
			t.Errorf("buttonText(%q) = %q, %v; want %q, %v", tt.customID, got, ok, tt.want, tt.ok)
		}
		if !ok {
			continue
		}
		if c, _ := actions.ParseCommand(got); c.Number <= 0 {
			t.Errorf("%q does not parse as a command naming a task: %+v", got, c)
		}
	}
}

// TestSameCommands checks the comparison that decides whether to
// register: Discord's additions do not count, a changed definition does.
func TestSameCommands(t *testing.T) {
	t.Parallel()
	strategies := []string{"loop", "react", "tools"}
	// What Discord lists back: IDs, versions, defaults of its own.
	listed := func() []*discordgo.ApplicationCommand {
		raw, err := json.Marshal(Commands(strategies))
		if err != nil {
			t.Fatal(err)
		}
		var cs []*discordgo.ApplicationCommand
		if err := json.Unmarshal(raw, &cs); err != nil {
			t.Fatal(err)
		}
		yes := true
		for _, c := range cs {
			c.ID, c.ApplicationID, c.Version, c.DMPermission, c.NSFW = "1", "2", "3", &yes, new(bool)
		}
		return cs
	}
	tests := []struct {
		name   string
		change func([]*discordgo.ApplicationCommand) []*discordgo.ApplicationCommand
		same   bool
	}{
		{"as listed", func(cs []*discordgo.ApplicationCommand) []*discordgo.ApplicationCommand { return cs }, true},
		{"none registered", func([]*discordgo.ApplicationCommand) []*discordgo.ApplicationCommand { return nil }, false},
		{"description changed", func(cs []*discordgo.ApplicationCommand) []*discordgo.ApplicationCommand {
			cs[0].Description = "old"
			return cs
		}, false},
		{"subcommand missing", func(cs []*discordgo.ApplicationCommand) []*discordgo.ApplicationCommand {
			cs[0].Options = cs[0].Options[:len(cs[0].Options)-1]
			return cs
		}, false},
		{"option no longer required", func(cs []*discordgo.ApplicationCommand) []*discordgo.ApplicationCommand {
			cs[0].Options[0].Options[0].Required = false
			return cs
		}, false},
		{"another command too", func(cs []*discordgo.ApplicationCommand) []*discordgo.ApplicationCommand {
			return append(cs, &discordgo.ApplicationCommand{Name: "ping", Description: "Ping"})
		}, false},
		{"registered before user installs", func(cs []*discordgo.ApplicationCommand) []*discordgo.ApplicationCommand {
			cs[0].IntegrationTypes, cs[0].Contexts = nil, nil
			return cs
		}, false},
		{"contexts listed in another order", func(cs []*discordgo.ApplicationCommand) []*discordgo.ApplicationCommand {
			slices.Reverse(*cs[0].Contexts)
			return cs
		}, true},
		{"numbers not autocompleted", func(cs []*discordgo.ApplicationCommand) []*discordgo.ApplicationCommand {
			cs[0].Options[2].Options[0].Autocomplete = false
			return cs
		}, false},
		{"a strategy the service lacks now", func(cs []*discordgo.ApplicationCommand) []*discordgo.ApplicationCommand {
			opts := cs[0].Options[0].Options
			strategy := opts[len(opts)-1]
			strategy.Choices = append(strategy.Choices, &discordgo.ApplicationCommandOptionChoice{Name: "echo", Value: "echo"})
			return cs
		}, false},
		{"no strategy option", func(cs []*discordgo.ApplicationCommand) []*discordgo.ApplicationCommand {
			cs[0].Options[0].Options = cs[0].Options[0].Options[:1]
			return cs
		}, false},
	}
	for _, tt := range tests {
		if got := sameCommands(tt.change(listed()), Commands(strategies)); got != tt.same {
			t.Errorf("%s: sameCommands = %v, want %v", tt.name, got, tt.same)
		}
	}
}

func TestChannelOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		room, want string
		ok         bool
	}{
		{"discord:123", "123", true},
		{"discord:123:456", "456", true},
		{"discord:", "", false},
		{"slack:C1", "", false},
		{"console", "", false},
	}
	for _, tt := range tests {
		got, err := channelOf(tt.room)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("channelOf(%q) = %q, %v; want %q (ok %v)", tt.room, got, err, tt.want, tt.ok)
		}
	}
}

func TestStripMention(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"<@42> create task Build auth", "create task Build auth"},
		{"<@!42>   status #1", "status #1"},
		{"hey <@42>, list tasks", "hey , list tasks"},
		{"<@42> create task first line\nsecond line", "create task first line\nsecond line"},
		{"<@43> is not me", "<@43> is not me"},
		{"<@42>", ""},
	}
	for _, tt := range tests {
		if got := stripMention(tt.in, "42"); got != tt.want {
			t.Errorf("stripMention(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCommandAction(t *testing.T) {
	t.Parallel()
	action, params := commandAction(invocation(t, "create", map[string]any{"goal": " Build auth ", "strategy": "react"}))
	if action != "create_task" || string(params) != `{"goal":"Build auth","strategy":"react"}` {
		t.Errorf("create = %s %s", action, params)
	}
	if action, params = commandAction(invocation(t, "create", map[string]any{"goal": "Fix it"})); string(params) != `{"goal":"Fix it"}` {
		t.Errorf("create without a strategy = %s %s", action, params)
	}
	if action, _ := commandAction(invocation(t, "status", map[string]any{"number": 3})); action != "" {
		t.Errorf("status = %s, want it read from its text", action)
	}
}

func TestThreadAndChoiceNamesFitDiscord(t *testing.T) {
	t.Parallel()
	long := domain.Task{Number: 1234, Name: strings.Repeat("é", 150), Status: domain.StatusRunning}
	for name, got := range map[string]string{"thread": threadName(long), "choice": choiceName(long)} {
		if n := utf8.RuneCountInString(got); n > 100 || !strings.HasPrefix(got, "#1234 éé") || !strings.Contains(got, "…") {
			t.Errorf("%s name = %q (%d characters)", name, got, n)
		}
	}
	if got := choiceName(long); !strings.HasSuffix(got, "… — running") {
		t.Errorf("choice name = %q, want the status kept", got)
	}
	short := domain.Task{Number: 3, Name: "Build\nauth", Status: domain.StatusPaused}
	if got := threadName(short); got != "#3 Build auth" {
		t.Errorf("thread name = %q", got)
	}
	if got := choiceName(short); got != "#3 Build auth — paused" {
		t.Errorf("choice name = %q", got)
	}
}
