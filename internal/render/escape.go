package render

import (
	"strings"
	"unicode"
)

// Flavor is the markup dialect a message is written in.
type Flavor int

const (
	// Plain is text with no markup: the console, logs, tests.
	Plain Flavor = iota
	// Discord is Discord's markdown, with <@id>-style mentions.
	Discord
	// Slack is Slack's mrkdwn, with &-escaped <, > and & and <!here>-style mentions.
	Slack
)

func (f Flavor) String() string {
	switch f {
	case Plain:
		return "plain"
	case Discord:
		return "discord"
	case Slack:
		return "slack"
	}
	return "flavor(" + itoa(int(f)) + ")"
}

// Lookalikes stand in for characters that would change formatting where a
// backslash escape does not exist (Slack) or does not work (inside a code
// span). They read the same and cannot be typed by accident.
const (
	lookBacktick = 'ˋ' // U+02CB MODIFIER LETTER GRAVE ACCENT for `
	lookStar     = '∗' // U+2217 ASTERISK OPERATOR for *
	lookUnder    = 'ˍ' // U+02CD MODIFIER LETTER LOW MACRON for _
	lookTilde    = '∼' // U+223C TILDE OPERATOR for ~
)

// Escape makes user text — task names, goals, errors, summaries — safe to
// show in a message of flavor f: it cannot ping anyone and cannot change the
// formatting around it.
//
// Every flavor first cleans the text: "\r\n" and a lone "\r" become "\n", a
// tab becomes a space, and every other control character is dropped, as are
// the bidirectional embedding, override and isolate characters (U+202A–U+202E,
// U+2066–U+2069) that could make text read in an order it is not written in.
// Invalid UTF-8 becomes U+FFFD. Plain does nothing more.
//
// Discord: a zero-width space goes after the @ of @everyone and @here (any
// case) and after every <, so <@123>, <@!123>, <@&123>, <#123>, <t:…> and
// </cmd:…> stay text and do not resolve or ping. The markdown characters
// \ * _ ~ ` | > [ are backslash-escaped everywhere, and # at the start of a
// line (a heading, or -# subtext) too. A link (http:// or https:// up to the
// next space) is left as it is apart from the @everyone rule, because Discord
// shows a backslash inside a link as part of the address.
//
// Slack: & < > become &amp; &lt; &gt;, which also turns <!channel>, <!here>
// and <@U123> into text. A > that starts a line would still make a quote, so
// a zero-width space goes before it. Slack's mrkdwn has no escape character,
// so * _ ~ become lookalikes (∗ ˍ ∼) unless they sit between two letters or
// digits, where Slack does not format them (snake_case_name stays as typed);
// a backtick always becomes ˋ. @channel, @here and @everyone get a zero-width
// space after the @ in case the message is sent with link_names. Links keep
// their characters, & aside.
func Escape(f Flavor, s string) string {
	s = clean(s)
	switch f {
	case Discord:
		return escapeDiscord([]rune(s))
	case Slack:
		return escapeSlack([]rune(s))
	}
	return s
}

// clean applies the rules every flavor shares.
func clean(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteRune(r)
		case r == '\r':
			b.WriteByte('\n')
		case r == '\t':
			b.WriteByte(' ')
		case unicode.IsControl(r), isBidiControl(r):
		default:
			b.WriteRune(r) // invalid bytes arrive as U+FFFD
		}
	}
	return b.String()
}

func isBidiControl(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

func escapeDiscord(rs []rune) string {
	var b strings.Builder
	b.Grow(len(rs) + len(rs)/4)
	lineStart := true // nothing but spaces (or a leading -) since the line began
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		if n := urlLen(rs, i); n > 0 {
			for j := i; j < i+n; j++ {
				b.WriteRune(rs[j])
				if rs[j] == '@' {
					defuseAt(&b, rs, j+1, discordAll)
				}
			}
			i += n - 1
			lineStart = false
			continue
		}
		switch r {
		case '\n':
			b.WriteRune(r)
			lineStart = true
			continue
		case '@':
			b.WriteRune(r)
			defuseAt(&b, rs, i+1, discordAll)
		case '<':
			b.WriteRune(r)
			b.WriteRune(zwsp)
		case '\\', '*', '_', '~', '`', '|', '>', '[':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '#':
			if lineStart {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
		if r != ' ' && !(r == '-' && lineStart) {
			lineStart = false
		}
	}
	return b.String()
}

func escapeSlack(rs []rune) string {
	var b strings.Builder
	b.Grow(len(rs) + len(rs)/4)
	lineStart := true
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		if n := urlLen(rs, i); n > 0 {
			for j := i; j < i+n; j++ {
				writeSlackEntity(&b, rs[j])
				if rs[j] == '@' {
					defuseAt(&b, rs, j+1, slackAll)
				}
			}
			i += n - 1
			lineStart = false
			continue
		}
		switch r {
		case '\n':
			b.WriteRune(r)
			lineStart = true
			continue
		case '@':
			b.WriteRune(r)
			defuseAt(&b, rs, i+1, slackAll)
		case '>':
			if lineStart {
				b.WriteRune(zwsp)
			}
			b.WriteString("&gt;")
		case '&', '<':
			writeSlackEntity(&b, r)
		case '`':
			b.WriteRune(lookBacktick)
		case '*', '_', '~':
			if i > 0 && i+1 < len(rs) && isAlnum(rs[i-1]) && isAlnum(rs[i+1]) {
				b.WriteRune(r)
			} else {
				b.WriteRune(map[rune]rune{'*': lookStar, '_': lookUnder, '~': lookTilde}[r])
			}
		default:
			b.WriteRune(r)
		}
		if r != ' ' {
			lineStart = false
		}
	}
	return b.String()
}

func writeSlackEntity(b *strings.Builder, r rune) {
	switch r {
	case '&':
		b.WriteString("&amp;")
	case '<':
		b.WriteString("&lt;")
	case '>':
		b.WriteString("&gt;")
	default:
		b.WriteRune(r)
	}
}

// slackEntities escapes the three characters Slack wants escaped in any text,
// ours included.
func slackEntities(s string) string {
	if !strings.ContainsAny(s, "&<>") {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		writeSlackEntity(&b, r)
	}
	return b.String()
}

// lit prepares the package's own text (not user text) for flavor f: only
// Slack needs anything done to it.
func lit(f Flavor, s string) string {
	if f == Slack {
		return slackEntities(s)
	}
	return s
}

// The words after @ that notify a whole channel.
var (
	discordAll = []string{"everyone", "here"}
	slackAll   = []string{"channel", "here", "everyone"}
)

// defuseAt writes a zero-width space if rs[i:] starts with one of words (in
// any case), which splits "@everyone" into text that notifies nobody.
func defuseAt(b *strings.Builder, rs []rune, i int, words []string) {
	for _, w := range words {
		if hasPrefixFold(rs[i:], w) {
			b.WriteRune(zwsp)
			return
		}
	}
}

func hasPrefixFold(rs []rune, w string) bool {
	j := 0
	for _, c := range w {
		if j >= len(rs) || unicode.ToLower(rs[j]) != c {
			return false
		}
		j++
	}
	return true
}

func isAlnum(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// urlLen returns the length of the link starting at rs[i], or 0. A link is
// http:// or https:// (any case), not glued to a word before it, running to
// the next space, < or backtick. That is how far Discord takes a link, except
// that it goes on through backticks; stopping there keeps a backtick from
// opening a code span on any platform.
func urlLen(rs []rune, i int) int {
	if i > 0 && isAlnum(rs[i-1]) {
		return 0
	}
	var n int
	switch {
	case hasPrefixFold(rs[i:], "https://"):
		n = len("https://")
	case hasPrefixFold(rs[i:], "http://"):
		n = len("http://")
	default:
		return 0
	}
	start := n
	for i+n < len(rs) {
		r := rs[i+n]
		if unicode.IsSpace(r) || r == '<' || r == '`' || r == zwsp {
			break
		}
		n++
	}
	if n == start {
		return 0
	}
	return n
}

// Code shows s as an inline code span for flavor f, at most maxRunes
// characters (0: all of it): what a tool call would do, shown as it is, with
// nothing in it able to ping or format.
func Code(f Flavor, s string, maxRunes int) string {
	if maxRunes > 0 {
		s = clip(s, maxRunes)
	}
	return code(f, s)
}

// code makes s the content of an inline code span for flavor f and wraps it
// in backticks. Inside a span markdown is not interpreted, so nothing is
// backslash-escaped; what remains is that a backtick would close the span
// (it becomes ˋ), a newline would stretch it (it becomes a space), Slack
// still needs & < > escaped, and mentions still ping on Discord (a <@123>
// inside code notifies its user) and maybe on Slack.
func code(f Flavor, s string) string {
	rs := []rune(strings.ReplaceAll(clean(s), "\n", " "))
	var b strings.Builder
	b.WriteByte('`')
	for i, r := range rs {
		switch {
		case r == '`':
			b.WriteRune(lookBacktick)
		case f == Slack && (r == '&' || r == '<' || r == '>'):
			writeSlackEntity(&b, r)
		case f == Discord && r == '<':
			b.WriteRune(r)
			b.WriteRune(zwsp)
		default:
			b.WriteRune(r)
		}
		if r == '@' {
			switch f {
			case Discord:
				defuseAt(&b, rs, i+1, discordAll)
			case Slack:
				defuseAt(&b, rs, i+1, slackAll)
			}
		}
	}
	if len(rs) == 0 {
		b.WriteRune(zwsp) // `` is not a span; keep the pair balanced
	}
	b.WriteByte('`')
	return b.String()
}

// ForPlatform is the flavor a platform's messages are written in: room
// names start with the platform ("discord:123").
func ForPlatform(platform string) Flavor {
	switch platform {
	case "discord":
		return Discord
	case "slack":
		return Slack
	}
	return Plain
}
