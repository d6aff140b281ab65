package plugin

import (
	"context"
	"fmt"
	"github.com/taskloom/taskloom/domain"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Bounds of the "Relevant memory" section of a prompt (docs/memory.md).
const (
	// MemorySectionChars bounds the whole section, heading included, in
	// characters (runes): however many and however long the
	// recollections, the section is never longer.
	MemorySectionChars = 1500
	// MemoryItemChars bounds one recollection's text in it, so a long
	// passage leaves room for others.
	MemoryItemChars = 400
	// MemorySnippetChars bounds the snippet a text longer than
	// MemoryItemChars is shown as: the sentence that matched with some
	// context, short enough that four or five fit in the section.
	MemorySnippetChars = 240
	// RerankTimeout bounds re-ranking by embeddings, well inside the
	// providers' budget (DefaultProviderBudget): a slow embedding model
	// costs the ranking, not the section.
	RerankTimeout = 2 * time.Second
	// recallCandidates is how many recollections are asked for: more
	// than fit, so that those left out (already in the prompt, too long)
	// leave room for the next best.
	recallCandidates = 30
)

// MemoryHeading opens the section.
const MemoryHeading = "Relevant memory (recalled from earlier conversation, facts and knowledge; it may be out of date):"

// Embedder turns texts into vectors, one per text, in order: an embedding
// model (OPENAI_EMBEDDING_MODEL).
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Recaller builds the "Relevant memory" section of a prompt: the best
// recollections of a MemoryStore for a query — passages of knowledge,
// facts and earlier messages of the room's scope — each with where it
// comes from, within MemorySectionChars. Chat prompts get it through the
// relevant_memory provider, task iterations through the task service.
type Recaller struct {
	Store domain.MemoryStore
	// Embed, when set, re-ranks the candidates by similarity to the query;
	// when it fails, the store's order stands.
	Embed  Embedder
	Logger *slog.Logger
}

// MemoryAsk is what a prompt wants recalled.
type MemoryAsk struct {
	Room string // the room asking; "" recalls only the knowledge of every room
	Text string // what to recall for: the message, or a task's goal and latest step
	// BeforeID leaves out the message asking and those after it.
	BeforeID int64
	// Skip leaves out the messages (memory IDs) the prompt already shows.
	Skip []int64
}

// Section returns the section for ask, or "" when nothing is recalled.
func (r *Recaller) Section(ctx context.Context, ask MemoryAsk) (string, error) {
	if r == nil || r.Store == nil || strings.TrimSpace(ask.Text) == "" {
		return "", nil
	}
	recs, err := r.Store.Recall(ctx, domain.RecallQuery{Text: ask.Text, Room: ask.Room, Limit: recallCandidates, BeforeID: ask.BeforeID})
	if err != nil {
		return "", fmt.Errorf("recall for %s: %w", orAll(ask.Room), err)
	}
	recs = slices.DeleteFunc(slices.Clone(recs), func(rc domain.Recollection) bool {
		return rc.Kind == domain.RecallMessage && slices.Contains(ask.Skip, rc.ID)
	})
	if len(recs) == 0 {
		return "", nil
	}
	if r.Embed != nil {
		rctx, cancel := context.WithTimeout(ctx, RerankTimeout)
		recs = r.rerank(rctx, ask.Text, recs)
		cancel()
	}
	return MemorySection(recs, ask.Room, ask.Text), nil
}

func orAll(room string) string {
	if room == "" {
		return "every room"
	}
	return room
}

// memoryQuoted says what the section's quoted material is: nothing
// more than MemoryHeading says, as every character counts against
// MemorySectionChars.
const memoryQuoted = ""

// MemorySection lays recollections out, best first, as lines
// "- [source] text" under MemoryHeading, quoted (Quote: other people's
// words and what is remembered are never instructions), as many as fit
// in MemorySectionChars with the frame; one that does not fit is passed
// over for the next. None fits: "". A text longer than MemoryItemChars
// is shown as its snippet for query (MemorySnippetChars): the part that
// matched, with its context.
func MemorySection(recs []domain.Recollection, room, query string) string {
	fixed, perLine := QuoteFrameChars(memoryQuoted)
	used := utf8.RuneCountInString(MemoryHeading) + 1 + fixed // the heading's newline
	var lines []string
	for _, rc := range recs {
		text := strings.Join(strings.Fields(rc.Text), " ")
		if text == "" {
			continue
		}
		source := strings.Join(strings.Fields(RecollectionSource(rc, room)), " ")
		shown := text
		if utf8.RuneCountInString(text) > MemoryItemChars {
			shown = snippet(text, query, MemorySnippetChars)
		}
		line := "- [" + clipText(source, 120) + "] " + shown
		n := perLine + utf8.RuneCountInString(line)
		if used+n > MemorySectionChars {
			continue
		}
		used += n
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return ""
	}
	return MemoryHeading + "\n" + Quote(memoryQuoted, lines)
}

// RecollectionSource says where a recollection comes from, for a reader:
// "ann, 10:42 UTC in this room", "fact about discord:U1", "knowledge:
// Runbook".
func RecollectionSource(rc domain.Recollection, room string) string {
	switch rc.Kind {
	case domain.RecallMessage:
		who := rc.Source
		if _, after, ok := strings.Cut(rc.Source, " from "); ok {
			who = after
		}
		where := "in this room"
		if rc.Room != room {
			where = "in " + rc.Room
		}
		if rc.CreatedAt.IsZero() {
			return who + " " + where
		}
		return who + ", " + rc.CreatedAt.UTC().Format("Jan 2 15:04") + " UTC " + where
	case domain.RecallFact:
		s := "fact"
		if _, after, ok := strings.Cut(rc.Source, " about "); ok {
			about, _, _ := strings.Cut(after, " (from")
			s += " about " + about
		}
		return s
	case domain.RecallPassage:
		if title, err := strconv.QuotedPrefix(rc.Source); err == nil {
			if t, err := strconv.Unquote(title); err == nil {
				return "knowledge: " + t
			}
		}
		return "knowledge: " + rc.Source
	}
	return rc.Source
}

// rerank orders recs by the cosine similarity of their texts to text's,
// the most similar first; ties keep the store's order. It is the lowest
// of recall's priorities: any failure leaves recs as they were. The
// vectors of facts and passages are kept in the store, so each is
// embedded once; messages and the query are embedded every time.
func (r *Recaller) rerank(ctx context.Context, text string, recs []domain.Recollection) []domain.Recollection {
	log := r.Logger
	if log == nil {
		log = slog.Default()
	}
	vecs := make([][]float32, len(recs))
	ids := map[string][]int64{}
	for _, rc := range recs {
		if rc.Kind == domain.RecallFact || rc.Kind == domain.RecallPassage {
			ids[rc.Kind] = append(ids[rc.Kind], rc.ID)
		}
	}
	for kind, list := range ids {
		stored, err := r.Store.Embeddings(ctx, kind, list)
		if err != nil {
			log.Warn("recall: stored vectors could not be read; embedding them again", "kind", kind, "err", err)
			continue
		}
		for i, rc := range recs {
			if rc.Kind == kind && stored[rc.ID] != nil {
				vecs[i] = stored[rc.ID]
			}
		}
	}
	texts := []string{clipText(text, 2000)}
	var missing []int
	for i, rc := range recs {
		if vecs[i] == nil {
			texts = append(texts, clipText(rc.Text, 2000))
			missing = append(missing, i)
		}
	}
	got, err := r.Embed.Embed(ctx, texts)
	if err != nil || len(got) != len(texts) {
		log.Warn("recall: could not re-rank by embeddings; keeping the full-text order", "err", err)
		return recs
	}
	fresh := map[string]map[int64][]float32{}
	for j, i := range missing {
		vecs[i] = got[j+1]
		if k := recs[i].Kind; k == domain.RecallFact || k == domain.RecallPassage {
			if fresh[k] == nil {
				fresh[k] = map[int64][]float32{}
			}
			fresh[k][recs[i].ID] = got[j+1]
		}
	}
	for kind, vs := range fresh {
		if err := r.Store.SaveEmbeddings(ctx, kind, vs); err != nil {
			log.Warn("recall: vectors could not be kept", "kind", kind, "err", err)
		}
	}
	type scored struct {
		rc    domain.Recollection
		score float64
	}
	out := make([]scored, len(recs))
	for i, rc := range recs {
		out[i] = scored{rc, cosine(got[0], vecs[i])}
	}
	slices.SortStableFunc(out, func(a, b scored) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return 0
	})
	for i := range out {
		recs[i] = out[i].rc
	}
	return recs
}

func cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// clipText shortens s to at most n runes, the last an ellipsis.
func clipText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for pos := range s {
		if i == n-1 {
			return s[:pos] + "…"
		}
		i++
	}
	return s
}
