package plugin_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// TestMemorySectionBound: however many recollections and however long,
// the section never exceeds plugin.MemorySectionChars, and it still
// shows what fits — a short one after a huge one is not lost.
func TestMemorySectionBound(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 42, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		recs []domain.Recollection
		want string // a line the section must show
	}{
		{"huge", []domain.Recollection{
			{Kind: domain.RecallPassage, Text: strings.Repeat("ünïcode words ", 100000), Source: `"Runbook", passage 1`},
			{Kind: domain.RecallMessage, Text: "the staging database is ORCA-7", Source: "message 3 from ann", Room: "discord:C1", CreatedAt: at},
		}, "- [ann, Mar 1 10:42 UTC in this room] the staging database is ORCA-7"},
		{"many", func() []domain.Recollection {
			var out []domain.Recollection
			for i := range 1000 {
				out = append(out, domain.Recollection{Kind: domain.RecallFact, Text: fmt.Sprintf("fact number %d is true", i), Source: fmt.Sprintf("fact %d about discord:U1 (from messages 1, 2)", i)})
			}
			return out
		}(), "- [fact about discord:U1] fact number 0 is true"},
		{"huge source", []domain.Recollection{
			{Kind: domain.RecallPassage, Text: "x", Source: strconvQuote(strings.Repeat("T", 5000)) + ", passage 1"},
		}, "- [knowledge: TTTT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := plugin.MemorySection(tc.recs, "discord:C1", "which words")
			if n := utf8.RuneCountInString(got); n > plugin.MemorySectionChars {
				t.Fatalf("the section is %d characters, more than %d", n, plugin.MemorySectionChars)
			}
			if !strings.HasPrefix(got, plugin.MemoryHeading+"\n") || !strings.Contains(got, tc.want) {
				t.Fatalf("section =\n%s\nwant a line %q", got, tc.want)
			}
		})
	}
}

func strconvQuote(s string) string { return `"` + s + `"` }

// TestRecollectionSource: each recollection says where it comes from.
func TestRecollectionSource(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 42, 0, 0, time.UTC)
	for _, tc := range []struct {
		rc   domain.Recollection
		want string
	}{
		{domain.Recollection{Kind: domain.RecallMessage, Source: "message 4 from ann", Room: "discord:C1", CreatedAt: at}, "ann, Mar 1 10:42 UTC in this room"},
		{domain.Recollection{Kind: domain.RecallMessage, Source: "message 4 from ann", Room: "discord:C1:T9", CreatedAt: at}, "ann, Mar 1 10:42 UTC in discord:C1:T9"},
		{domain.Recollection{Kind: domain.RecallFact, Source: "fact 2 about discord:U1 (from messages 4)"}, "fact about discord:U1"},
		{domain.Recollection{Kind: domain.RecallFact, Source: "fact 2 (from messages 4)"}, "fact"},
		{domain.Recollection{Kind: domain.RecallPassage, Source: `"Runbook", passage 3`}, "knowledge: Runbook"},
	} {
		if got := plugin.RecollectionSource(tc.rc, "discord:C1"); got != tc.want {
			t.Errorf("source of %+v = %q, want %q", tc.rc, got, tc.want)
		}
	}
}

type fakeEmbedder struct {
	vec      func(string) []float32
	err      error
	embedded *[]string // what was embedded
}

func (f fakeEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	if f.err != nil {
		return nil, f.err
	}
	out := make([][]float32, len(texts))
	for i, s := range texts {
		out[i] = f.vec(s)
	}
	if f.embedded != nil {
		*f.embedded = append(*f.embedded, texts...)
	}
	return out, nil
}

// recallOnly recalls recs and keeps vectors, as a store does.
type recallOnly struct {
	domain.MemoryStore
	recs    []domain.Recollection
	got     domain.RecallQuery
	vectors map[string]map[int64][]float32
}

func (r *recallOnly) Recall(_ context.Context, q domain.RecallQuery) ([]domain.Recollection, error) {
	r.got = q
	return r.recs, nil
}

func (r *recallOnly) SaveEmbeddings(_ context.Context, kind string, vs map[int64][]float32) error {
	if r.vectors == nil {
		r.vectors = map[string]map[int64][]float32{}
	}
	if r.vectors[kind] == nil {
		r.vectors[kind] = map[int64][]float32{}
	}
	for id, v := range vs {
		r.vectors[kind][id] = v
	}
	return nil
}

func (r *recallOnly) Embeddings(_ context.Context, kind string, ids []int64) (map[int64][]float32, error) {
	out := map[int64][]float32{}
	for _, id := range ids {
		if v, ok := r.vectors[kind][id]; ok {
			out[id] = v
		}
	}
	return out, nil
}

// TestRecallerReranksByEmbeddings: with an embedder, the most similar
// recollection comes first whatever the store's order, and the vectors of
// facts are kept for the next recall; an embedder that fails leaves the
// store's order; the messages the prompt shows already are left out.
func TestRecallerReranksByEmbeddings(t *testing.T) {
	st := &recallOnly{recs: []domain.Recollection{
		{Kind: domain.RecallFact, ID: 1, Text: "alpha", Source: "fact 1"},
		{Kind: domain.RecallFact, ID: 2, Text: "beta", Source: "fact 2"},
		{Kind: domain.RecallMessage, ID: 3, Text: "shown already", Source: "message 3 from ann"},
	}}
	vec := func(s string) []float32 {
		if s == "alpha" {
			return []float32{0, 1}
		}
		return []float32{1, 0} // the query and beta
	}
	ask := plugin.MemoryAsk{Room: "discord:C1", Text: "which is it", BeforeID: 9, Skip: []int64{3}}
	got, err := (&plugin.Recaller{Store: st, Embed: fakeEmbedder{vec: vec}}).Section(context.Background(), ask)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Index(got, "beta") > strings.Index(got, "alpha") || strings.Contains(got, "shown already") {
		t.Fatalf("re-ranked section:\n%s", got)
	}
	if st.got.Room != "discord:C1" || st.got.BeforeID != 9 || st.got.Text != "which is it" {
		t.Fatalf("query = %+v", st.got)
	}
	// The facts' vectors were kept: asked again, only the query is
	// embedded.
	var embedded []string
	if _, err := (&plugin.Recaller{Store: st, Embed: fakeEmbedder{vec: vec, embedded: &embedded}}).Section(context.Background(), ask); err != nil || len(embedded) != 1 {
		t.Fatalf("embedded again: %q, %v", embedded, err)
	}
	st.vectors = nil
	got, err = (&plugin.Recaller{Store: st, Embed: fakeEmbedder{err: errors.New("down")}}).Section(context.Background(), ask)
	if err != nil || strings.Index(got, "alpha") > strings.Index(got, "beta") {
		t.Fatalf("with a failing embedder: %v\n%s", err, got)
	}
}

// TestMemorySectionExcerpts: a long passage is shown around the first
// word of the query it holds, within the item's bound.
func TestMemorySectionExcerpts(t *testing.T) {
	long := strings.Repeat("Filler about the payroll export. ", 40) + "To restart the ingest queue, drain it first. " + strings.Repeat("Filler about holidays. ", 40)
	got := plugin.MemorySection([]domain.Recollection{{Kind: domain.RecallPassage, Text: long, Source: `"Runbook", passage 1`}}, "", "Restart the ingest queue")
	line := got[strings.Index(got, "\n"+plugin.QuotePrefix)+1+len(plugin.QuotePrefix):]
	line, _, _ = strings.Cut(line, "\n")
	if !strings.Contains(line, "To restart the ingest queue, drain it first.") || !strings.HasPrefix(line, "- [knowledge: Runbook] …") ||
		utf8.RuneCountInString(line) > plugin.MemoryItemChars+len("- [knowledge: Runbook] ") {
		t.Fatalf("line = %q", line)
	}
}
