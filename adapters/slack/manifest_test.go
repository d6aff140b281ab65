package slack_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	slackapi "github.com/slack-go/slack"
	"go.yaml.in/yaml/v3"
)

// TestManifestDeclaresWhatTheAdapterUses: the app manifest in deploy/
// subscribes to exactly the events the adapter handles, asks for exactly
// the scopes its calls need, and turns on the Home tab, the assistant
// container and interactivity (buttons and the modal's submission).
func TestManifestDeclaresWhatTheAdapterUses(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../deploy/slack-app-manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var m slackapi.Manifest
	if err := yaml.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	events := slices.Sorted(slices.Values(m.Settings.EventSubscriptions.BotEvents))
	if want := []string{"app_home_opened", "app_mention", "assistant_thread_started", "message.channels", "message.groups", "message.im"}; !slices.Equal(events, want) {
		t.Errorf("bot events = %v, want %v", events, want)
	}
	scopes := slices.Sorted(slices.Values(m.OAuthConfig.Scopes.Bot))
	want := []string{
		"app_mentions:read", // app_mention
		"assistant:write",   // assistant.threads.setSuggestedPrompts, setStatus
		"channels:history",  // message.channels; conversations.history/replies
		"chat:write",        // chat.postMessage, chat.postEphemeral
		"chat:write.public", // /task tasks in public channels the bot is not in
		"commands",          // /task
		"groups:history",    // message.groups; conversations.history/replies
		"im:history",        // message.im
		"im:read",
		"im:write",   // conversations.open
		"users:read", // users.info
	}
	if !slices.Equal(scopes, want) {
		t.Errorf("bot scopes = %v, want %v", scopes, want)
	}
	if !m.Features.AppHome.HomeTabEnabled || !m.Features.AppHome.MessagesTabEnabled {
		t.Errorf("app home = %+v; want the Home and Messages tabs", m.Features.AppHome)
	}
	if m.Features.AssistantView == nil || strings.TrimSpace(m.Features.AssistantView.AssistantDescription) == "" {
		t.Error("no assistant_view: the app would get no assistant threads")
	}
	if !m.Settings.Interactivity.IsEnabled {
		t.Error("interactivity is off: no buttons, no modal submissions")
	}
	if len(m.Features.SlashCommands) != 1 || m.Features.SlashCommands[0].Command != "/task" {
		t.Errorf("slash commands = %+v", m.Features.SlashCommands)
	}
}
