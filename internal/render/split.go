package render

import (
	"strings"
	"unicode/utf8"
)

// Message size limits, in characters.
const (
	DiscordLimit    = 2000  // message content
	SlackTextLimit  = 40000 // a message's text
	SlackBlockLimit = 3000  // the text of one section block
)

// Split cuts text into chunks of at most limit runes each, for platforms
// that cap a message's length. Discord and Slack document their limits in
// characters; Split counts runes (code points). A platform that counted
// UTF-16 units would see an emoji as two, so pass a smaller limit for one.
//
// It cuts at the last line break that fits, and the newline it cuts at
// belongs to neither chunk: joining the chunks with the newlines they were
// cut at gives text back. A line that is itself too long is cut after its
// last space that fits (the space ends the first chunk), else between two
// grapheme clusters, so an emoji — a ZWJ family 👨‍👩‍👧, a flag 🇫🇷, a keycap
// 1️⃣, a skin tone or VS16 — is never cut in two, nor is a rune. Only a
// single cluster longer than limit is cut between its runes.
//
// A cut never falls inside a code span (one or two backticks, or a ``` block) if
// there is another place to cut. When a span is longer than a chunk can
// hold, Split cuts inside it but closes it at the end of the chunk and
// opens it again at the start of the next (a ``` block keeps its language),
// so every chunk reads as valid markup; those added delimiters count toward
// limit. (A limit too small to hold the delimiters and a rune of code gets
// plain cuts.) A backtick after a backslash is text, as Discord reads it.
//
// A text that fits is returned as the only chunk; "" gives no chunks; a
// limit below 1 means no limit. Invalid UTF-8 comes out as U+FFFD.
func Split(text string, limit int) []string {
	if text == "" {
		return nil
	}
	if limit < 1 || (utf8.RuneCountInString(text) <= limit && utf8.ValidString(text)) {
		return []string{text}
	}
	rs := []rune(text)
	n := len(rs)
	brk := breaks(rs)
	spans, in := codeSpans(rs)

	// inside reports the span that strictly contains position p (a cut
	// before rs[p]), or nil.
	inside := func(p int) *span {
		if p <= 0 || p >= n || in[p] < 0 {
			return nil
		}
		return &spans[in[p]]
	}

	var chunks []string
	var carry *span // the span the previous cut fell in, reopened here
	s := 0
	for s < n {
		prefix := ""
		if carry != nil {
			prefix = carry.open
		}
		plen := utf8.RuneCountInString(prefix)
		if plen >= limit {
			prefix, plen, carry = "", 0, nil // no room to reopen: degrade
		}
		if plen+n-s <= limit {
			chunks = append(chunks, prefix+string(rs[s:]))
			break
		}
		avail := limit - plen
		end := s + avail // the furthest cut: the chunk is rs[s:end]

		cut, skip := -1, 0
		var within *span
		// 1. The last newline that fits, outside spans. The newline itself
		// is dropped, so it may sit just past the chunk.
		for p := end; p > s && cut < 0; p-- {
			if rs[p] == '\n' && inside(p) == nil {
				cut, skip = p, 1
			}
		}
		// 2. After the last space that fits, outside spans.
		for p := end; p > s+1 && cut < 0; p-- {
			if rs[p-1] == ' ' && brk[p] && inside(p) == nil {
				cut = p
			}
		}
		// 3. Between clusters, outside spans.
		for p := end; p > s && cut < 0; p-- {
			if brk[p] && inside(p) == nil {
				cut = p
			}
		}
		// 4. Inside a span too long to avoid, leaving room to close it:
		// again newline first, then space, then between clusters.
		// In an inline span, a backtick next to the cut would merge with
		// the delimiter added there.
		fits := func(p, skip int) *span {
			sp := inside(p)
			if sp == nil || p <= max(s, sp.contentStart) || p+skip >= sp.contentEnd ||
				p-s+utf8.RuneCountInString(sp.close) > avail {
				return nil
			}
			if !strings.HasPrefix(sp.open, "```") && (rs[p-1] == '`' || rs[p+skip] == '`') {
				return nil
			}
			return sp
		}
		for p := end; p > s && cut < 0; p-- {
			if sp := fits(p, 1); sp != nil && rs[p] == '\n' {
				cut, skip, within = p, 1, sp
			}
		}
		for p := end; p > s+1 && cut < 0; p-- {
			if sp := fits(p, 0); sp != nil && rs[p-1] == ' ' && brk[p] {
				cut, within = p, sp
			}
		}
		for p := end; p > s && cut < 0; p-- {
			if sp := fits(p, 0); sp != nil && brk[p] {
				cut, within = p, sp
			}
		}
		// 5. Nothing else fits (a cluster or a span delimiter longer than
		// the limit): cut between runes.
		if cut < 0 {
			cut = end
		}

		chunk := prefix + string(rs[s:cut])
		carry = within
		if within != nil {
			chunk += within.close
		}
		chunks = append(chunks, chunk)
		s = cut + skip
	}
	return chunks
}

// span is a code span in a rune slice: rs[start:contentStart] opens it,
// rs[contentEnd:end] closes it. open and close are what reopen and close it
// when a chunk boundary falls inside it.
type span struct {
	start, contentStart, contentEnd, end int
	open, close                          string
}

// codeSpans finds the code spans of rs as Discord and CommonMark read them:
// a run of n backticks opens a span that the next run of exactly n backticks
// closes; a run with no partner is text, and so is a backtick after a
// backslash outside a span. Runs of three or more are code blocks, which may
// name a language on their first line. in[p] is the index of the span that
// strictly contains position p, or -1.
func codeSpans(rs []rune) ([]span, []int) {
	var spans []span
	in := make([]int, len(rs)+1)
	for i := range in {
		in[i] = -1
	}
	runAt := func(i int) int {
		j := i
		for j < len(rs) && rs[j] == '`' {
			j++
		}
		return j - i
	}
	for i := 0; i < len(rs); {
		switch {
		case rs[i] == '\\':
			i += 2
			continue
		case rs[i] != '`':
			i++
			continue
		}
		k := runAt(i)
		closeAt := -1
		for j := i + k; j < len(rs); {
			if rs[j] != '`' {
				j++
				continue
			}
			if m := runAt(j); m == k {
				closeAt = j
				break
			} else {
				j += m
			}
		}
		if closeAt < 0 {
			i += k
			continue
		}
		run := strings.Repeat("`", k)
		sp := span{start: i, contentStart: i + k, contentEnd: closeAt, end: closeAt + k, open: run, close: run}
		if k >= 3 {
			// A block: reopen on a line of its own, with its language.
			lang := fenceLang(rs[i+k : closeAt])
			sp.open = run + lang + "\n"
			sp.close = "\n" + run
			if lang != "" {
				sp.contentStart += utf8.RuneCountInString(lang) + 1
			}
		}
		for p := sp.start + 1; p < sp.end; p++ {
			in[p] = len(spans)
		}
		spans = append(spans, sp)
		i = sp.end
	}
	return spans, in
}

// fenceLang is the language word that starts a code block's content on a
// line of its own (```go\n…), or "".
func fenceLang(content []rune) string {
	for i, r := range content {
		if r == '\n' {
			return string(content[:i])
		}
		if !(isAlnum(r) || strings.ContainsRune("+-_.#", r)) {
			return ""
		}
	}
	return ""
}

// SplitKeepingEnd is Split for a message whose last part carries buttons —
// a request to approve a call, which the notifications put last: the last
// part is the text's last paragraphs (after a blank line, outside code) as
// many as fit, whole, so that the buttons sit under all of what they
// decide on. The parts before are Split's. When the last paragraph alone
// is longer than limit, it is Split.
func SplitKeepingEnd(text string, limit int) []string {
	parts := Split(text, limit)
	if len(parts) < 2 {
		return parts
	}
	rs := []rune(text)
	for len(rs) > 0 && rs[len(rs)-1] == '\n' {
		rs = rs[:len(rs)-1]
	}
	_, in := codeSpans(rs)
	for p := max(2, len(rs)-limit); p < len(rs); p++ {
		if rs[p] != '\n' && rs[p-1] == '\n' && rs[p-2] == '\n' && in[p-2] < 0 && in[p-1] < 0 && in[p] < 0 {
			// As Split does, the newline cut at belongs to neither part.
			return append(Split(string(rs[:p-1]), limit), string(rs[p:]))
		}
	}
	return parts
}
