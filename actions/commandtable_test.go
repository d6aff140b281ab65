package actions_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/render"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// TestHelpFromTheTable: the help, made from the table of commands, is
// testdata/help.<flavor>.golden on each platform.
func TestHelpFromTheTable(t *testing.T) {
	for _, f := range []render.Flavor{render.Plain, render.Discord, render.Slack} {
		got := actions.HelpText(f, []string{domain.StrategyLoop, domain.StrategyReact, domain.StrategyTools, "echo"}) + "\n"
		path := filepath.Join("testdata", "help."+f.String()+".golden")
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("%s differs (run go test -update and review the diff)\n--- got ---\n%s--- want ---\n%s", path, got, want)
		}
	}
}

// TestEveryCommandParsesItsUsage: each command of the table reads its own
// examples back as itself, and each subcommand's text (SlashText, with
// its examples) too; every kind has one entry.
func TestEveryCommandParsesItsUsage(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range actions.ChatCommands() {
		if seen[c.Kind] {
			t.Errorf("two entries of kind %s", c.Kind)
		}
		seen[c.Kind] = true
		for _, u := range c.Usage {
			if got, ok := actions.ParseCommand(u); !ok || got.Kind != c.Kind {
				t.Errorf("%q parses as %+v (ok %v), want kind %s", u, got, ok, c.Kind)
			}
		}
		if c.Slash == nil {
			continue
		}
		values := map[string]string{}
		for _, o := range c.Slash.Options {
			values[o.Name] = o.Example
		}
		text := c.Slash.SlashText(values)
		if got, ok := actions.ParseCommand(text); !ok || got.Kind != c.Kind {
			t.Errorf("/task %s → %q parses as %+v (ok %v), want kind %s", c.Slash.Name, text, got, ok, c.Kind)
		}
		if got, ok := actions.SlashCommand(c.Slash.Name); !ok || got.Kind != c.Kind {
			t.Errorf("SlashCommand(%q) = %s, %v", c.Slash.Name, got.Kind, ok)
		}
	}
	if want := "create <goal> | list | status <n> | pause <n> | resume <n> | cancel <n> | search <words> | answer <n> <text> | retry <n> [context] | schedule <when> task <goal> | schedules | approve <n> | deny <n> [reason] | forget me | help"; actions.SlackUsageHint() != want {
		t.Errorf("SlackUsageHint = %q, want %q", actions.SlackUsageHint(), want)
	}
	if !strings.Contains(actions.SlackUsageHint(), "retry") {
		t.Error("no retry in the hint")
	}
}

// TestHelpNamesEveryCommand: every command of the table is in the help —
// a person who reads `help` learns every command they may type, the
// decisions (approve, deny) included, which only a person can make.
func TestHelpNamesEveryCommand(t *testing.T) {
	help := actions.HelpText(render.Plain, nil)
	for _, c := range actions.ChatCommands() {
		if !strings.Contains(help, c.Usage[0]) {
			t.Errorf("the help does not name %s (%q):\n%s", c.Kind, c.Usage[0], help)
		}
	}
}
