package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/sqlstore"
	"github.com/taskloom/taskloom/domain"
)

// The recall benchmarks of docs/PERFORMANCE.md ("Recall"), run by each
// store's bench tests.

// recallBenchRoom is the room the benchmarks' facts are learnt in.
const recallBenchRoom = "discord:bench"

// factTemplate is a fact about an entity and the question that paraphrases
// it: some of the fact's words, some synonyms, some noise.
type factTemplate struct{ fact, question string }

var factTemplates = []factTemplate{
	{"%s works on the %s project from the %s office", "which project is %s busy with these days? (%s team, %s)"},
	{"%s prefers %s tea brewed with %s water", "what kind of tea does %s like to drink? something %s, %s?"},
	{"%s owns a %s parrot called %s", "hey, does %s have a pet bird? %s or %s maybe"},
	{"%s is allergic to %s and avoids %s dishes", "anything %s cannot eat at dinner? %s, %s?"},
	{"%s moved to %s in the spring to join %s", "where does %s live now? was it %s after leaving %s?"},
	{"%s plays the %s in a band named %s", "what instrument is %s into? heard about %s and %s"},
	{"%s drives a %s van painted %s", "quick question: what car has %s got, the %s one in %s?"},
	{"%s reviews the %s budget every %s", "when does %s look over the money for %s? %s?"},
}

// benchWords makes n distinct made-up words from syllables, so an entity
// is named by words no other entity shares.
func benchWords(r *rand.Rand, n int) []string {
	syll := []string{"ka", "lo", "mir", "ven", "tu", "shar", "po", "zel", "dri", "nok", "ae", "bel", "qui", "ros", "fan", "gu"}
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		var b strings.Builder
		for range 2 + r.IntN(3) {
			b.WriteString(syll[r.IntN(len(syll))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// RecallAt5 learns 1,000 facts made from templates about distinct people
// (first names shared by about 17 of them, last names their own; details
// from pools of 60 words, so facts share words), asks 200 questions each
// paraphrasing one fact, and says how many of the questions recall their
// fact among the first five. A question names its person by full name or
// by first name only, keeps one detail of the fact or none, uses synonyms
// for the template's other words, and adds noise: a detail of the pools
// (likely another fact's) and a word in no fact.
func RecallAt5(tb testing.TB, s domain.Store) float64 {
	tb.Helper()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(19, 5))
	words := benchWords(r, 60+1000+120+1000)
	firsts, lasts, details, noise := words[:60], words[60:1060], words[1060:1180], words[1180:]
	facts := make([]domain.Fact, 1000)
	questions := make([]string, 1000)
	for i := range facts {
		tpl := factTemplates[i%len(factTemplates)]
		first, last := firsts[r.IntN(len(firsts))], lasts[i]
		a, b := details[r.IntN(60)], details[60+r.IntN(60)]
		facts[i] = domain.Fact{Room: recallBenchRoom, About: "discord:u" + fmt.Sprint(i),
			Text: fmt.Sprintf(tpl.fact, first+" "+last, a, b), CreatedAt: at(time.Duration(i) * time.Second)}
		name := first + " " + last
		if r.IntN(2) == 0 {
			name = first
		}
		detail := details[r.IntN(len(details))] // noise: likely another fact's
		switch r.IntN(3) {
		case 0:
			detail = a
		case 1:
			detail = b
		}
		questions[i] = fmt.Sprintf(tpl.question, name, detail, noise[i])
	}
	stored, err := s.SaveFacts(ctx, facts)
	if err != nil || len(stored) != len(facts) {
		tb.Fatalf("SaveFacts = %d facts, %v", len(stored), err)
	}
	hits := 0
	asked := r.Perm(len(facts))[:200]
	for _, i := range asked {
		got, err := s.Recall(ctx, domain.RecallQuery{Text: questions[i], Room: recallBenchRoom,
			Kinds: []string{domain.RecallFact}, Limit: 5})
		if err != nil {
			tb.Fatal(err)
		}
		if slices.ContainsFunc(got, func(rc domain.Recollection) bool { return rc.ID == stored[i].ID }) {
			hits++
		}
	}
	return float64(hits) / float64(len(asked))
}

// PassageCorpus makes n passages of about domain.PassageChars characters,
// of words drawn from a Zipf distribution over a vocabulary whose head is
// English's commonest words (as in real text), and queries of a few words
// drawn the same way.
type PassageCorpus struct {
	r     *rand.Rand
	zipf  *rand.Zipf
	vocab []string
}

// NewPassageCorpus makes a corpus of a 30,000-word vocabulary.
func NewPassageCorpus() *PassageCorpus {
	r := rand.New(rand.NewPCG(7, 11))
	head := strings.Fields(`the of and to a in is it you that he was for on are as with his they i at be
this have from or one had by word but not what all were we when your can said there use an each which
she do how their if will up other about out many then them these so some her would make like him into
time has look two more write go see number no way could people my than first water been call who oil
its now find long down day did get come made may part`)
	words := append(head, benchWords(r, 30000-len(head))...)
	return &PassageCorpus{r: r, zipf: rand.NewZipf(r, 1.07, 2, uint64(len(words)-1)), vocab: words}
}

func (c *PassageCorpus) word() string { return c.vocab[c.zipf.Uint64()] }

// Passage is one passage's text: sentences of 6 to 14 words, as many as
// fit in domain.PassageChars.
func (c *PassageCorpus) Passage() string {
	var b strings.Builder
	for {
		n := 6 + c.r.IntN(9)
		sentence := make([]string, n)
		for j := range sentence {
			sentence[j] = c.word()
		}
		next := strings.Join(sentence, " ") + "."
		if b.Len()+1+len(next) > domain.PassageChars {
			if b.Len() == 0 {
				continue
			}
			return b.String()
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(next)
	}
}

// Query is a question of 4 to 9 words.
func (c *PassageCorpus) Query() string {
	n := 4 + c.r.IntN(6)
	q := make([]string, n)
	for i := range q {
		q[i] = c.word()
	}
	return strings.Join(q, " ") + "?"
}

// LoadPassages adds documents of 100 passages each until the store holds n
// passages of knowledge of no room.
func (c *PassageCorpus) LoadPassages(tb testing.TB, s domain.Store, n int) {
	tb.Helper()
	ctx := context.Background()
	for d := 0; d*100 < n; d++ {
		paras := make([]string, min(100, n-d*100))
		for i := range paras {
			paras[i] = c.Passage()
		}
		doc, err := s.AddDocument(ctx, domain.Document{Title: fmt.Sprint("doc ", d), CreatedAt: at(time.Minute)},
			strings.Join(paras, "\n\n"))
		if err != nil {
			tb.Fatal(err)
		}
		if doc.Passages != len(paras) {
			tb.Fatalf("document %d has %d passages; want %d", d, doc.Passages, len(paras))
		}
	}
}

// Latencies times each call of one benchmark and reports its p50 and p99.
type Latencies []time.Duration

// Time runs fn and records how long it took.
func (l *Latencies) Time(fn func()) {
	start := time.Now()
	fn()
	*l = append(*l, time.Since(start))
}

// Report reports the p50 and p99 in milliseconds on b, their units named
// after prefix.
func (l Latencies) Report(b *testing.B, prefix string) {
	if len(l) == 0 {
		return
	}
	s := slices.Clone(l)
	slices.Sort(s)
	at := func(p float64) float64 { return float64(s[min(len(s)-1, int(p*float64(len(s))))]) / 1e6 }
	b.ReportMetric(at(0.50), prefix+"p50-ms")
	b.ReportMetric(at(0.99), prefix+"p99-ms")
}

// BenchRecallPassages loads n passages, lets the store settle (settle, if
// set: what its background upkeep would do) and measures Recall of the
// corpus's 1,000 queries on them: first each once, as a store that has
// not counted their words yet answers them (reported as cold-p50-ms and
// cold-p99-ms), then round and round (p50-ms, p99-ms). Then like — a
// scan that ranks every passage by how many of the query's words it
// contains, with LIKE: the store without full-text search — on the same
// passages and queries.
func BenchRecallPassages(b *testing.B, s domain.Store, n int, settle func(), like func(ctx context.Context, terms []string) (int, error)) {
	c := NewPassageCorpus()
	start := time.Now()
	c.LoadPassages(b, s, n)
	if settle != nil {
		settle()
	}
	b.Logf("loaded %d passages in %v", n, time.Since(start).Round(time.Millisecond))
	queries := make([]string, 1000)
	for i := range queries {
		queries[i] = c.Query()
	}
	ctx := context.Background()
	recall := func(b *testing.B, q string) int {
		got, err := s.Recall(ctx, domain.RecallQuery{Text: q, Room: recallBenchRoom,
			Kinds: []string{domain.RecallPassage}, Limit: 5})
		if err != nil {
			b.Fatal(err)
		}
		return len(got)
	}
	b.Run("fts", func(b *testing.B) {
		var cold Latencies
		for _, q := range queries {
			cold.Time(func() { recall(b, q) })
		}
		var lat Latencies
		i, found := 0, 0
		for b.Loop() {
			lat.Time(func() { found += recall(b, queries[i%len(queries)]) })
			i++
		}
		lat.Report(b, "")
		cold.Report(b, "cold-")
		b.ReportMetric(float64(found)/float64(i), "found/op")
	})
	b.Run("like", func(b *testing.B) {
		var lat Latencies
		i, found := 0, 0
		for b.Loop() {
			lat.Time(func() {
				got, err := like(ctx, sqlstore.QueryTerms(queries[i%len(queries)]))
				if err != nil {
					b.Fatal(err)
				}
				found += got
			})
			i++
		}
		lat.Report(b, "")
		b.ReportMetric(float64(found)/float64(i), "found/op")
	})
}
