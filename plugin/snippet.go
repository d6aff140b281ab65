package plugin

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// snippet is at most n runes of text, as a search engine shows a result:
// all of it when it fits, else the part that matched query — the
// sentence holding the most of query's words (a word the text repeats
// weighs less than one it says once, so the line that matched beats
// filler sharing a common word with the query), from its start, with what
// follows it (or precedes it, at the text's end) as the bound allows —
// marked "…" where cut. A sentence longer than the bound is shown around
// the stretch of it holding the most of those words. A text none of
// query's words is in shows its beginning.
func snippet(text, query string, n int) string {
	runes := []rune(text)
	if len(runes) <= n {
		return text
	}
	if n < 3 {
		return clipText(text, n)
	}
	words, starts := snippetWords(runes)
	terms := map[string]bool{}
	qwords, _ := snippetWords([]rune(query))
	for _, w := range qwords {
		if !snippetStop[w.stem] {
			terms[w.stem] = true
		}
	}
	// weight: a term said k times in the text weighs 1/k.
	seen := map[string]int{}
	for _, w := range words {
		if terms[w.stem] {
			seen[w.stem]++
		}
	}
	if len(seen) == 0 {
		return clipText(text, n)
	}
	budget := n - 2 // room for an ellipsis at either end
	// The best sentence: the most weight of distinct terms, then the
	// most matches; the first of equals.
	type span struct{ first, last int } // words
	var best span
	bestScore, bestHits := -1.0, 0
	for first := 0; first < len(words); {
		last := first
		for last+1 < len(words) && words[last+1].sentence == words[first].sentence {
			last++
		}
		score, hits := weigh(words[first:last+1], seen)
		if score > bestScore+1e-9 || (score > bestScore-1e-9 && hits > bestHits) {
			best, bestScore, bestHits = span{first, last}, score, hits
		}
		first = last + 1
	}
	from, to := starts[words[best.first].sentence], words[best.last].end
	if to-from > budget {
		// A sentence longer than the bound: its stretch of the most
		// weight.
		f, l := bestWindow(words[best.first:best.last+1], seen, budget)
		from, to = words[best.first+f].start, words[best.first+l].end
		if to-from > budget {
			from = words[best.first+f].start // one word longer than the bound
		}
	}
	start := from
	end := min(start+budget, len(runes))
	if end == len(runes) && end-start < budget {
		// The text ends first: the bound's rest goes before.
		start = max(len(runes)-budget, 0)
		for start > 0 && start < from && !unicode.IsSpace(runes[start-1]) {
			start++ // not in the middle of a word
		}
	}
	if end < len(runes) {
		for end > to && !unicode.IsSpace(runes[end]) {
			end-- // not in the middle of a word
		}
	}
	out := strings.TrimSpace(string(runes[start:end]))
	if start > 0 {
		out = "…" + out
	}
	if end < len(runes) {
		out += "…"
	}
	return clipText(out, n)
}

// weigh sums the weights (1/k for a term said k times in the text) of
// the distinct terms among words, and counts the words that are terms.
func weigh(words []snippetWord, seen map[string]int) (score float64, hits int) {
	in := map[string]bool{}
	for _, w := range words {
		k := seen[w.stem]
		if k == 0 {
			continue
		}
		hits++
		if !in[w.stem] {
			in[w.stem] = true
			score += 1 / float64(k)
		}
	}
	return score, hits
}

// bestWindow is the stretch of words (first..last) within budget runes
// holding the most weight of distinct terms, narrowed to its terms.
func bestWindow(words []snippetWord, seen map[string]int, budget int) (int, int) {
	in := map[string]int{}
	score, best := 0.0, -1.0
	bestFirst, bestLast, first := 0, 0, 0
	for last, w := range words {
		if k := seen[w.stem]; k > 0 {
			if in[w.stem]++; in[w.stem] == 1 {
				score += 1 / float64(k)
			}
		}
		for first < last && words[last].end-words[first].start > budget {
			if k := seen[words[first].stem]; k > 0 {
				if in[words[first].stem]--; in[words[first].stem] == 0 {
					score -= 1 / float64(k)
				}
			}
			first++
		}
		if score > best+1e-9 {
			best, bestFirst, bestLast = score, first, last
		}
	}
	for bestFirst < bestLast && seen[words[bestFirst].stem] == 0 {
		bestFirst++
	}
	for bestLast > bestFirst && seen[words[bestLast].stem] == 0 {
		bestLast--
	}
	return bestFirst, bestLast
}

type snippetWord struct {
	start, end int // rune offsets
	stem       string
	// sentence numbers the sentences: a sentence ends at a '.', '!' or
	// '?' followed by a space.
	sentence int
}

// snippetWords are the words of text (runs of letters and digits) with
// their stems: letters, lowercased, a common English ending taken off, so
// that "deploys", "deployment" and "deploying" are one word, and "plan"
// is not "plants". Words of one letter, or of two letters without a
// digit, are left out. starts are where the sentences start.
func snippetWords(runes []rune) (words []snippetWord, starts []int) {
	var out []snippetWord
	sentence := 0
	starts = []int{0}
	for i := 0; i < len(runes); {
		if !isWordRune(runes[i]) {
			if i > 0 && unicode.IsSpace(runes[i]) && strings.ContainsRune(".!?", runes[i-1]) {
				sentence++
				starts = append(starts, i+1)
			}
			i++
			continue
		}
		j := i
		digit := false
		for j < len(runes) && isWordRune(runes[j]) {
			digit = digit || unicode.IsDigit(runes[j])
			j++
		}
		if j-i >= 3 || (j-i == 2 && digit) {
			out = append(out, snippetWord{start: i, end: j, stem: stem(strings.ToLower(string(runes[i:j]))), sentence: sentence})
		}
		i = j
	}
	return out, starts
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// stem takes a common English ending off a lowercase word, the same way
// for the query as for the text: it need not be a word, only the same
// for a word's forms.
func stem(w string) string {
	for _, suf := range []string{"ments", "ment", "ings", "ing", "ies", "ied", "ed", "es", "s", "e"} {
		base, ok := strings.CutSuffix(w, suf)
		if !ok || utf8.RuneCountInString(base) < 3 || (suf == "s" && strings.HasSuffix(base, "s")) {
			continue
		}
		if suf == "ies" || suf == "ied" {
			base += "y"
		}
		w = base
		break
	}
	w = strings.TrimSuffix(w, "e")
	if n := len(w); n > 3 && w[n-1] == w[n-2] && !strings.ContainsRune("aeiou", rune(w[n-1])) {
		w = w[:n-1] // planning → plann → plan
	}
	return w
}

// snippetStop are words too common in English to say what matched.
var snippetStop = func() map[string]bool {
	m := map[string]bool{}
	for w := range strings.FieldsSeq(`the and for with that this from are was were but not you all any can has have
had its our out into over then than they them their what when where which who whom will would should could
about there these those been does did how why your yours his her she him also only just more most some such
very too own same other each few both here once again further while until because before after above below
between through during`) {
		m[stem(w)] = true
	}
	return m
}()
