package render

import (
	"regexp"
	"strings"
	"testing"
)

const z = "\u200b" // zero-width space, as the escapes insert it

func TestEscape(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		f    Flavor
		in   string
		want string
	}{
		// Every flavor cleans.
		{"plain keeps markup", Plain, "@everyone <@123> *b* <!channel> & `x`", "@everyone <@123> *b* <!channel> & `x`"},
		{"plain controls", Plain, "a\r\nb\rc\td\x00e\x1b[31mf\u202eg\u0085h", "a\nb\nc de[31mfgh"},
		{"plain keeps newlines and emoji", Plain, "one\ntwo 👨‍👩‍👧 🇫🇷", "one\ntwo 👨‍👩‍👧 🇫🇷"},
		{"plain invalid utf8", Plain, "a\xffb", "a\ufffdb"},
		{"discord cleans too", Discord, "a\r\nb\x07", "a\nb"},
		{"slack cleans too", Slack, "a\r\nb\x07", "a\nb"},

		// Discord.
		{"discord everyone", Discord, "@everyone hello", "@" + z + "everyone hello"},
		{"discord here", Discord, "ping @here now", "ping @" + z + "here now"},
		{"discord any case", Discord, "@EveryOne @HERE", "@" + z + "EveryOne @" + z + "HERE"},
		{"discord plain at", Discord, "mail me@example.com @bob", "mail me@example.com @bob"},
		{"discord user mention", Discord, "<@123>", "<" + z + "@123\\>"},
		{"discord nick mention", Discord, "<@!123>", "<" + z + "@!123\\>"},
		{"discord role mention", Discord, "<@&123>", "<" + z + "@&123\\>"},
		{"discord channel mention", Discord, "<#123>", "<" + z + "#123\\>"},
		{"discord slash mention", Discord, "</task:42>", "<" + z + "/task:42\\>"},
		{"discord markdown", Discord, `*b* _i_ ~~s~~ ` + "`c`" + ` ||sp|| > q \ [x](y)`,
			`\*b\* \_i\_ \~\~s\~\~ \` + "`c\\`" + ` \|\|sp\|\| \> q \\ \[x](y)`},
		{"discord heading at line start", Discord, "# Title\n  ## sub\n-# small\nnot # here", "\\# Title\n  \\## sub\n-\\# small\nnot # here"},
		{"discord link kept", Discord, "see https://ex.com/a_b*c?x=1|2 and _x_", "see https://ex.com/a_b*c?x=1|2 and \\_x\\_"},
		{"discord link everyone", Discord, "https://x.com/@everyone", "https://x.com/@" + z + "everyone"},
		{"discord link ends at <", Discord, "https://x.com<@1>", "https://x.com<" + z + "@1\\>"},
		{"discord glued scheme is text", Discord, "xhttps://a_b", "xhttps://a\\_b"},
		{"discord hostile", Discord, "@everyone <@123> *bold* <!channel> & friends",
			"@" + z + "everyone <" + z + "@123\\> \\*bold\\* <" + z + "!channel\\> & friends"},

		// Slack.
		{"slack entities", Slack, "a < b > c & d", "a &lt; b &gt; c &amp; d"},
		{"slack special mentions", Slack, "<!channel> <!here> <@U123> <#C1|x>", "&lt;!channel&gt; &lt;!here&gt; &lt;@U123&gt; &lt;#C1|x&gt;"},
		{"slack at words", Slack, "@channel @here @everyone @Channel @bob", "@" + z + "channel @" + z + "here @" + z + "everyone @" + z + "Channel @bob"},
		{"slack mrkdwn", Slack, "*bold* _it_ ~s~ `code`", "∗bold∗ ˍitˍ ∼s∼ ˋcodeˋ"},
		{"slack intraword kept", Slack, "snake_case_name 2*3 a~b", "snake_case_name 2*3 a~b"},
		{"slack edges replaced", Slack, "_x x_ *", "ˍx xˍ ∗"},
		{"slack quote at line start", Slack, "> quote\n  > again\na > b", z + "&gt; quote\n  " + z + "&gt; again\na &gt; b"},
		{"slack link", Slack, "https://x.com/_next/a?b=1&c=2 _y_", "https://x.com/_next/a?b=1&amp;c=2 ˍyˍ"},
		{"slack hostile", Slack, "@everyone <@123> *bold* <!channel> & friends",
			"@" + z + "everyone &lt;@123&gt; ∗bold∗ &lt;!channel&gt; &amp; friends"},
	} {
		if got := Escape(tc.f, tc.in); got != tc.want {
			t.Errorf("%s: Escape(%v, %q)\n got %q\nwant %q", tc.name, tc.f, tc.in, got, tc.want)
		}
	}
}

// hostile is text written to ping people and break formatting.
var hostile = []string{
	"@everyone hello",
	"@here <@123> <@!123> <@&456> <#789> <!channel> <!here> <!everyone> <@U0123|bob>",
	"*bold* **b** _i_ __u__ ~~s~~ ||spoiler|| `code` ```block``` > quote >>> all",
	"# heading\n-# subtext\n> quote\n[link](https://evil.example)",
	"https://x.example/@everyone <https://y.example> a&b &amp;",
	"\\<@123> \\@everyone @\u200beveryone @@everyone",
}

// TestEscapeHostile checks properties rather than exact strings: whatever the
// input, the escaped text holds no working mention and no live markup.
func TestEscapeHostile(t *testing.T) {
	t.Parallel()
	discordMention := regexp.MustCompile(`<[@#/:!t]|(?i)@(everyone|here)`)
	slackMention := regexp.MustCompile(`[<>]|(?i)@(channel|here|everyone)`)
	slackMarkup := regexp.MustCompile("[*_~`]")
	for _, in := range hostile {
		d := Escape(Discord, in)
		if m := discordMention.FindString(d); m != "" {
			t.Errorf("Discord: %q escapes to %q, which still has %q", in, d, m)
		}
		// Outside links, every markdown character is escaped by a backslash.
		rs := []rune(d)
		for i := 0; i < len(rs); i++ {
			if n := urlLen(rs, i); n > 0 {
				i += n - 1
				continue
			}
			if rs[i] == '\\' {
				i++
				continue
			}
			if strings.ContainsRune("*_~`|>[", rs[i]) {
				t.Errorf("Discord: %q escapes to %q: unescaped %q at rune %d", in, d, rs[i], i)
			}
		}

		s := Escape(Slack, in)
		if m := slackMention.FindString(s); m != "" {
			t.Errorf("Slack: %q escapes to %q, which still has %q", in, s, m)
		}
		if strings.Contains(s, "&") && strings.Contains(strings.NewReplacer("&amp;", "", "&lt;", "", "&gt;", "").Replace(s), "&") {
			t.Errorf("Slack: %q escapes to %q with a bare &", in, s)
		}
		for _, line := range strings.Split(s, "\n") {
			if strings.HasPrefix(strings.TrimLeft(line, " "), "&gt;") {
				t.Errorf("Slack: line %q still starts a quote", line)
			}
		}
		noLinks := regexp.MustCompile(`https?://\S+`).ReplaceAllString(s, "")
		for _, m := range slackMarkup.FindAllStringIndex(noLinks, -1) {
			before, _ := lastRune(noLinks[:m[0]])
			after, _ := firstRune(noLinks[m[1]:])
			if noLinks[m[0]] == '`' || !isAlnum(before) || !isAlnum(after) {
				t.Errorf("Slack: %q escapes to %q: live %q at byte %d", in, s, noLinks[m[0]], m[0])
			}
		}
	}
}

func lastRune(s string) (rune, bool) {
	rs := []rune(s)
	if len(rs) == 0 {
		return 0, false
	}
	return rs[len(rs)-1], true
}

func firstRune(s string) (rune, bool) {
	for _, r := range s {
		return r, true
	}
	return 0, false
}

func TestCode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		f        Flavor
		in, want string
	}{
		{Plain, "write_file src/a.ts", "`write_file src/a.ts`"},
		{Plain, "run_command echo `id`", "`run_command echo ˋidˋ`"},
		{Plain, "a\nb", "`a b`"},
		{Plain, "", "`" + z + "`"},
		{Discord, "read_file *x*_y_ \\", "`read_file *x*_y_ \\`"},
		{Discord, "post_message <@123> @everyone `x`", "`post_message <" + z + "@123> @" + z + "everyone ˋxˋ`"},
		{Slack, "http_get https://a.example/?a=1&b=<2>", "`http_get https://a.example/?a=1&amp;b=&lt;2&gt;`"},
		{Slack, "post_message <!channel> @here `x`", "`post_message &lt;!channel&gt; @" + z + "here ˋxˋ`"},
	} {
		if got := code(tc.f, tc.in); got != tc.want {
			t.Errorf("code(%v, %q) = %q, want %q", tc.f, tc.in, got, tc.want)
		}
	}
}

func TestLit(t *testing.T) {
	t.Parallel()
	in := "`create task <goal>` & co"
	for f, want := range map[Flavor]string{
		Plain:   in,
		Discord: in,
		Slack:   "`create task &lt;goal&gt;` &amp; co",
	} {
		if got := lit(f, in); got != want {
			t.Errorf("lit(%v) = %q, want %q", f, got, want)
		}
	}
}
