package slack_test

import (
	"context"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/internal/app"
	"github.com/taskloom/taskloom/internal/testkit/slackfake"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
)

// anyAnswer answers a chat message's action choice: a reply.
const anyAnswer = `{"action": "", "params": {}, "reply": "Noted.", "thought": "done", "progress": 100, "status": "completed", "summary": "Done."}`

// promptWith is the prompt of the model's first request that contains
// marker.
func (e *env) promptWith(marker string) string {
	e.t.Helper()
	for _, r := range e.model.Requests() {
		var p strings.Builder
		for _, m := range r.Messages {
			p.WriteString(m.Content + "\n")
		}
		if strings.Contains(p.String(), marker) {
			return p.String()
		}
	}
	e.t.Fatalf("no request to the model contains %q", marker)
	return ""
}

// recalled is the Relevant memory section of a prompt, "" if none.
func recalled(prompt string) string {
	if at := strings.Index(prompt, plugin.MemoryHeading); at >= 0 {
		return prompt[at:]
	}
	return ""
}

// TestEachConversationIsItsOwnScope: what is said in a private channel or
// a group DM (mpim) is not recalled in a public channel, where people who
// cannot read them would see it; a thread shares its conversation's
// scope, a public channel's as a private channel's, since everyone who
// reads the conversation reads its threads.
func TestEachConversationIsItsOwnScope(t *testing.T) {
	t.Parallel()
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		t.Parallel()
		e := newEnvCore(t, httpMode, nil, nil, func(co *app.CoreOptions) { co.Store = open(t) })
		e.model.Default(func(context.Context, plugin.ModelRequest) (plugin.ModelResponse, error) {
			return plugin.ModelResponse{Text: anyAnswer, Model: "scripted"}, nil
		})
		// Private channels' IDs begin with C, or G for older ones, as group
		// DMs' do.
		const private, mpim = "C0PRIVATE", "G0MPIM"
		answers := map[string]int{} // by thread
		say := func(ev slackfake.Event) slackfake.Event {
			t.Helper()
			e.deliver(ev)
			thread := ev.ThreadTS
			if thread == "" {
				thread = ev.TS
			}
			answers[thread]++
			e.waitMessages(answers[thread], both(inThread(ev.Channel, thread), saying("Noted.")))
			return ev
		}

		secret := say(e.fake.AppMention(private, alice, "the acquisition target is ZEPHYRCORP-77, keep it quiet"))
		say(e.fake.AppMention(mpim, bob, "the offsite is at LIGHTHOUSE-3 in May"))
		staging := say(e.fake.AppMention("C1", bob, "the staging database is ORCA-7 in Frankfurt"))
		say(e.fake.AppMention("C1", alice, "and its replica is ORCA-8 in Dublin").InThread(staging.TS))

		say(e.fake.AppMention("C1", carol, "what are the acquisition target, the offsite, the staging database and its replica?"))
		prompt := e.promptWith("what are the acquisition target, the offsite")
		memory := recalled(prompt)
		if !strings.Contains(memory, "ORCA-7") || !strings.Contains(memory, "ORCA-8") ||
			strings.Contains(prompt, "ZEPHYRCORP") || strings.Contains(prompt, "LIGHTHOUSE") {
			t.Errorf("in the public channel, the prompt:\n%s\nwant the channel's and its thread's words recalled, not the private channel's nor the group DM's", prompt)
		}

		// In the private channel, another thread recalls the first's words.
		say(e.fake.AppMention(private, alice, "which acquisition target was it?"))
		if memory := recalled(e.promptWith("which acquisition target was it?")); !strings.Contains(memory, "ZEPHYRCORP-77") {
			t.Errorf("in the private channel, the bot recalled:\n%s\nwant the words of its thread %s", memory, secret.TS)
		}
		// In the group DM, only the group DM's.
		say(e.fake.AppMention(mpim, alice, "where is the offsite, and the acquisition target?"))
		if p := e.promptWith("where is the offsite, and the acquisition target?"); !strings.Contains(recalled(p), "LIGHTHOUSE-3") || strings.Contains(p, "ZEPHYRCORP") {
			t.Errorf("in the group DM, the prompt:\n%s\nwant its own words recalled, not the private channel's", p)
		}
	})
}
