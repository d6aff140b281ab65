package actions_test

import (
	"strings"
	"testing"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// TestForgetMe: `forget me` deletes every message its author wrote, in
// every room, the command itself included, and every fact about them,
// and says how many; other people's words and facts stay. (A model's pick
// of it is refused by the pipeline: plugin TestPipelineRefusesAModelsPickOfADecision,
// adapters/discord TestDecisionsAreAPersons.)
func TestForgetMe(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		k := newChat(t, open)
		k.say("ann", "help")
		k.say("ann", "list tasks", dm)
		k.say("bob", "help")
		said := map[string]int64{} // the first message of each person in C1
		mems, err := k.store.RecentMemories(k.ctx, "discord:C1", 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mems {
			if said[m.AuthorID] == 0 {
				said[m.AuthorID] = m.ID
			}
		}
		if _, err := k.store.SaveFacts(k.ctx, []domain.Fact{
			{Room: "discord:C1", About: "discord:ann", Text: "ann lives in Lyon", Sources: []int64{said["ann"]}},
			{Room: "discord:C1", About: "discord:bob", Text: "bob lives in Oslo", Sources: []int64{said["bob"]}},
		}); err != nil {
			t.Fatal(err)
		}
		got := k.say("ann", "forget me")
		if want := "Forgotten: I deleted 3 messages you wrote (this one included) and 1 fact about you, in every room."; got != want {
			t.Fatalf("reply %q, want %q", got, want)
		}
		for _, room := range []string{"discord:C1", "discord:DM-ann"} {
			mems, err := k.store.RecentMemories(k.ctx, room, 100)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range mems {
				if m.AuthorID == "ann" {
					t.Errorf("ann's %q survived in %s", m.Text, room)
				}
			}
		}
		recs, err := k.store.Recall(k.ctx, domain.RecallQuery{Room: "discord:C1", Text: "lives Lyon Oslo", Kinds: []string{domain.RecallFact}})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 || !strings.Contains(recs[0].Text, "bob") {
			t.Fatalf("facts left: %+v", recs)
		}
		// What she says afterwards is remembered, and a second `forget
		// me` deletes it: forgetting works the second time too.
		k.say("ann", "help")
		if got := k.say("ann", "forget me"); got != "Forgotten: I deleted 2 messages you wrote (this one included) and 0 facts about you, in every room." {
			t.Fatalf("second forget me: %q", got)
		}
	})
}
