package actions

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/taskloom/taskloom/plugin"
)

// ForgetMe deletes what the author said and what is known about them:
// `forget me` (docs/memory.md). Every message they wrote and every fact
// about them goes, in every room of the platform — the message saying
// `forget me` too, which the pipeline stored before the command ran. It is
// a person's decision (plugin.ActionInfo.Decision).
type ForgetMe struct{}

var (
	_ plugin.Action         = ForgetMe{}
	_ plugin.CommandMatcher = ForgetMe{}
)

func (ForgetMe) Info() plugin.ActionInfo {
	return plugin.ActionInfo{
		Name:        "forget_me",
		Description: "Delete every message the author wrote and every fact about them, in every room. Only the words `forget me` run it.",
		Examples:    []string{"forget me"},
		Parameters:  schema(`{"type":"object","additionalProperties":false,"properties":{}}`),
		// Deleting is not a guess for a model to make: only the words
		// `forget me` run it (the pipeline refuses a model's pick).
		Decision: true,
	}
}

func (ForgetMe) MatchCommand(msg *plugin.Message) (json.RawMessage, bool) {
	return match(msg, CmdForget)
}

func (ForgetMe) Handle(ctx context.Context, call *plugin.Call) (plugin.Result, error) {
	msg, refused := chatMessage(call)
	if refused != nil {
		return *refused, nil
	}
	if msg.AuthorID == "" || msg.Platform == "" {
		return plugin.Result{Error: "I cannot tell who you are here, so I have nothing to forget."}, nil
	}
	messages, facts, err := call.Runtime.Store().Forget(ctx, Person(msg))
	if err != nil {
		return plugin.Result{}, fmt.Errorf("forget %s: %w", Person(msg), err)
	}
	return plugin.Result{Success: true, Text: ForgottenSentence(messages, facts)}, nil
}

// Person names a message's author as memory does: "<platform>:<user id>".
func Person(msg *plugin.Message) string { return msg.Platform + ":" + msg.AuthorID }

// ForgottenSentence says in one sentence what forgetting someone deleted.
func ForgottenSentence(messages, facts int64) string {
	return fmt.Sprintf("Forgotten: I deleted %s you wrote (this one included) and %s about you, in every room.",
		count(messages, "message", "messages"), count(facts, "fact", "facts"))
}

func count(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
