package slack_test

import (
	"os"
	"testing"

	slackapi "github.com/slack-go/slack"
	"go.yaml.in/yaml/v3"

	"github.com/taskloom/taskloom/actions"
)

// TestManifestHintIsTheTable: the usage hint of /task in the app manifest
// is the one actions' table of chat commands makes, so a command added
// there shows in Slack's hint once the manifest is updated, and a
// manifest left behind fails here.
func TestManifestHintIsTheTable(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../deploy/slack-app-manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var m slackapi.Manifest
	if err := yaml.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Features.SlashCommands) != 1 {
		t.Fatalf("slash commands = %+v", m.Features.SlashCommands)
	}
	if got, want := m.Features.SlashCommands[0].UsageHint, actions.SlackUsageHint(); got != want {
		t.Errorf("the manifest's usage_hint is %q; the table of commands makes %q", got, want)
	}
}
