package evaluators_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/demo"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/evaluators"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
)

type factsKit struct {
	t     *testing.T
	ctx   context.Context
	clk   *clock.Fake
	store domain.Store
	rt    *plugin.Runtime
	seq   int
}

func newFactsKit(t *testing.T, model plugin.Model) *factsKit {
	t.Helper()
	return newFactsKitOn(t, model, teststore.SQLite(t))
}

// newFactsKitOn is newFactsKit on store.
func newFactsKitOn(t *testing.T, model plugin.Model, store domain.Store) *factsKit {
	t.Helper()
	k := &factsKit{t: t, ctx: context.Background(), clk: clock.NewFake(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)), store: store}
	k.rt = plugin.New(plugin.Options{Store: k.store, Clock: k.clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	facts := &evaluators.Facts{Runtime: k.rt}
	if err := k.rt.Register(&plugin.Plugin{Name: "memory", Models: map[plugin.ModelType]plugin.Model{plugin.ModelText: model},
		Evaluators: []plugin.Evaluator{facts}, Services: []plugin.Service{facts}}); err != nil {
		t.Fatal(err)
	}
	if err := k.rt.Start(k.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.rt.Stop(context.Background()) })
	return k
}

// chatter stores a message nobody addressed to the bot, as the pipeline
// does with channel talk.
func (k *factsKit) chatter(room, author, text string) {
	k.t.Helper()
	k.seq++
	msg := plugin.Message{ID: fmt.Sprint(k.seq), Platform: "discord", Room: room, WorkspaceID: "G1", AuthorID: author, AuthorName: author, Text: text}
	if err := k.rt.HandleMessage(k.ctx, msg, func(context.Context, plugin.Response) error { return nil }); err != nil {
		k.t.Fatal(err)
	}
}

// waiting waits until the evaluator's loop waits on its timer.
func (k *factsKit) waiting() {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(k.ctx, 10*time.Second)
	defer cancel()
	if err := k.clk.BlockUntil(ctx, 1); err != nil {
		k.t.Fatal("the facts loop never waited on the clock")
	}
}

// eventually polls cond (the loop runs on its own goroutine) for a few
// seconds of real time.
func (k *factsKit) eventually(what string, cond func() bool) {
	k.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			k.t.Fatalf("never: %s", what)
		}
	}
}

func (k *factsKit) facts(room string) []domain.Recollection {
	k.t.Helper()
	recs, err := k.store.Recall(k.ctx, domain.RecallQuery{Room: room, Text: "staging database ORCA Frankfurt lives Berlin", Kinds: []string{domain.RecallFact}})
	if err != nil {
		k.t.Fatal(err)
	}
	return recs
}

// TestFactsAfterQuiet: with the demo model, the facts of a room's
// conversation are drawn once it has been quiet for a minute — not
// before — each with its room, its source message and the person it is
// about; a question is no fact.
func TestFactsAfterQuiet(t *testing.T) {
	model := demo.New(demo.Options{Think: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	k := newFactsKit(t, model)
	k.chatter("discord:C1", "ann", "The staging database is ORCA-7 in Frankfurt.")
	k.chatter("discord:C1", "bob", "I live in Berlin")
	k.chatter("discord:C1", "carl", "is it?")
	k.waiting()
	k.clk.Advance(59 * time.Second)
	k.waiting()
	if got := k.facts("discord:C1"); len(got) != 0 {
		t.Fatalf("facts before a quiet minute: %+v", got)
	}
	k.clk.Advance(time.Second)
	k.eventually("two facts", func() bool { return len(k.facts("discord:C1")) == 2 })
	var texts []string
	for _, f := range k.facts("discord:C1") {
		texts = append(texts, f.Text+" | "+f.Source)
	}
	slices.Sort(texts)
	want := []string{
		"The staging database is ORCA-7 in Frankfurt. | fact 1 about discord:ann (from messages 1)",
		"bob said: I live in Berlin. | fact 2 about discord:bob (from messages 2)",
	}
	if !slices.Equal(texts, want) {
		t.Fatalf("facts:\n%s\nwant\n%s", strings.Join(texts, "\n"), strings.Join(want, "\n"))
	}
	if got := k.facts("discord:C2"); len(got) != 0 {
		t.Fatalf("another room recalls %+v", got)
	}
}

// TestFactsEveryTenMessages: ten messages are read without waiting for
// quiet, in one request.
func TestFactsEveryTenMessages(t *testing.T) {
	model := testkit.NewScriptedModel()
	model.Default(func(context.Context, plugin.ModelRequest) (plugin.ModelResponse, error) {
		return plugin.ModelResponse{Text: `{"facts": []}`}, nil
	})
	k := newFactsKit(t, model)
	for i := range 10 {
		k.chatter("discord:C1", "ann", fmt.Sprintf("note %d is here", i))
	}
	k.eventually("a request for facts", func() bool { return len(model.Requests()) == 1 })
	var ask plugin.FactsAsk
	req := model.Requests()[0]
	if err := json.Unmarshal([]byte(req.Messages[1].Content), &ask); err != nil || len(ask.Messages) != 10 || req.Schema.Name != plugin.FactsSchemaName {
		t.Fatalf("ask %+v, %v", ask, err)
	}
}

// TestFactsSurviveAFailingModel: a model that is down, then answers
// garbage, then cites a message that is not in the conversation, costs
// no message — the next attempt, after a pause on the clock, reads them
// all again — and one that keeps failing is not asked forever.
func TestFactsSurviveAFailingModel(t *testing.T) {
	model := testkit.NewScriptedModel()
	model.Then(func(context.Context, plugin.ModelRequest) (plugin.ModelResponse, error) {
		return plugin.ModelResponse{}, errors.New("503 service unavailable")
	})
	model.Reply("I think the facts are: ORCA-7!")
	model.Reply(`{"facts": [{"text": "the staging database is ORCA-7", "about": "", "sources": [1]}, {"text": "made up", "about": "", "sources": [99]}]}`)
	k := newFactsKit(t, model)
	k.chatter("discord:C1", "ann", "the staging database is ORCA-7")
	k.waiting()
	k.clk.Advance(time.Minute) // down
	k.eventually("the first attempt", func() bool { return len(model.Requests()) == 1 })
	k.waiting()
	k.clk.Advance(time.Minute) // garbage
	k.eventually("the second attempt", func() bool { return len(model.Requests()) == 2 })
	k.waiting()
	k.clk.Advance(2 * time.Minute) // the pause doubles
	k.eventually("the fact", func() bool { return len(k.facts("discord:C1")) == 1 })
	if got := k.facts("discord:C1")[0]; got.Text != "the staging database is ORCA-7" {
		t.Fatalf("fact %+v", got)
	}
	// Now a model that always fails: three attempts, then the batch is
	// passed over and nothing is asked any more.
	model.Default(func(context.Context, plugin.ModelRequest) (plugin.ModelResponse, error) {
		return plugin.ModelResponse{}, errors.New("down for good")
	})
	k.chatter("discord:C1", "bob", "the prod database is ORCA-9")
	for i := range 3 {
		k.waiting()
		k.clk.Advance(time.Hour)
		k.eventually(fmt.Sprintf("attempt %d", i+1), func() bool { return len(model.Requests()) == 3+i+1 })
	}
	// Passed over, the room has nothing pending: the loop sets no timer.
	k.eventually("the loop idle", func() bool { return k.clk.Waiters() == 0 })
	k.clk.Advance(24 * time.Hour)
	if n := len(model.Requests()); n != 6 {
		t.Fatalf("%d requests; want the 3 then 3 attempts and no more", n)
	}
}

// TestFactsNeverReadForgottenWords: what `forget me` deleted before the
// room was read is not read.
func TestFactsNeverReadForgottenWords(t *testing.T) {
	model := testkit.NewScriptedModel()
	model.Default(func(context.Context, plugin.ModelRequest) (plugin.ModelResponse, error) {
		return plugin.ModelResponse{Text: `{"facts": []}`}, nil
	})
	k := newFactsKit(t, model)
	k.chatter("discord:C1", "ann", "my password hint is fluffy")
	k.chatter("discord:C1", "bob", "the build server is Jenkins")
	if _, _, err := k.store.Forget(k.ctx, "discord:ann"); err != nil {
		t.Fatal(err)
	}
	k.waiting()
	k.clk.Advance(time.Minute)
	k.eventually("a request", func() bool { return len(model.Requests()) == 1 })
	if got := model.Requests()[0].Messages[1].Content; strings.Contains(got, "fluffy") || !strings.Contains(got, "Jenkins") {
		t.Fatalf("the request read %s", got)
	}
}

// TestFactsNameTheirPerson: a fact is about the person the model names,
// by author ID or as memory names people; one the model names no one for
// is about whoever said it; a source cited twice is one source.
func TestFactsNameTheirPerson(t *testing.T) {
	model := testkit.NewScriptedModel()
	model.Reply(`{"facts": [
		{"text": "bob is on call on Fridays", "about": "discord:bob", "sources": [1, 1]},
		{"text": "ann owns the release", "about": "ann", "sources": [2]},
		{"text": "the release is on Monday", "about": "", "sources": [2]},
		{"text": "carl is new", "about": "carl", "sources": [1]}]}`)
	k := newFactsKit(t, model)
	k.chatter("discord:C1", "ann", "bob is on call on Fridays")
	k.chatter("discord:C1", "bob", "I own the release, on Monday")
	k.waiting()
	k.clk.Advance(time.Minute)
	got := map[string]string{}
	k.eventually("four facts", func() bool {
		recs, err := k.store.Recall(k.ctx, domain.RecallQuery{Room: "discord:C1", Text: "call release carl new", Kinds: []string{domain.RecallFact}})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			_, about, _ := strings.Cut(r.Source, " about ")
			about, _, _ = strings.Cut(about, " (")
			got[r.Text] = about
		}
		return len(recs) == 4
	})
	want := map[string]string{
		"bob is on call on Fridays": "discord:bob", "ann owns the release": "discord:ann",
		"the release is on Monday": "discord:bob", "carl is new": "discord:ann",
	}
	for text, about := range want {
		if got[text] != about {
			t.Errorf("%q is about %q, want %q", text, got[text], about)
		}
	}
}

// forgetBeforeSave is a store on which a `forget me` of person commits
// just before the facts evaluator saves what it drew: after it read the
// messages, after the model answered, after it read them again. The
// ordering is injected, not slept into.
type forgetBeforeSave struct {
	domain.Store
	person string
	forgot chan struct{}
}

func (s *forgetBeforeSave) SaveFacts(ctx context.Context, facts []domain.Fact) ([]domain.Fact, error) {
	if s.person != "" {
		if _, _, err := s.Store.Forget(ctx, s.person); err != nil {
			return nil, err
		}
		s.person = ""
		defer close(s.forgot)
	}
	return s.Store.SaveFacts(ctx, facts)
}

// TestFactsRacingForgetAreNotSaved: ann says `forget me` while the model
// draws facts from her words. Whoever wants to be forgotten wants it of
// what is being learnt from them that very moment too: no fact drawn from
// her words, nor any about her from words said before, is saved after.
func TestFactsRacingForgetAreNotSaved(t *testing.T) {
	model := testkit.NewScriptedModel()
	model.Reply(`{"facts": [
		{"text": "ann's locker code is CORMORANT-77", "about": "ann", "sources": [1]},
		{"text": "bob keeps the CORMORANT-77 locker key", "about": "bob", "sources": [1]},
		{"text": "ann runs the CORMORANT release", "about": "ann", "sources": [2]},
		{"text": "the CORMORANT build server runs Debian", "about": "bob", "sources": [2]}]}`)
	store := &forgetBeforeSave{Store: teststore.SQLite(t), person: "discord:ann", forgot: make(chan struct{})}
	k := newFactsKitOn(t, model, store)

	k.chatter("discord:C1", "ann", "my locker code is CORMORANT-77")
	k.chatter("discord:C1", "bob", "ann runs the release; the build server runs Debian")
	k.waiting()
	k.clk.Advance(time.Minute)
	select {
	case <-store.forgot:
	case <-time.After(10 * time.Second):
		t.Fatal("the facts were never saved")
	}
	k.eventually("bob's fact", func() bool {
		recs, err := k.store.Recall(k.ctx, domain.RecallQuery{Room: "discord:C1", Text: "CORMORANT locker ann Debian", Kinds: []string{domain.RecallFact}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range recs {
			got = append(got, r.Text)
		}
		for _, text := range got {
			if strings.Contains(text, "77") || strings.Contains(text, "ann") {
				t.Fatalf("saved after ann was forgotten: %q", got)
			}
		}
		return slices.Equal(got, []string{"the CORMORANT build server runs Debian"})
	})
}
