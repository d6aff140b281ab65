package sqlstore

import (
	"slices"
	"strings"
	"testing"
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
