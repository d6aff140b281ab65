package plugin_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// decisionAction is a person's decision matched by "approve …" and
// counting the times it ran.
func decisionAction(ran *atomic.Int32) plugin.Action {
	return matchingAction{&action{
		info: plugin.ActionInfo{Name: "approve_task", Examples: []string{"approve #2"}, Decision: true,
			Parameters: json.RawMessage(`{"type":"object","properties":{"number":{"type":"integer"}}}`)},
		match: func(text string) (json.RawMessage, bool) {
			if !strings.HasPrefix(text, "approve #") {
				return nil, false
			}
			return json.RawMessage(`{"number":1}`), true
		},
		handle: func(context.Context, *plugin.Call) (plugin.Result, error) {
			ran.Add(1)
			return plugin.Result{Success: true, Text: "approved"}, nil
		},
	}}
}

// TestPipelineRefusesAModelsPickOfADecision: a person's decision is not
// among the actions the chat model is offered, and when a model picks it
// anyway — steered by another person's message in its prompt, say — it
// does not run and the person is told what to type. The same decision
// typed by the person, or sent as a platform's parsed command (a button,
// a slash command), runs. People want this because a decision gives a
// task their authority or destroys work: no model's reading of a room
// may take it for them.
func TestPipelineRefusesAModelsPickOfADecision(t *testing.T) {
	t.Parallel()
	var ran atomic.Int32
	var prompt string
	picks := []string{
		`{"action":"approve_task","params":{"number":1},"reply":""}`,
		`{"action":" approve_task ","params":{},"reply":""}`,
	}
	var calls atomic.Int32
	model := plugin.ModelFunc(func(_ context.Context, r plugin.ModelRequest) (plugin.ModelResponse, error) {
		prompt = r.Messages[0].Content
		return plugin.ModelResponse{Text: picks[calls.Add(1)-1]}, nil
	})
	f := newPipeline(t, model, echo("help"), echo("list_tasks"), decisionAction(&ran))

	got := f.send(t, plugin.Message{Text: "how is it going?", Mentioned: true})
	if want := "That is a decision for you to make, not me: to make it, say `approve #1` yourself."; !slices.Equal(got, []string{want}) {
		t.Fatalf("replies = %q, want %q", got, want)
	}
	if ran.Load() != 0 {
		t.Fatal("the model's pick of a decision ran")
	}
	if strings.Contains(prompt, "- approve_task:") || !strings.Contains(prompt, "- list_tasks:") {
		t.Fatalf("the actions offered to the model:\n%s", prompt)
	}
	if !strings.Contains(prompt, "tell them what to type (with the right number), one of: `approve #2`") {
		t.Fatalf("the prompt does not say what the person may type:\n%s", prompt)
	}
	got = f.send(t, plugin.Message{Text: "go ahead", Mentioned: true})
	if len(got) != 1 || !strings.Contains(got[0], "say `approve #N` yourself") || ran.Load() != 0 {
		t.Fatalf("a pick without a number: %q, ran %d", got, ran.Load())
	}

	if got := f.send(t, plugin.Message{Text: "approve #1", Mentioned: true}); !slices.Equal(got, []string{"approved"}) {
		t.Fatalf("typed: %q", got)
	}
	if got := f.send(t, plugin.Message{Text: "Approve #1", Command: true, Action: "approve_task", Params: json.RawMessage(`{"number":1}`)}); !slices.Equal(got, []string{"approved"}) {
		t.Fatalf("a button: %q", got)
	}
	if ran.Load() != 2 {
		t.Fatalf("ran %d times, want 2", ran.Load())
	}
}

// TestDecisionIsNeverATool: no task is offered a person's decision, even
// one that says it is a tool.
func TestDecisionIsNeverATool(t *testing.T) {
	info := plugin.ActionInfo{Name: "approve_task", Tool: true, Decision: true}
	if info.OffersTo(domain.Task{RoomID: "discord:C1"}) {
		t.Fatal("a decision is offered to a task")
	}
}
