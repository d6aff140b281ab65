package plugin_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/taskloom/taskloom/plugin"
)

// A message the platform already parsed runs the action it names with its
// parameters, whatever its text says; an action nobody registered falls
// back to reading the text.
func TestPipelineRunsAParsedCommandAsGiven(t *testing.T) {
	t.Parallel()
	f := newPipeline(t, nil, prefixed("create_task", "create task", func(_ context.Context, c *plugin.Call) (plugin.Result, error) {
		return plugin.Result{Success: true, Text: string(c.Params)}, nil
	}))
	got := f.send(t, plugin.Message{ID: "m1", Platform: "discord", Room: "discord:C1", Command: true,
		Text: "create task goal: Build auth", Action: "create_task", Params: json.RawMessage(`{"goal":"Build auth","strategy":"react"}`)})
	if !slices.Equal(got, []string{`{"goal":"Build auth","strategy":"react"}`}) {
		t.Errorf("replies = %q", got)
	}
	got = f.send(t, plugin.Message{ID: "m2", Platform: "discord", Room: "discord:C1", Command: true,
		Text: "create task Build auth", Action: "no_such_action", Params: json.RawMessage(`{}`)})
	if !slices.Equal(got, []string{`{"arg":"Build auth"}`}) {
		t.Errorf("replies = %q", got)
	}
}
