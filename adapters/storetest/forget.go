package storetest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// The cases of forgetting for good (docs/memory.md, "Forgetting"): what a
// person asked to be forgotten leaves no copy — not in the bot's replies
// to them or quoting them, not in the facts drawn from their words, not in a fact being
// drawn while they were forgotten, not in their platform's retry.

// reply stores the bot's reply to m, as the pipeline does.
func reply(t *testing.T, s domain.Store, m domain.Memory, text string) (domain.Memory, bool) {
	t.Helper()
	r, stored, err := s.SaveMemory(t.Context(), domain.Memory{Platform: m.Platform, Room: m.Room,
		AuthorID: "bot", AuthorName: "Taskloom", Text: text, FromBot: true, InReplyTo: m.ID, CreatedAt: m.CreatedAt})
	if err != nil {
		t.Fatal(err)
	}
	return r, stored
}

// storedTexts are the texts of every stored message and of every fact
// recalled for query in room: what a prompt could be shown.
func storedTexts(t *testing.T, s domain.Store, room, query string) []string {
	t.Helper()
	var out []string
	mems, err := s.SearchMemories(t.Context(), domain.MemoryFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mems {
		out = append(out, m.Text)
	}
	for _, r := range recall(t, s, domain.RecallQuery{Text: query, Room: room, Kinds: []string{domain.RecallFact}, Limit: 100}) {
		out = append(out, "fact: "+r.Text)
	}
	return out
}

func holding(texts []string, word string) []string {
	return slices.DeleteFunc(slices.Clone(texts), func(s string) bool { return !strings.Contains(s, word) })
}

// testForgetLeavesNoCopy: after Forget, no message, reply quoting them or
// fact of theirs is stored or recalled; a retry of their message and a
// fact extraction that raced the Forget store nothing; what they say
// after is remembered, and a second Forget deletes that too.
func testForgetLeavesNoCopy(t *testing.T, s domain.Store) {
	secret := say(t, s, "discord:1", "discord:alice", "my locker code is CORMORANT-77")
	quote, _ := reply(t, s, secret, "You said: my locker code is CORMORANT-77. Noted!")
	dm := say(t, s, "discord:dm-alice", "discord:alice", "the vault phrase is CORMORANT-dawn")
	reply(t, s, dm, "I will keep CORMORANT-dawn to myself.")
	bobs := say(t, s, "discord:1", "discord:bob", "the CORMORANT build server runs Debian")
	bobReply, _ := reply(t, s, bobs, "Thanks bob, CORMORANT runs Debian then.")
	// The bot's answer to bob that quotes her words: hers.
	quoted, _ := reply(t, s, bobs, "Bob, alice told me her locker code is CORMORANT-77.")
	// Three of her words in a row are no quote.
	reply(t, s, bobs, "The locker code policy is in the CORMORANT handbook.")
	learn(t, s,
		// About bob, drawn from alice's words: hers.
		domain.Fact{Room: "discord:1", About: "discord:bob", Text: "bob's locker code is CORMORANT-77", Sources: []int64{secret.ID}},
		// About no one, drawn from the bot's reply quoting her: hers.
		domain.Fact{Room: "discord:1", Text: "a locker code is CORMORANT-77", Sources: []int64{quote.ID}},
		// Drawn from her words and bob's: hers too.
		domain.Fact{Room: "discord:1", About: "discord:bob", Text: "the CORMORANT lockers run Debian", Sources: []int64{secret.ID, bobs.ID}},
		// About her, drawn from bob's words.
		domain.Fact{Room: "discord:1", About: "discord:alice", Text: "alice uses the CORMORANT server", Sources: []int64{bobs.ID}},
		// Bob's own.
		domain.Fact{Room: "discord:1", About: "discord:bob", Text: "the CORMORANT build server runs Debian", Sources: []int64{bobs.ID}},
		domain.Fact{Room: "discord:1", About: "discord:bob", Text: "CORMORANT is on Debian", Sources: []int64{bobReply.ID}},
		// Drawn from the bot's quote of her: hers.
		domain.Fact{Room: "discord:1", About: "discord:bob", Text: "bob knows the CORMORANT-77 code", Sources: []int64{quoted.ID}})

	msgs, facts, err := s.Forget(t.Context(), "discord:alice")
	if err != nil || msgs != 2 || facts != 5 {
		t.Fatalf("Forget = %d messages, %d facts, %v; want 2 (hers), 5 (about her or drawn from her words)", msgs, facts, err)
	}
	got := storedTexts(t, s, "discord:1", "CORMORANT locker Debian")
	if left := holding(got, "77"); len(left) > 0 {
		t.Errorf("after Forget, still stored: %q", left)
	}
	if left := holding(got, "dawn"); len(left) > 0 {
		t.Errorf("after Forget, her DM is still quoted: %q", left)
	}
	want := []string{"the CORMORANT build server runs Debian", "Thanks bob, CORMORANT runs Debian then.",
		"The locker code policy is in the CORMORANT handbook.",
		"fact: the CORMORANT build server runs Debian", "fact: CORMORANT is on Debian"}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("after Forget, bob's %q is gone; stored: %q", w, got)
		}
	}

	// The platform retries her message, after the forget: not stored again.
	retry := domain.Memory{Platform: "discord", MessageID: secret.MessageID, Room: secret.Room,
		AuthorID: "alice", AuthorName: secret.AuthorName, Text: secret.Text, CreatedAt: secret.CreatedAt}
	if m, isNew, err := s.SaveMemory(t.Context(), retry); err != nil || isNew || m.ID != 0 {
		t.Errorf("a retry of a forgotten message: SaveMemory = %+v, new=%v, %v; want nothing stored", m, isNew, err)
	}
	// The bot's reply to it, finished after the forget: not stored.
	if r, isNew := reply(t, s, secret, "You said: my locker code is CORMORANT-77"); isNew || r.ID != 0 {
		t.Errorf("a reply to a forgotten message was stored: %+v", r)
	}
	// A fact extraction that read her words before the forget saves
	// after it: nothing of hers is stored — neither what her words say,
	// nor what bob's earlier words say about her.
	saved := learn(t, s,
		domain.Fact{Room: "discord:1", About: "discord:bob", Text: "bob keeps CORMORANT-77 in a locker", Sources: []int64{secret.ID}},
		domain.Fact{Room: "discord:1", About: "discord:alice", Text: "alice is on the CORMORANT team", Sources: []int64{bobs.ID}},
		domain.Fact{Room: "discord:1", About: "discord:alice", Text: "alice is a CORMORANT admin"},
		domain.Fact{Room: "discord:1", About: "discord:bob", Text: "bob runs the CORMORANT server", Sources: []int64{bobs.ID}})
	if len(saved) != 1 || saved[0].Text != "bob runs the CORMORANT server" {
		t.Errorf("facts saved after the forget from what was read before it: %+v; want only bob's", saved)
	}
	if left := holding(storedTexts(t, s, "discord:1", "CORMORANT locker team admin"), "alice"); len(left) > 0 {
		t.Errorf("after Forget, facts about her: %q", left)
	}
	if mems := got; len(holding(mems, "alice")) > 0 {
		t.Errorf("after Forget: %q", holding(mems, "alice"))
	}

	// What she says after is remembered — facts drawn from it too — and a
	// second forget takes it.
	again := say(t, s, "discord:1", "discord:alice", "my new locker code is PELICAN-12")
	if again.ID == 0 {
		t.Fatal("what she said after the forget was not stored")
	}
	if _, ok := reply(t, s, again, "You said: my new locker code is PELICAN-12"); !ok {
		t.Error("the reply to what she said after the forget was not stored")
	}
	if saved := learn(t, s, domain.Fact{Room: "discord:1", About: "discord:alice", Text: "alice's locker code is PELICAN-12",
		Sources: []int64{again.ID}}); len(saved) != 1 {
		t.Errorf("a fact of what she said after the forget: saved %+v", saved)
	}
	if len(holding(storedTexts(t, s, "discord:1", "PELICAN locker"), "PELICAN")) != 3 {
		t.Errorf("stored: %q; want her message, its reply and its fact", storedTexts(t, s, "discord:1", "PELICAN locker"))
	}
	msgs, facts, err = s.Forget(t.Context(), "discord:alice")
	if err != nil || msgs != 1 || facts != 1 {
		t.Fatalf("second Forget = %d messages, %d facts, %v; want 1, 1", msgs, facts, err)
	}
	if left := holding(storedTexts(t, s, "discord:1", "PELICAN locker"), "PELICAN"); len(left) > 0 {
		t.Errorf("after the second Forget, still stored: %q", left)
	}
	retry.MessageID, retry.Text = again.MessageID, again.Text
	if _, isNew, err := s.SaveMemory(t.Context(), retry); err != nil || isNew {
		t.Errorf("a retry after the second forget: new=%v, %v; want nothing stored", isNew, err)
	}
}

// testForgetRacingFacts: facts saved while a Forget of the person they
// are about, or drawn from, runs concurrently are never left behind: each
// is saved before the Forget (and deleted by it) or refused after it.
func testForgetRacingFacts(t *testing.T, s domain.Store) {
	for round := range 5 {
		person := fmt.Sprintf("discord:racer%d", round)
		_, id, _ := strings.Cut(person, ":")
		var said []int64
		for i := range 5 {
			said = append(said, say(t, s, "discord:race", person, fmt.Sprintf("racer %d note %d about GANNET", round, i)).ID)
		}
		other := say(t, s, "discord:race", "discord:bystander", "the GANNET build is green").ID
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := range 4 {
			wg.Go(func() {
				<-start
				for i := range 10 {
					// Half the writers save facts about the person, the
					// others facts about someone else drawn from the
					// person's words: two guards, each tried alone.
					f := domain.Fact{Room: "discord:race", About: person, Text: fmt.Sprintf("GANNET %s fact %d.%d", id, w, i), Sources: []int64{other}}
					if w%2 == 1 {
						f = domain.Fact{Room: "discord:race", About: "discord:bystander", Text: fmt.Sprintf("GANNET drawn %d.%d.%d", round, w, i),
							Sources: []int64{said[i%len(said)]}, CreatedAt: at(time.Hour)}
					}
					_, err := s.SaveFacts(t.Context(), []domain.Fact{f})
					if err != nil {
						t.Errorf("SaveFacts racing Forget: %v", err)
						return
					}
				}
			})
		}
		wg.Go(func() {
			<-start
			if _, _, err := s.Forget(t.Context(), person); err != nil {
				t.Errorf("Forget: %v", err)
			}
		})
		close(start)
		wg.Wait()
		for _, r := range recall(t, s, domain.RecallQuery{Text: "GANNET fact drawn " + id, Room: "discord:race", Kinds: []string{domain.RecallFact}, Limit: 100}) {
			if strings.Contains(r.Text, id) || strings.Contains(r.Text, fmt.Sprintf("drawn %d.", round)) {
				t.Fatalf("round %d: a fact of a forgotten person left after the race: %q (%s)", round, r.Text, r.Source)
			}
		}
	}
}
