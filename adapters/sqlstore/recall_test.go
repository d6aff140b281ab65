package sqlstore

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskloom/taskloom/internal/clock"
)

func TestQueryTerms(t *testing.T) {
	t.Parallel()
	tests := map[string][]string{
		"What is the TEA policy? Tea!":     {"tea", "policy"},
		`"NEAR(tea garden)" -x* text:café`: {"near", "tea", "garden", "x", "text", "café"},
		"the of and":                       nil,
		"don't":                            nil,
		"v2 release 2026":                  {"v2", "release", "2026"},
		strings.Repeat("z", 65) + " ok":    {"ok"},
		"tea\x00garden\xffpond":            {"tea", "garden", "pond"},
	}
	for in, want := range tests {
		if got := QueryTerms(in); !slices.Equal(got, want) {
			t.Errorf("QueryTerms(%q) = %q; want %q", in, got, want)
		}
	}
	var many strings.Builder
	for i := range 100 {
		many.WriteString("w" + strings.Repeat("x", i%60) + string(rune('a'+i%26)) + " ")
	}
	if got := QueryTerms(many.String()); len(got) != maxTerms {
		t.Errorf("a long query searched %d words; want %d", len(got), maxTerms)
	}
}

func TestVectorRoundTrip(t *testing.T) {
	t.Parallel()
	v := []float32{1, -0.5, 3.25e10, 0}
	got, err := DecodeVector(EncodeVector(v))
	if err != nil || !slices.Equal(got, v) {
		t.Errorf("round trip = %v, %v; want %v", got, err, v)
	}
	if _, err := DecodeVector([]byte{1, 2, 3}); err == nil {
		t.Error("a vector of 3 bytes decoded")
	}
}

// TestWordCounts: counts are remembered; a word in no row of a kind for
// absentFor, or until a row of that kind is written through this process
// (another process's rows are found absentFor later at most); forgotten
// after forgetAfter lookups, and safe to share (run with -race).
func TestWordCounts(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	c := &wordCounts{rows: map[string]int{}, now: clk.Now}
	c.put("passage", "tea", 12, c.gen("passage"))
	c.put("fact", "absent", 0, c.gen("fact"))
	c.put("message", "absent", 0, c.gen("message"))
	c.put("passage", "nowhere", 0, c.gen("passage"))
	if n, ok := c.get("passage", "tea"); !ok || n != 12 {
		t.Errorf("tea = %d, %v; want 12", n, ok)
	}
	if _, ok := c.get("fact", "tea"); ok {
		t.Error("a passage's count was a fact's")
	}
	for _, kind := range []string{"fact", "message", "passage"} {
		word := "absent"
		if kind == "passage" {
			word = "nowhere"
		}
		if n, ok := c.get(kind, word); !ok || n != 0 {
			t.Errorf("a word in no %s = %d, %v; want it remembered as in none", kind, n, ok)
		}
	}
	if _, ok := c.get("fact", "nowhere"); ok {
		t.Error("a word in no passage was taken to be in no fact")
	}
	c.wrote("passage")
	if _, ok := c.get("passage", "nowhere"); ok {
		t.Error("a word in no passage still remembered after a document was added")
	}
	if _, ok := c.get("fact", "absent"); !ok {
		t.Error("a word in no fact forgotten when a document was added")
	}
	c.wrote("message")
	if _, ok := c.get("message", "absent"); ok {
		t.Error("a word in no message still remembered after a message was stored")
	}
	c.put("passage", "nowhere", 0, c.gen("passage"))
	clk.Advance(absentFor - time.Millisecond)
	if _, ok := c.get("passage", "nowhere"); !ok {
		t.Error("a word in no passage forgotten before absentFor")
	}
	clk.Advance(time.Millisecond)
	if _, ok := c.get("passage", "nowhere"); ok {
		t.Error("a word in no passage still remembered after absentFor")
	}
	if _, ok := c.get("fact", "absent"); ok {
		t.Error("a word in no fact still remembered after absentFor")
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range forgetAfter / 4 {
				c.put("passage", strconv.Itoa(g*i), 1, c.gen("passage"))
				c.get("passage", "tea")
			}
		})
	}
	wg.Wait()
	if _, ok := c.get("passage", "tea"); ok {
		t.Error("counts not forgotten after forgetAfter lookups")
	}
}

// TestScopesHolding: a scope found with no message (or no fact) is taken
// to hold none for absentFor, or until one is written through this
// process; one found holding some is taken to hold them.
func TestScopesHolding(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	c := &wordCounts{rows: map[string]int{}, now: clk.Now}
	if _, known := c.holds("message", "discord:1"); known {
		t.Error("a scope never read was known")
	}
	c.found("message", "discord:1", false, c.gen("message"))
	c.found("fact", "discord:1", true, c.gen("fact"))
	if holds, known := c.holds("message", "discord:1"); holds || !known {
		t.Errorf("a scope found with no message = %v, %v; want known to hold none", holds, known)
	}
	if holds, known := c.holds("fact", "discord:1"); !holds || !known {
		t.Errorf("a scope found with facts = %v, %v; want known to hold some", holds, known)
	}
	if _, known := c.holds("message", "discord:2"); known {
		t.Error("another scope was known")
	}
	c.wrote("fact")
	if _, known := c.holds("message", "discord:1"); !known {
		t.Error("a fact written made the messages of the scope unknown")
	}
	c.wrote("message")
	if _, known := c.holds("message", "discord:1"); known {
		t.Error("a scope with no message still known to hold none after a message was stored")
	}
	c.found("message", "discord:1", false, c.gen("message"))
	clk.Advance(absentFor)
	if _, known := c.holds("message", "discord:1"); known {
		t.Error("a scope with no message still known to hold none after absentFor")
	}
	if holds, _ := c.holds("fact", "discord:1"); !holds {
		t.Error("a scope holding facts forgotten")
	}
}

// TestAbsenceReadBeforeAWrite: an absence read before this process wrote
// a row of the kind, and remembered after the write, is not remembered: it
// would hide the row just written for absentFor.
func TestAbsenceReadBeforeAWrite(t *testing.T) {
	t.Parallel()
	c := &wordCounts{rows: map[string]int{}}
	gen := c.gen("message")
	c.wrote("message") // a message stored while the read ran
	c.found("message", "discord:1", false, gen)
	c.put("message", "walrus", 0, gen)
	if _, known := c.holds("message", "discord:1"); known {
		t.Error("a scope read empty before a message was stored is known to hold none")
	}
	if _, ok := c.get("message", "walrus"); ok {
		t.Error("a word read absent before a message was stored is remembered as absent")
	}
	c.found("message", "discord:1", true, gen)
	if holds, known := c.holds("message", "discord:1"); !holds || !known {
		t.Error("a scope found holding messages is not remembered so")
	}
	gen = c.gen("fact")
	c.wrote("message")
	c.put("fact", "walrus", 0, gen)
	if _, ok := c.get("fact", "walrus"); !ok {
		t.Error("a message stored kept a word in no fact from being remembered")
	}
}
