package render

import (
	"fmt"
	"github.com/taskloom/taskloom/domain"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// collapseAt is the length from which a run of one character is shown
// once with its count: short runs (indentation, a double space, "==")
// read as they are, a long one cannot push what follows out of sight.
const collapseAt = 4

// maxMarks is how many combining marks may stack on one visible character
// and still be drawn: enough for Vietnamese (ệ) or Thai (a vowel and a
// tone), not for marks piled up to cover the lines around them.
const maxMarks = 2

// maxListed is how many letters of one script a word's mark lists.
const maxListed = 8

// Visible makes every character of s seen for what it is, for text that a
// person decides on: what a call will run, a question to answer. It is
// the one form every surface shows (chat, the CLI; the dashboard runs its
// twin, adapters/httpapi/dashboard/visible.js, held to this function by a
// test), so that what runs is what was shown:
//
//   - A run of collapseAt or more of any one character is shown once with
//     its count: 2,600 spaces read "␠×2600", "aaaaaaaa" reads "a×8".
//   - A newline is ↵ and a tab ⇥ wherever they stand; a short run of
//     spaces is left as it is.
//   - A character that prints blank or nothing is written as its code
//     point, "⟨U+3164⟩": other white space, controls, format and
//     bidirectional characters, the ones Unicode says to ignore when
//     drawing (Default_Ignorable_Code_Point: Hangul fillers, the
//     combining grapheme joiner, tag characters...), variation selectors,
//     private-use and unassigned code points, and the blanks that are
//     symbols (U+2800 BRAILLE PATTERN BLANK, U+1D159, U+16FE4).
//   - A combining mark is drawn only on a character shown as itself (not
//     a space, a code point or a count), and at most maxMarks of them: one
//     with nothing visible to sit on, or stacked deeper, is written as its
//     code point.
//   - The characters these marks are made of (⟨ ⟩ × ␠ ↵ ⇥), where s has
//     them itself, are written as code points, so a mark always means what
//     it says.
//   - A word whose letters mix scripts — beyond the mixes a language
//     writes (Latin with Han, Hiragana and Katakana; with Han and Bopomofo;
//     with Han and Hangul) — is followed by the letters not of its main
//     script, named by script: "gіthub.com ⟨Cyrillic і⟩". A word runs
//     between white space, quotes, brackets and , ; | & = < >; a backslash
//     and the character after it end one too (an escape such as \n is not
//     part of the word after it). The main script is the one most of its
//     letters are in (on a tie, the first letter's).
//
// Invalid UTF-8 shows as ⟨0xFF⟩ per byte. Other text is left as it is.
func Visible(s string) string {
	var (
		b     strings.Builder
		w     word
		marks = -1 // combining marks drawn on the letter before; -1: none may be
		esc   bool // the character before was a backslash
	)
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			fmt.Fprintf(&b, "⟨0x%02X⟩", s[i])
			i++
			marks, esc = -1, false
			continue
		}
		n := 1
		for j := i + size; j < len(s); j += size {
			if q, qs := utf8.DecodeRuneInString(s[j:]); q != r || qs != size {
				break
			}
			n++
		}
		if esc || r == '\\' || endsWord(r) {
			w.end(&b)
		} else if unicode.IsLetter(r) && !domain.Invisible(r) {
			w.add(r, n)
		}
		esc = r == '\\' && n%2 == 1 // a backslash escapes unless it is escaped
		i += n * size

		if n >= collapseAt {
			if r == ' ' {
				b.WriteString("␠")
			} else {
				b.WriteString(shown(r, -1))
			}
			b.WriteString("×")
			b.WriteString(strconv.Itoa(n))
			marks = -1 // nothing may stack on the count
			continue
		}
		for ; n > 0; n-- {
			form := shown(r, marks)
			b.WriteString(form)
			switch {
			case form != string(r) || unicode.IsSpace(r):
				marks = -1
			case isMark(r):
				marks++
			default:
				marks = 0
			}
		}
	}
	w.end(&b)
	return b.String()
}

// shown is how r is written once, after a character with marks combining
// marks drawn on it (-1: after nothing a mark may be drawn on).
func shown(r rune, marks int) string {
	switch {
	case r == ' ':
		return " "
	case r == '\n':
		return "↵"
	case r == '\t':
		return "⇥"
	case unicode.IsSpace(r), domain.Invisible(r), strings.ContainsRune(markChars, r),
		isMark(r) && (marks < 0 || marks >= maxMarks):
		return fmt.Sprintf("⟨U+%04X⟩", r)
	}
	return string(r)
}

// markChars are the characters Visible's marks are made of.
const markChars = "⟨⟩×␠↵⇥"

// isMark reports whether r is a combining mark drawn on the letter before
// it (nonspacing or enclosing).
func isMark(r rune) bool { return r >= 0x300 && unicode.In(r, unicode.Mn, unicode.Me) }

// endsWord reports whether r stands between words (a backslash is handled
// apart).
func endsWord(r rune) bool {
	return unicode.IsSpace(r) || strings.ContainsRune("\"'`()[]{}<>,;|&=", r)
}

// word gathers the letters of the word being written, by script (a letter
// written as its code point is not counted: it shows no script).
type word struct {
	letters []scriptLetter
}

type scriptLetter struct {
	script string
	r      rune
	n      int
}

func (w *word) add(r rune, n int) {
	if sc := scriptOf(r); sc != "" {
		w.letters = append(w.letters, scriptLetter{sc, r, n})
	}
}

// end writes the mark of the word that ends here, if its scripts mix, and
// starts the next.
func (w *word) end(b *strings.Builder) {
	defer func() { w.letters = w.letters[:0] }()
	var scripts []string
	count := map[string]int{}
	for _, l := range w.letters {
		if count[l.script] == 0 {
			scripts = append(scripts, l.script)
		}
		count[l.script] += l.n
	}
	if len(scripts) < 2 || oneWriting(scripts) {
		return
	}
	main := scripts[0]
	for _, sc := range scripts {
		if count[sc] > count[main] {
			main = sc
		}
	}
	for _, sc := range scripts {
		if sc == main {
			continue
		}
		var listed []rune
		for _, l := range w.letters {
			if l.script == sc && !slices.Contains(listed, l.r) {
				listed = append(listed, l.r)
			}
		}
		b.WriteString(" ⟨" + sc)
		for k, r := range listed {
			if k == maxListed {
				b.WriteString(" …")
				break
			}
			b.WriteString(" " + string(r))
		}
		b.WriteString("⟩")
	}
}

// writings are the sets of scripts one language writes together (Unicode
// Technical Standard #39's "highly restrictive" level).
var writings = [][]string{
	{"Latin", "Han", "Hiragana", "Katakana"},
	{"Latin", "Han", "Bopomofo"},
	{"Latin", "Han", "Hangul"},
}

func oneWriting(scripts []string) bool {
	for _, set := range writings {
		all := true
		for _, sc := range scripts {
			all = all && slices.Contains(set, sc)
		}
		if all {
			return true
		}
	}
	return false
}

// scriptNames are Unicode's scripts but Common and Inherited: the most
// written first, then the others sorted.
var scriptNames = func() []string {
	first := []string{"Latin", "Cyrillic", "Greek", "Han", "Hiragana", "Katakana", "Hangul", "Arabic", "Hebrew", "Devanagari", "Thai"}
	var rest []string
	for name := range unicode.Scripts {
		if name != "Common" && name != "Inherited" && !slices.Contains(first, name) {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	return append(first, rest...)
}()

// scriptOf is the script of letter r, or "" for one of no script in
// particular.
func scriptOf(r rune) string {
	if unicode.Is(unicode.Latin, r) {
		return "Latin"
	}
	for _, name := range scriptNames {
		if unicode.Is(unicode.Scripts[name], r) {
			return name
		}
	}
	return ""
}
