package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/taskloom/taskloom/domain"
)

// The cases of domain.MemoryStore (docs/memory.md).

var messageIDs atomic.Int64

// say stores a message person ("<platform>:<id>") wrote in room.
func say(t *testing.T, s domain.Store, room, person, text string) domain.Memory {
	t.Helper()
	platform, id, _ := strings.Cut(person, ":")
	m, _, err := s.SaveMemory(t.Context(), domain.Memory{Platform: platform,
		MessageID: fmt.Sprint("m", messageIDs.Add(1)), Room: room, AuthorID: id, AuthorName: "name of " + id,
		Text: text, CreatedAt: at(time.Duration(messageIDs.Load()) * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func learn(t *testing.T, s domain.Store, facts ...domain.Fact) []domain.Fact {
	t.Helper()
	for i := range facts {
		if facts[i].CreatedAt.IsZero() {
			facts[i].CreatedAt = at(time.Hour)
		}
	}
	out, err := s.SaveFacts(t.Context(), facts)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func addDoc(t *testing.T, s domain.Store, title, room, text string) domain.Document {
	t.Helper()
	d, err := s.AddDocument(t.Context(), domain.Document{Title: title, Room: room, CreatedAt: at(time.Minute)}, text)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func recall(t *testing.T, s domain.Store, q domain.RecallQuery) []domain.Recollection {
	t.Helper()
	got, err := s.Recall(t.Context(), q)
	if err != nil {
		t.Fatalf("Recall(%+v): %v", q, err)
	}
	return got
}

// texts lists what the recollections say, in order.
func texts(rs []domain.Recollection) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Text
	}
	return out
}

// testRecallAnyWord: a query's words are OR-ed, and what has more of them
// (and rarer ones) ranks higher, in each kind.
func testRecallAnyWord(t *testing.T, s domain.Store) {
	room := "discord:c1"
	addDoc(t, s, "Kyoto", "", "The tea garden in Kyoto opens at dawn.")
	addDoc(t, s, "office", "", "Our office garden has a bench.")
	addDoc(t, s, "parking", "", "Parking is behind the station.")
	learn(t, s,
		domain.Fact{Room: room, About: "discord:u1", Text: "Ada grows tea in her Kyoto garden"},
		domain.Fact{Room: room, About: "discord:u2", Text: "Bob waters the garden on Mondays"},
		domain.Fact{Room: room, About: "discord:u3", Text: "Cy drives to work"})
	say(t, s, room, "discord:u1", "I visited a tea garden in Kyoto last spring")
	say(t, s, room, "discord:u2", "the garden needs weeding")
	say(t, s, room, "discord:u3", "lunch at noon?")

	for _, kind := range []string{domain.RecallPassage, domain.RecallFact, domain.RecallMessage} {
		t.Run(kind, func(t *testing.T) {
			got := recall(t, s, domain.RecallQuery{Text: "Kyoto tea garden opening hours", Room: room, Kinds: []string{kind}})
			if len(got) != 2 {
				t.Fatalf("recalled %q; want the two that have any of the words", texts(got))
			}
			if !strings.Contains(got[0].Text, "Kyoto") || strings.Contains(got[1].Text, "Kyoto") || got[0].Rank <= got[1].Rank {
				t.Errorf("recalled %q (ranks %v, %v); want the one with most words first", texts(got), got[0].Rank, got[1].Rank)
			}
			for _, r := range got {
				if r.Kind != kind || r.ID == 0 || r.Source == "" {
					t.Errorf("recollection %+v: want kind %s, an ID and a source", r, kind)
				}
			}
		})
	}
	// All kinds together, ranked, cut at the limit.
	got := recall(t, s, domain.RecallQuery{Text: "Kyoto tea garden", Room: room, Limit: 4})
	if len(got) != 4 {
		t.Fatalf("recalled %d; want the limit of 4", len(got))
	}
	for i := 1; i < len(got); i++ {
		if got[i].Rank > got[i-1].Rank {
			t.Errorf("recollections not best first: %v then %v", got[i-1].Rank, got[i].Rank)
		}
	}
	// Stemming: "gardens" finds "garden".
	if got := recall(t, s, domain.RecallQuery{Text: "gardens", Room: room, Kinds: []string{domain.RecallFact}}); len(got) != 2 {
		t.Errorf("gardens recalled %q; want the two garden facts", texts(got))
	}
}

// testRecallStopWords: words too common to tell texts apart are not
// searched: they would match nearly everything.
func testRecallStopWords(t *testing.T, s domain.Store) {
	room := "slack:C1"
	addDoc(t, s, "filler", room, "It is what it is, and that was all there was to it.")
	addDoc(t, s, "policy", room, "Tea policy: tea is free for everyone.")
	got := recall(t, s, domain.RecallQuery{Text: "what is the tea policy?", Room: room})
	if len(got) != 1 || !strings.HasPrefix(got[0].Text, "Tea policy") {
		t.Errorf("recalled %q; want only the tea policy", texts(got))
	}
	if got := recall(t, s, domain.RecallQuery{Text: "what is it that was there?", Room: room}); len(got) != 0 {
		t.Errorf("a query of stop words recalled %q; want nothing", texts(got))
	}
}

// testRecallCraftedQuery: query syntax in a user's text is read as words:
// no error, and the same recollections as its plain words.
func testRecallCraftedQuery(t *testing.T, s domain.Store) {
	room := "discord:c1"
	addDoc(t, s, "near", "", "The tea garden is near the station.\n\nText: columns and filters.")
	say(t, s, room, "discord:u1", "tea or coffee")
	queries := map[string]string{
		`"tea`:                        "tea",
		`tea"garden`:                  "tea garden",
		`tea*`:                        "tea",
		`NEAR(tea garden, 2)`:         "near tea garden 2",
		`NEAR/3 tea`:                  "near 3 tea",
		`-tea`:                        "tea",
		`text:tea`:                    "text tea",
		`{text} : garden`:             "text garden",
		`(tea OR) AND NOT (garden`:    "tea garden",
		`^tea + garden`:               "tea garden",
		`tea & !garden | station <->`: "tea garden station",
		`'tea':* & 'garden'`:          "tea garden",
		`"`:                           "",
		`*`:                           "",
		`)(`:                          "",
		`AND OR NOT`:                  "",
		`\x00tea`:                     "x00tea",
		"tea\x00garden":               "tea garden",
		"\xfftea\xfe garden":          "tea garden",
	}
	before, err := s.Documents(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	for crafted, plain := range queries {
		t.Run(crafted, func(t *testing.T) {
			got, err := s.Recall(t.Context(), domain.RecallQuery{Text: crafted, Room: room})
			if err != nil {
				t.Fatalf("Recall(%q): %v", crafted, err)
			}
			want := recall(t, s, domain.RecallQuery{Text: plain, Room: room})
			if !slices.Equal(texts(got), texts(want)) {
				t.Errorf("Recall(%q) = %q; want what %q recalls, %q", crafted, texts(got), plain, texts(want))
			}
			if _, err := s.SearchMemories(t.Context(), domain.MemoryFilter{Query: crafted}); err != nil {
				t.Errorf("SearchMemories(%q): %v", crafted, err)
			}
		})
	}
	after, err := s.Documents(t.Context(), "")
	if err != nil || len(after) != len(before) {
		t.Errorf("documents after the crafted queries: %d, %v; want %d", len(after), err, len(before))
	}
}

// testRecallScopes: a DM's messages and facts are recalled in that DM only,
// a channel's in the channel and its threads only; knowledge of no room
// everywhere, of a room in its scope.
func testRecallScopes(t *testing.T, s domain.Store) {
	rooms := map[string]string{
		"dchannel": "discord:100",
		"dthread":  "discord:100:200",
		"dother":   "discord:101",
		"ddm":      "discord:300", // a DM channel
		"schannel": "slack:C100",
		"sthread":  "slack:C100:1700000000.000100",
		"sdm":      "slack:D100",
		"sdmthrd":  "slack:D100:1700000000.000200",
		"sother":   "slack:C100X",
	}
	for name, room := range rooms {
		say(t, s, room, "discord:u1", "secret zebra "+name)
		learn(t, s, domain.Fact{Room: room, Text: "zebra fact " + name})
	}
	addDoc(t, s, "everyone", "", "zebra handbook for everyone")
	addDoc(t, s, "slack channel", rooms["schannel"], "zebra handbook of the slack channel")

	// sees: the rooms whose messages and facts each room recalls.
	sees := map[string][]string{
		"dchannel": {"dchannel", "dthread"},
		"dthread":  {"dchannel", "dthread"},
		"dother":   {"dother"},
		"ddm":      {"ddm"},
		"schannel": {"schannel", "sthread"},
		"sthread":  {"schannel", "sthread"},
		"sdm":      {"sdm", "sdmthrd"},
		"sdmthrd":  {"sdm", "sdmthrd"},
		"sother":   {"sother"},
	}
	for name, room := range rooms {
		t.Run(name, func(t *testing.T) {
			got := recall(t, s, domain.RecallQuery{Text: "zebra", Room: room, Limit: 100})
			var msgs, facts, docs []string
			for _, r := range got {
				f := strings.Fields(r.Text)
				switch r.Kind {
				case domain.RecallMessage:
					msgs = append(msgs, f[len(f)-1])
				case domain.RecallFact:
					facts = append(facts, f[len(f)-1])
				case domain.RecallPassage:
					docs = append(docs, r.Text)
				}
			}
			slices.Sort(msgs)
			slices.Sort(facts)
			want := slices.Sorted(slices.Values(sees[name]))
			if !slices.Equal(msgs, want) || !slices.Equal(facts, want) {
				t.Errorf("in %s: messages of %v, facts of %v; want those of %v", room, msgs, facts, want)
			}
			wantDocs := 1
			if name == "schannel" || name == "sthread" {
				wantDocs = 2
			}
			if len(docs) != wantDocs {
				t.Errorf("in %s: knowledge %q; want %d passages", room, docs, wantDocs)
			}
		})
	}
	// With no room, only the knowledge of every room.
	got := recall(t, s, domain.RecallQuery{Text: "zebra", Limit: 100})
	if len(got) != 1 || got[0].Text != "zebra handbook for everyone" {
		t.Errorf("with no room: %q; want only the knowledge of every room", texts(got))
	}
}

// testRecallAfterWrites: recall in a room that held nothing to recall
// (which a store may remember for a while, so as not to look every
// iteration of a task) finds what is written there next through the same
// store at once: a message, a fact, a document, a room's memory moved in.
// A person who just told the bot something expects it to be remembered.
func testRecallAfterWrites(t *testing.T, s domain.Store) {
	room, other := "discord:500", "discord:501"
	for range 2 { // the second time from what the store remembers
		if got := recall(t, s, domain.RecallQuery{Text: "walrus pelican heron osprey", Room: room, Limit: 10}); len(got) != 0 {
			t.Fatalf("in an empty room: %q", texts(got))
		}
	}
	say(t, s, room, "discord:u1", "the walrus sleeps")
	if got := recall(t, s, domain.RecallQuery{Text: "walrus pelican heron osprey", Room: room, Limit: 10}); len(got) != 1 || got[0].Kind != domain.RecallMessage {
		t.Fatalf("after a message: %q; want the message", texts(got))
	}
	learn(t, s, domain.Fact{Room: room, Text: "the pelican is called Pete"})
	if got := recall(t, s, domain.RecallQuery{Text: "pelican", Room: room, Limit: 10}); len(got) != 1 || got[0].Kind != domain.RecallFact {
		t.Fatalf("after a fact: %q; want the fact", texts(got))
	}
	addDoc(t, s, "birds", room, "the heron fishes at dawn")
	if got := recall(t, s, domain.RecallQuery{Text: "heron", Room: room, Limit: 10}); len(got) != 1 || got[0].Kind != domain.RecallPassage {
		t.Fatalf("after a document: %q; want its passage", texts(got))
	}
	// Another room, empty and remembered so, gets this one's memory.
	for range 2 {
		if got := recall(t, s, domain.RecallQuery{Text: "walrus pelican osprey", Room: other, Limit: 10}); len(got) != 0 {
			t.Fatalf("in another empty room: %q", texts(got))
		}
	}
	if _, _, err := s.MoveRoom(t.Context(), room, other); err != nil {
		t.Fatal(err)
	}
	if got := recall(t, s, domain.RecallQuery{Text: "walrus pelican osprey", Room: other, Limit: 10}); len(got) != 2 {
		t.Fatalf("after the room's memory moved in: %q; want the message and the fact", texts(got))
	}
}

// testRecallBeforeID: the message asking, and those after it, are not
// recalled.
func testRecallBeforeID(t *testing.T, s domain.Store) {
	room := "discord:c1"
	first := say(t, s, room, "discord:u1", "the deploy key rotates weekly")
	asking := say(t, s, room, "discord:u2", "when does the deploy key rotate?")
	say(t, s, room, "discord:u1", "deploy key answer")
	got := recall(t, s, domain.RecallQuery{Text: asking.Text, Room: room, BeforeID: asking.ID})
	if len(got) != 1 || got[0].ID != first.ID || got[0].Source != fmt.Sprintf("message %d from name of u1", first.ID) {
		t.Errorf("recalled %+v; want only message %d, cited", got, first.ID)
	}
}

// testFacts: facts are stored with their room, scope, person and sources;
// a fact learnt twice is stored once; a bad batch stores nothing.
func testFacts(t *testing.T, s domain.Store) {
	m := say(t, s, "slack:C1:123.456", "slack:U1", "I moved to Lisbon")
	in := domain.Fact{Room: "slack:C1:123.456", About: "slack:U1", Text: "U1 lives in Lisbon", Sources: []int64{m.ID}, CreatedAt: at(time.Hour)}
	got := learn(t, s, in)
	if len(got) != 1 || got[0].ID == 0 || got[0].Scope != "slack:C1" || !slices.Equal(got[0].Sources, []int64{m.ID}) {
		t.Fatalf("SaveFacts = %+v; want the fact with an ID, scope slack:C1 and its source", got)
	}
	if again := learn(t, s, in, domain.Fact{Room: "slack:C1", Text: "the team meets on Fridays"}); len(again) != 1 || again[0].Text != "the team meets on Fridays" {
		t.Errorf("SaveFacts again = %+v; want only the new fact", again)
	}
	rc := recall(t, s, domain.RecallQuery{Text: "Lisbon", Room: "slack:C1", Kinds: []string{domain.RecallFact}})
	if len(rc) != 1 || rc[0].Source != fmt.Sprintf("fact %d about slack:U1 (from messages %d)", got[0].ID, m.ID) {
		t.Errorf("recalled %+v; want the fact once, cited", rc)
	}
	bad := []domain.Fact{
		{Room: "", Text: "no room"},
		{Room: "slack:C1", Text: "  "},
		{Room: "slack:C1", Text: "bad person", About: "nobody"},
		{Room: "slack:C1", Text: strings.Repeat("long ", domain.MaxFactChars)},
	}
	for _, b := range bad {
		if _, err := s.SaveFacts(t.Context(), []domain.Fact{{Room: "slack:C1", Text: "good Oslo fact"}, b}); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("SaveFacts(%+v) = %v; want ErrInvalid", b, err)
		}
	}
	if rc := recall(t, s, domain.RecallQuery{Text: "Oslo", Room: "slack:C1"}); len(rc) != 0 {
		t.Errorf("a refused batch stored %q", texts(rc))
	}
}

// testForget: Forget deletes what a person wrote and the facts about them,
// in every room, and nothing of anyone else.
func testForget(t *testing.T, s domain.Store) {
	for _, room := range []string{"discord:1", "discord:1:2", "discord:dm"} {
		say(t, s, room, "discord:u1", "walrus note from u1")
		say(t, s, room, "discord:u2", "walrus note from u2")
		say(t, s, room, "slack:u1", "walrus note from slack u1") // same ID, other platform
	}
	learn(t, s,
		domain.Fact{Room: "discord:1", About: "discord:u1", Text: "u1 likes walrus"},
		domain.Fact{Room: "discord:dm", About: "discord:u1", Text: "u1 owns a walrus"},
		domain.Fact{Room: "discord:1", About: "discord:u2", Text: "u2 likes walrus"})
	msgs, facts, err := s.Forget(t.Context(), "discord:u1")
	if err != nil || msgs != 3 || facts != 2 {
		t.Fatalf("Forget = %d messages, %d facts, %v; want 3, 2", msgs, facts, err)
	}
	for _, room := range []string{"discord:1", "discord:dm"} {
		for _, r := range recall(t, s, domain.RecallQuery{Text: "walrus u1", Room: room, Limit: 100}) {
			if strings.Contains(r.Text, "from u1") || strings.HasPrefix(r.Text, "u1 ") {
				t.Errorf("in %s after Forget: %+v", room, r)
			}
		}
	}
	left, err := s.SearchMemories(t.Context(), domain.MemoryFilter{})
	if err != nil || len(left) != 6 {
		t.Errorf("messages left: %d, %v; want the 6 of others", len(left), err)
	}
	if msgs, facts, err := s.Forget(t.Context(), "discord:u1"); err != nil || msgs != 0 || facts != 0 {
		t.Errorf("Forget again = %d, %d, %v; want nothing", msgs, facts, err)
	}
	for _, bad := range []string{"", "u1", ":u1", "discord:", " discord:u1"} {
		if _, _, err := s.Forget(t.Context(), bad); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("Forget(%q) = %v; want ErrInvalid", bad, err)
		}
	}
}

// testMoveRoom: MoveRoom takes a room's messages, facts and documents out
// of the scope they were in into the new room's — the words of a thread
// found to be private are no longer recalled in its channel, and are in
// the thread's new room — keeping one of a fact both scopes know, and
// nothing of the other rooms.
func testMoveRoom(t *testing.T, s domain.Store) {
	const channel, thread, private = "discord:1", "discord:1:2", "discord:2"
	say(t, s, channel, "discord:u1", "the zephyr note of the channel")
	say(t, s, thread, "discord:u1", "the zephyr secret of the thread")
	learn(t, s, domain.Fact{Room: private, About: "discord:u1", Text: "u1 keeps zephyr quiet"})
	learn(t, s,
		domain.Fact{Room: thread, About: "discord:u1", Text: "u1 keeps zephyr quiet"},
		domain.Fact{Room: thread, About: "discord:u1", Text: "u1 targets zephyr"},
		domain.Fact{Room: channel, About: "discord:u1", Text: "u1 likes zephyr tea"})
	addDoc(t, s, "Zephyr plan", thread, "The zephyr plan, for the thread only.")

	msgs, facts, err := s.MoveRoom(t.Context(), thread, private)
	if err != nil || msgs != 1 || facts != 1 {
		t.Fatalf("MoveRoom = %d messages, %d facts, %v; want 1, 1 (the other fact known there already)", msgs, facts, err)
	}
	inChannel := texts(recall(t, s, domain.RecallQuery{Text: "zephyr", Room: channel, Limit: 100}))
	slices.Sort(inChannel)
	if want := []string{"the zephyr note of the channel", "u1 likes zephyr tea"}; !slices.Equal(inChannel, want) {
		t.Errorf("the channel recalls %q; want only its own %q", inChannel, want)
	}
	inPrivate := texts(recall(t, s, domain.RecallQuery{Text: "zephyr", Room: private, Limit: 100}))
	slices.Sort(inPrivate)
	if want := []string{"The zephyr plan, for the thread only.", "the zephyr secret of the thread", "u1 keeps zephyr quiet", "u1 targets zephyr"}; !slices.Equal(inPrivate, want) {
		t.Errorf("the new room recalls %q; want %q", inPrivate, want)
	}
	if ms, err := s.SearchMemories(t.Context(), domain.MemoryFilter{Room: private}); err != nil || len(ms) != 1 || ms[0].Room != private {
		t.Errorf("the new room's messages: %+v, %v", ms, err)
	}
	if docs, err := s.Documents(t.Context(), private); err != nil || len(docs) != 1 || docs[0].Room != private {
		t.Errorf("the new room's documents: %+v, %v", docs, err)
	}
	if msgs, facts, err := s.MoveRoom(t.Context(), thread, private); err != nil || msgs != 0 || facts != 0 {
		t.Errorf("MoveRoom again = %d, %d, %v; want nothing", msgs, facts, err)
	}
	for _, bad := range [][2]string{{"", private}, {thread, ""}, {private, private}} {
		if _, _, err := s.MoveRoom(t.Context(), bad[0], bad[1]); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("MoveRoom(%q, %q) = %v; want ErrInvalid", bad[0], bad[1], err)
		}
	}
}

// testPruneFacts: retention deletes old facts as it does old messages.
func testPruneFacts(t *testing.T, s domain.Store) {
	learn(t, s,
		domain.Fact{Room: "discord:1", Text: "old otter fact", CreatedAt: at(time.Hour)},
		domain.Fact{Room: "discord:1", Text: "new otter fact", CreatedAt: at(40 * 24 * time.Hour)})
	n, err := s.PruneMemories(t.Context(), at(30*24*time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("PruneMemories = %d, %v; want the old fact", n, err)
	}
	got := recall(t, s, domain.RecallQuery{Text: "otter", Room: "discord:1"})
	if len(got) != 1 || got[0].Text != "new otter fact" {
		t.Errorf("recalled %q; want only the new fact", texts(got))
	}
}

// testDocuments: a document is split into passages of about
// domain.PassageChars, listed, and deleted with its passages.
func testDocuments(t *testing.T, s domain.Store) {
	var b strings.Builder
	for i := range 60 {
		fmt.Fprintf(&b, "Sentence number %d mentions the heron and some filler words to pad it out. ", i)
		if i%7 == 6 {
			b.WriteString("\n\n")
		}
	}
	text := b.String()
	d := addDoc(t, s, "Herons", "discord:1", text)
	if d.ID == 0 || d.Bytes != len(text) || d.Passages != len(domain.SplitPassages(text)) || d.Passages < 5 {
		t.Fatalf("AddDocument = %+v; want an ID, %d bytes, %d passages", d, len(text), len(domain.SplitPassages(text)))
	}
	global := addDoc(t, s, "Global", "", "heron sightings everywhere")
	got := recall(t, s, domain.RecallQuery{Text: "heron", Room: "discord:1", Kinds: []string{domain.RecallPassage}, Limit: 100})
	if len(got) != d.Passages+1 {
		t.Fatalf("recalled %d passages; want %d", len(got), d.Passages+1)
	}
	for _, r := range got {
		if n := utf8.RuneCountInString(r.Text); n > domain.PassageChars || (r.Text != "heron sightings everywhere" && n < domain.PassageChars/4) {
			t.Errorf("a passage of %d characters: %q", n, r.Text)
		}
		if !strings.HasPrefix(r.Text, "Sentence") && r.Text != "heron sightings everywhere" {
			t.Errorf("a passage starts mid-sentence: %q", r.Text)
		}
	}
	docs, err := s.Documents(t.Context(), "")
	if err != nil || len(docs) != 2 || docs[0].ID != global.ID || !sameDocument(docs[1], d) {
		t.Errorf("Documents = %+v, %v; want both, newest first", docs, err)
	}
	if docs, err := s.Documents(t.Context(), "discord:1"); err != nil || len(docs) != 1 || docs[0].ID != d.ID {
		t.Errorf("Documents(discord:1) = %+v, %v; want the room's", docs, err)
	}
	if err := s.DeleteDocument(t.Context(), d.ID); err != nil {
		t.Fatal(err)
	}
	got = recall(t, s, domain.RecallQuery{Text: "heron", Room: "discord:1", Limit: 100})
	if len(got) != 1 || got[0].Text != "heron sightings everywhere" {
		t.Errorf("after deleting the document recalled %q; want only the other", texts(got))
	}
	if err := s.DeleteDocument(t.Context(), d.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("deleting it again = %v; want ErrNotFound", err)
	}
	for _, bad := range []struct{ title, text string }{{"", "text"}, {"empty", " \n\n "}} {
		if _, err := s.AddDocument(t.Context(), domain.Document{Title: bad.title}, bad.text); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("AddDocument(%q, %q) = %v; want ErrInvalid", bad.title, bad.text, err)
		}
	}
}

// testLargeDocument: a document of domain.MaxDocumentBytes is taken and
// searchable to its end; one byte more is refused and nothing stored.
func testLargeDocument(t *testing.T, s domain.Store) {
	var b strings.Builder
	for b.Len() < domain.MaxDocumentBytes-100 {
		fmt.Fprintf(&b, "Line %d of the big manual says little. ", b.Len())
	}
	b.WriteString("The last line names the albatross.")
	text := b.String() + strings.Repeat(" ", domain.MaxDocumentBytes-b.Len())
	d := addDoc(t, s, "Big", "", text)
	if d.Bytes != domain.MaxDocumentBytes || d.Passages < domain.MaxDocumentBytes/domain.PassageChars {
		t.Errorf("AddDocument = %+v; want %d bytes in about %d passages", d, domain.MaxDocumentBytes, domain.MaxDocumentBytes/domain.PassageChars)
	}
	got := recall(t, s, domain.RecallQuery{Text: "albatross", Room: "discord:1"})
	if len(got) != 1 || !strings.HasSuffix(got[0].Text, "albatross.") {
		t.Errorf("recalled %q; want the last passage", texts(got))
	}
	_, err := s.AddDocument(t.Context(), domain.Document{Title: "Too big"}, text+"x")
	if !errors.Is(err, domain.ErrLimit) {
		t.Errorf("AddDocument of %d bytes = %v; want ErrLimit", len(text)+1, err)
	}
	if docs, err := s.Documents(t.Context(), ""); err != nil || len(docs) != 1 {
		t.Errorf("documents: %d, %v; want only the first", len(docs), err)
	}
}

// testMemoryListing: the messages listed and searched as the API does, and
// those after an ID for the facts evaluator.
func testMemoryListing(t *testing.T, s domain.Store) {
	a := say(t, s, "discord:1", "discord:u1", "the puffin count is twelve")
	b := say(t, s, "discord:1", "discord:u2", "lunch?")
	c := say(t, s, "discord:2", "discord:u1", "another puffin sighting")
	ids := func(ms []domain.Memory) []int64 {
		out := make([]int64, len(ms))
		for i, m := range ms {
			out[i] = m.ID
		}
		return out
	}
	cases := []struct {
		name string
		f    domain.MemoryFilter
		want []int64
	}{
		{"all, newest first", domain.MemoryFilter{}, []int64{c.ID, b.ID, a.ID}},
		{"one room", domain.MemoryFilter{Room: "discord:1"}, []int64{b.ID, a.ID}},
		{"paged", domain.MemoryFilter{BeforeID: c.ID, Limit: 1}, []int64{b.ID}},
		{"searched", domain.MemoryFilter{Query: "puffins"}, []int64{c.ID, a.ID}},
		{"searched in a room", domain.MemoryFilter{Query: "puffin", Room: "discord:2"}, []int64{c.ID}},
		{"stop words only", domain.MemoryFilter{Query: "the"}, nil},
	}
	for _, tc := range cases {
		got, err := s.SearchMemories(t.Context(), tc.f)
		if err != nil || !slices.Equal(ids(got), tc.want) {
			t.Errorf("%s: SearchMemories(%+v) = %v, %v; want %v", tc.name, tc.f, ids(got), err, tc.want)
		}
	}
	got, err := s.MemoriesAfter(t.Context(), "discord:1", a.ID, 10)
	if err != nil || !slices.Equal(ids(got), []int64{b.ID}) {
		t.Errorf("MemoriesAfter = %v, %v; want %d", ids(got), err, b.ID)
	}
	got, err = s.MemoriesAfter(t.Context(), "discord:1", 0, 1)
	if err != nil || !slices.Equal(ids(got), []int64{a.ID}) {
		t.Errorf("MemoriesAfter(limit 1) = %v, %v; want %d", ids(got), err, a.ID)
	}
}

// testEmbeddings: a vector is stored once per fact or passage and read
// back as it was.
func testEmbeddings(t *testing.T, s domain.Store) {
	f := learn(t, s, domain.Fact{Room: "discord:1", Text: "embedded fact"})[0]
	addDoc(t, s, "vectors", "", "embedded passage")
	p := recall(t, s, domain.RecallQuery{Text: "embedded", Kinds: []string{domain.RecallPassage}})[0]
	for _, tc := range []struct {
		kind string
		id   int64
	}{{domain.RecallFact, f.ID}, {domain.RecallPassage, p.ID}} {
		vec := []float32{0.25, -1.5, 3e-8}
		if err := s.SaveEmbeddings(t.Context(), tc.kind, map[int64][]float32{tc.id: vec}); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveEmbeddings(t.Context(), tc.kind, map[int64][]float32{tc.id: {9}}); err != nil {
			t.Fatal(err)
		}
		got, err := s.Embeddings(t.Context(), tc.kind, []int64{tc.id, tc.id + 1000})
		if err != nil || len(got) != 1 || !slices.Equal(got[tc.id], vec) {
			t.Errorf("%s embeddings = %v, %v; want the first vector only", tc.kind, got, err)
		}
	}
	if err := s.SaveEmbeddings(t.Context(), domain.RecallMessage, map[int64][]float32{1: {1}}); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("embedding a message = %v; want ErrInvalid", err)
	}
}

func sameDocument(a, b domain.Document) bool {
	return a.ID == b.ID && a.Title == b.Title && a.Room == b.Room && a.Bytes == b.Bytes &&
		a.Passages == b.Passages && a.CreatedAt.Equal(b.CreatedAt)
}

// Backfilled checks that a message stored before the migration of recall
// — "the heron nests by the lake", in room slack:C1:171.1 — is recalled in
// its channel and not elsewhere: the migration gave it its scope and
// indexed its text.
func Backfilled(t *testing.T, s domain.Store) {
	t.Helper()
	got := recall(t, s, domain.RecallQuery{Text: "where do herons nest?", Room: "slack:C1"})
	if len(got) != 1 || got[0].Text != "the heron nests by the lake" {
		t.Errorf("in slack:C1 recalled %q; want the message stored before the migration", texts(got))
	}
	if got := recall(t, s, domain.RecallQuery{Text: "heron", Room: "slack:C2"}); len(got) != 0 {
		t.Errorf("in slack:C2 recalled %q; want nothing", texts(got))
	}
}

// testRecallCommonWords: a word in many rows does not select them when
// the query has rarer words, and still recalls when it has none or when
// the rarer ones are in no row of the room.
func testRecallCommonWords(t *testing.T, s domain.Store) {
	var paras []string
	for i := range 260 {
		paras = append(paras, fmt.Sprintf("Paragraph %d is about the common teapot. ", i)+strings.Repeat("Padding words fill the paragraph out. ", 10))
	}
	addDoc(t, s, "common", "", strings.Join(paras, "\n\n"))
	addDoc(t, s, "rare", "", "The ibis perches on a teapot.")
	if got := recall(t, s, domain.RecallQuery{Text: "teapot ibis", Room: "discord:1", Limit: 3}); len(got) == 0 || got[0].Text != "The ibis perches on a teapot." {
		t.Errorf("teapot ibis recalled %q; want the ibis first", texts(got))
	}
	if got := recall(t, s, domain.RecallQuery{Text: "teapot", Room: "discord:1", Limit: 5}); len(got) != 5 {
		t.Errorf("teapot recalled %d passages; want 5", len(got))
	}
	var facts []domain.Fact
	for i := range 210 {
		facts = append(facts, domain.Fact{Room: "discord:1", Text: fmt.Sprintf("fact %d mentions the kettle", i)})
	}
	learn(t, s, append(facts, domain.Fact{Room: "discord:2", Text: "the heron has a kettle"})...)
	got := recall(t, s, domain.RecallQuery{Text: "kettle heron", Room: "discord:1", Kinds: []string{domain.RecallFact}, Limit: 5})
	if len(got) != 5 {
		t.Errorf("kettle heron in discord:1 recalled %q; want 5 kettle facts of the room", texts(got))
	}
	for _, r := range got {
		if r.Room != "discord:1" {
			t.Errorf("recalled %+v of another room", r)
		}
	}
}

// testFactsConcurrent: replicas learning the same fact at once store it
// once, and none fails.
func testFactsConcurrent(t *testing.T, s domain.Store) {
	var stored atomic.Int64
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			got, err := s.SaveFacts(t.Context(), []domain.Fact{{Room: "discord:1", About: "discord:u1", Text: "u1 keeps bees", CreatedAt: at(time.Hour)}})
			if err != nil {
				t.Errorf("SaveFacts: %v", err)
			}
			stored.Add(int64(len(got)))
		})
	}
	wg.Wait()
	if n := stored.Load(); n != 1 {
		t.Errorf("the fact was stored %d times; want once", n)
	}
	if got := recall(t, s, domain.RecallQuery{Text: "bees", Room: "discord:1"}); len(got) != 1 {
		t.Errorf("recalled %q; want the fact once", texts(got))
	}
}
