package domain

import (
	"unicode"
	"unicode/utf8"
)

// Invisible reports whether r prints blank or nothing, white space aside:
// controls, format and bidirectional characters, surrogates, private-use
// and unassigned code points, what Unicode tells a renderer to ignore
// (the Hangul fillers, the combining grapheme joiner, tag characters…),
// variation selectors, and the blanks that are symbols (U+2800 BRAILLE
// PATTERN BLANK, U+1D159, U+16FE4). The chat surfaces show such a
// character by its code point (internal/render Visible); a name or goal
// made of nothing else is no name or goal (Blank).
func Invisible(r rune) bool {
	if r < utf8.RuneSelf {
		return r < ' ' || r == 0x7f
	}
	switch r {
	case '\u2800', '\U0001D159', '\U00016FE4': // blanks that are symbols or marks
		return true
	}
	// unicode.C is controls, format characters, surrogates, private use
	// and unassigned code points.
	return unicode.In(r, unicode.C, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector)
}

// Blank reports whether s shows nothing: every character in it is white
// space or Invisible.
func Blank(s string) bool {
	for _, r := range s {
		if !unicode.IsSpace(r) && !Invisible(r) {
			return false
		}
	}
	return true
}
