package render

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Call shows a tool call a person is asked to approve — its action and
// parameters as the model wrote them — as an inline code span for flavor
// f, all of it: nothing is clipped, and nothing in it can hide the rest
// (see Visible). A call longer than one message goes out in several; the
// platforms put the buttons on the last.
func Call(f Flavor, action, params string) string {
	s := action
	if params != "" {
		s += " " + params
	}
	return code(f, Visible(s))
}

// collapseAt is the length from which a run of one whitespace character
// is shown as its count: short runs (indentation, a double space) read as
// they are, a long one cannot push what follows out of sight.
const collapseAt = 4

// Visible makes every character of s seen for what it is, for text that a
// person decides on: a run of collapseAt or more of one whitespace
// character becomes its mark and count (2,600 spaces read "␠×2600"), a
// newline is ↵ and a tab ⇥ wherever they stand, and a control character,
// a bidirectional or zero-width one or any other invisible format
// character is written as its code point, "⟨U+202E⟩". Invalid UTF-8 shows
// as ⟨0xFF⟩ per byte. Other text is left as it is.
func Visible(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			fmt.Fprintf(&b, "⟨0x%02X⟩", s[i])
			i++
			continue
		}
		if unicode.IsSpace(r) {
			n := 1
			for j := i + size; j < len(s); j += size {
				if q, _ := utf8.DecodeRuneInString(s[j:]); q != r {
					break
				}
				n++
			}
			mark, plain := spaceMark(r)
			switch {
			case n >= collapseAt:
				b.WriteString(mark)
				b.WriteString("×")
				b.WriteString(strconv.Itoa(n))
			case plain:
				b.WriteString(strings.Repeat(string(r), n))
			default:
				b.WriteString(strings.Repeat(mark, n))
			}
			i += n * size
			continue
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || isBidiControl(r) {
			fmt.Fprintf(&b, "⟨U+%04X⟩", r)
		} else {
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

// spaceMark is how whitespace character r is shown, and whether a short
// run of it is left as it is.
func spaceMark(r rune) (string, bool) {
	switch r {
	case ' ':
		return "␠", true
	case '\n':
		return "↵", false
	case '\t':
		return "⇥", false
	}
	return fmt.Sprintf("⟨U+%04X⟩", r), false
}
