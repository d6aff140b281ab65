package sqlstore

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
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

// TestWordCounts: counts are remembered but for words in no row, but
// for a while those in no passage, forgotten after forgetAfter lookups,
// and safe to share (run with -race).
func TestWordCounts(t *testing.T) {
	t.Parallel()
	c := &wordCounts{rows: map[string]int{}}
	c.put("passage", "tea", 12)
	c.put("fact", "absent", 0)
	c.put("message", "absent", 0)
	c.put("passage", "nowhere", 0)
	if n, ok := c.get("passage", "tea"); !ok || n != 12 {
		t.Errorf("tea = %d, %v; want 12", n, ok)
	}
	if _, ok := c.get("fact", "tea"); ok {
		t.Error("a passage's count was a fact's")
	}
	if _, ok := c.get("fact", "absent"); ok {
		t.Error("a word in no fact was remembered")
	}
	if _, ok := c.get("message", "absent"); ok {
		t.Error("a word in no message was remembered")
	}
	if n, ok := c.get("passage", "nowhere"); !ok || n != 0 {
		t.Errorf("a word in no passage = %d, %v; want it remembered as in none", n, ok)
	}
	if _, ok := c.get("fact", "nowhere"); ok {
		t.Error("a word in no passage was taken to be in no fact")
	}
	c.forgetAbsent()
	if _, ok := c.get("passage", "nowhere"); ok {
		t.Error("a word in no passage still remembered after a document was added")
	}
	c.put("passage", "nowhere", 0)
	c.mu.Lock()
	c.absent["nowhere"] = time.Now().Add(-time.Millisecond)
	c.mu.Unlock()
	if _, ok := c.get("passage", "nowhere"); ok {
		t.Error("a word in no passage still remembered after absentFor")
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range forgetAfter / 4 {
				c.put("passage", strconv.Itoa(g*i), 1)
				c.get("passage", "tea")
			}
		})
	}
	wg.Wait()
	if _, ok := c.get("passage", "tea"); ok {
		t.Error("counts not forgotten after forgetAfter lookups")
	}
}
