package render

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Grapheme clusters, simplified.
//
// The standard library has no grapheme segmentation and the module takes no
// dependency for it, so this file implements the part of UAX #29 that chat
// text needs: a cluster is a base rune followed by its extenders (combining
// marks, variation selectors, emoji skin-tone modifiers, tag characters, the
// keycap mark U+20E3), runes joined by ZERO WIDTH JOINER (👨‍👩‍👧), pairs of
// regional indicators (🇫🇷) and conjoining Hangul jamo. Controls, newline
// included, always stand alone. That keeps every emoji sequence in use
// together, which is what clipping and Split need.

const (
	zwj  = '\u200d' // ZERO WIDTH JOINER
	zwsp = '\u200b' // ZERO WIDTH SPACE
)

// isExtend reports whether r never starts a cluster of its own: it belongs to
// the rune before it.
func isExtend(r rune) bool {
	switch {
	case r == zwj, r == '\u200c': // joiner, non-joiner
		return true
	case r >= 0xfe00 && r <= 0xfe0f: // variation selectors (VS16 = emoji presentation)
		return true
	case r >= 0xe0100 && r <= 0xe01ef: // variation selectors supplement
		return true
	case r >= 0x1f3fb && r <= 0x1f3ff: // emoji skin-tone modifiers
		return true
	case r >= 0xe0020 && r <= 0xe007f: // tags (subdivision flags such as 🏴󠁧󠁢󠁳󠁣󠁴󠁿)
		return true
	}
	// Mn and Me include U+20E3 COMBINING ENCLOSING KEYCAP; Mc are spacing
	// marks, which UAX #29 also keeps with their base (GB9a).
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Mc)
}

func isRegionalIndicator(r rune) bool { return r >= 0x1f1e6 && r <= 0x1f1ff }

func isJamo(r rune) bool {
	return (r >= 0x1100 && r <= 0x11ff) || (r >= 0xa960 && r <= 0xa97f) || (r >= 0xd7b0 && r <= 0xd7ff)
}

// breaks reports, for each index i in 0..len(rs), whether a cluster may end
// before rs[i]. The ends (0 and len(rs)) are always breaks.
func breaks(rs []rune) []bool {
	b := make([]bool, len(rs)+1)
	b[0], b[len(rs)] = true, true
	ri := 0 // regional indicators in a row ending at i-1
	for i := 1; i < len(rs); i++ {
		prev, cur := rs[i-1], rs[i]
		if isRegionalIndicator(prev) {
			ri++
		} else {
			ri = 0
		}
		switch {
		case unicode.IsControl(prev) || unicode.IsControl(cur): // GB4, GB5
			b[i] = true
		case isExtend(cur): // GB9, GB9a
			b[i] = false
		case prev == zwj: // GB11, without asking that both sides be pictographic
			b[i] = false
		case isRegionalIndicator(prev) && isRegionalIndicator(cur): // GB12, GB13
			b[i] = ri%2 == 0
		case isJamo(prev) && isJamo(cur): // GB6–GB8, roughly
			b[i] = false
		default:
			b[i] = true
		}
	}
	return b
}

// clusters splits s into grapheme clusters.
func clusters(s string) []string {
	rs := []rune(s)
	b := breaks(rs)
	var out []string
	start := 0
	for i := 1; i <= len(rs); i++ {
		if b[i] {
			out = append(out, string(rs[start:i]))
			start = i
		}
	}
	return out
}

// clip shortens s to at most max runes, ending it with "…" when it had to
// cut, and never cuts a cluster in two.
func clip(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	var b strings.Builder
	n := 0
	for _, c := range clusters(s) {
		k := utf8.RuneCountInString(c)
		if n+k > max-1 {
			break
		}
		b.WriteString(c)
		n += k
	}
	return strings.TrimRight(b.String(), " ") + "…"
}

// width is how many terminal columns s takes in a monospaced font: wide East
// Asian characters and emoji take two, marks and joiners none. It follows
// East Asian Width closely enough to line up the queue view; exotic
// characters may be off by one.
func width(s string) int {
	w := 0
	for _, c := range clusters(s) {
		w += clusterWidth(c)
	}
	return w
}

func clusterWidth(c string) int {
	r, _ := utf8.DecodeRuneInString(c)
	switch {
	case r == zwsp || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || isExtend(r):
		return 0
	case isRegionalIndicator(r), isWide(r):
		return 2
	case strings.ContainsRune(c, '\ufe0f'): // text symbol asked to show as emoji
		return 2
	}
	return 1
}

// wide lists the East Asian Wide and Fullwidth ranges, emoji included.
var wide = [][2]rune{
	{0x1100, 0x115f}, {0x231a, 0x231b}, {0x2329, 0x232a}, {0x23e9, 0x23ec},
	{0x23f0, 0x23f0}, {0x23f3, 0x23f3}, {0x25fd, 0x25fe}, {0x2614, 0x2615},
	{0x2648, 0x2653}, {0x267f, 0x267f}, {0x2693, 0x2693}, {0x26a1, 0x26a1},
	{0x26aa, 0x26ab}, {0x26bd, 0x26be}, {0x26c4, 0x26c5}, {0x26ce, 0x26ce},
	{0x26d4, 0x26d4}, {0x26ea, 0x26ea}, {0x26f2, 0x26f3}, {0x26f5, 0x26f5},
	{0x26fa, 0x26fa}, {0x26fd, 0x26fd}, {0x2705, 0x2705}, {0x270a, 0x270b},
	{0x2728, 0x2728}, {0x274c, 0x274c}, {0x274e, 0x274e}, {0x2753, 0x2755},
	{0x2757, 0x2757}, {0x2795, 0x2797}, {0x27b0, 0x27b0}, {0x27bf, 0x27bf},
	{0x2b1b, 0x2b1c}, {0x2b50, 0x2b50}, {0x2b55, 0x2b55}, {0x2e80, 0x303e},
	{0x3041, 0x33ff}, {0x3400, 0x4dbf}, {0x4e00, 0x9fff}, {0xa000, 0xa4cf},
	{0xa960, 0xa97f}, {0xac00, 0xd7a3}, {0xf900, 0xfaff}, {0xfe10, 0xfe19},
	{0xfe30, 0xfe6f}, {0xff00, 0xff60}, {0xffe0, 0xffe6}, {0x16fe0, 0x18cff},
	{0x1b000, 0x1b2ff}, {0x1f004, 0x1f004}, {0x1f0cf, 0x1f0cf}, {0x1f18e, 0x1f18e},
	{0x1f191, 0x1f19a}, {0x1f200, 0x1f2ff}, {0x1f300, 0x1f320}, {0x1f32d, 0x1f335},
	{0x1f337, 0x1f37c}, {0x1f37e, 0x1f393}, {0x1f3a0, 0x1f3ca}, {0x1f3cf, 0x1f3d3},
	{0x1f3e0, 0x1f3f0}, {0x1f3f4, 0x1f3f4}, {0x1f3f8, 0x1f43e}, {0x1f440, 0x1f440},
	{0x1f442, 0x1f4fc}, {0x1f4ff, 0x1f53d}, {0x1f54b, 0x1f54e}, {0x1f550, 0x1f567},
	{0x1f57a, 0x1f57a}, {0x1f595, 0x1f596}, {0x1f5a4, 0x1f5a4}, {0x1f5fb, 0x1f64f},
	{0x1f680, 0x1f6c5}, {0x1f6cc, 0x1f6cc}, {0x1f6d0, 0x1f6d2}, {0x1f6d5, 0x1f6d7},
	{0x1f6dc, 0x1f6df}, {0x1f6eb, 0x1f6ec}, {0x1f6f4, 0x1f6fc}, {0x1f7e0, 0x1f7eb},
	{0x1f7f0, 0x1f7f0}, {0x1f90c, 0x1f93a}, {0x1f93c, 0x1f945}, {0x1f947, 0x1f9ff},
	{0x1fa70, 0x1faff}, {0x20000, 0x2fffd}, {0x30000, 0x3fffd},
}

func isWide(r rune) bool {
	lo, hi := 0, len(wide)
	for lo < hi {
		m := (lo + hi) / 2
		switch {
		case r < wide[m][0]:
			hi = m
		case r > wide[m][1]:
			lo = m + 1
		default:
			return true
		}
	}
	return false
}
