package render

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestVisible(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, want string
	}{
		{"plain text", `run_command {"command":"ls -la"}`, `run_command {"command":"ls -la"}`},
		{"short runs stay", "a  b   c", "a  b   c"},
		{"a long run is counted", "echo ok" + strings.Repeat(" ", 2600) + "; rm -rf x", "echo ok␠×2600; rm -rf x"},
		{"four is long", "a    b", "a␠×4b"},
		{"newlines and tabs", "a\nb\tc\n\n\n\nd", "a↵b⇥c↵×4d"},
		{"control characters", "a\x1b[31mb\x00c\rd\x7f", "a⟨U+001B⟩[31mb⟨U+0000⟩c⟨U+000D⟩d⟨U+007F⟩"},
		{"bidirectional overrides", "echo \u202eevil\u202c \u2066x\u2069", "echo ⟨U+202E⟩evil⟨U+202C⟩ ⟨U+2066⟩x⟨U+2069⟩"},
		{"zero-width characters", "r\u200bm \ufeff-rf", "r⟨U+200B⟩m ⟨U+FEFF⟩-rf"},
		{"other spaces", "a\u00a0b" + strings.Repeat("\u3000", 5), "a⟨U+00A0⟩b⟨U+3000⟩×5"},
		{"invalid UTF-8", "a\xffb", "a⟨0xFF⟩b"},
		{"runs of different spaces", "a  \n\n  b", "a  ↵↵  b"},
	} {
		if got := Visible(tc.in); got != tc.want {
			t.Errorf("%s: Visible(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

// A call padded to push its payload out of sight shows the payload in
// every flavor, and a call longer than one message is split with nothing
// lost.
func TestCallShowsAllOfIt(t *testing.T) {
	t.Parallel()
	params := `{"command":"echo harmless-looking` + strings.Repeat(" ", 2600) + `; echo PAYLOAD > file"}`
	for _, f := range []Flavor{Plain, Discord, Slack} {
		got := Call(f, "run_command", params)
		if !strings.Contains(got, "␠×2600; echo PAYLOAD") {
			t.Errorf("%v: Call hides the payload: %q", f, got)
		}
		if n := utf8.RuneCountInString(got); n > 200 {
			t.Errorf("%v: Call is %d characters, want the padding collapsed", f, n)
		}
	}
	long := `{"command":"` + strings.Repeat("printf x; ", 500) + `echo END"}`
	parts := Split("🔐 wants to run "+Call(Discord, "run_command", long), DiscordLimit)
	if len(parts) < 2 {
		t.Fatalf("a 5,000-character call is %d part(s), want several", len(parts))
	}
	if !strings.Contains(parts[len(parts)-1], "echo END") {
		t.Errorf("the last part does not end the call: %q", parts[len(parts)-1])
	}
	if n := strings.Count(strings.Join(parts, ""), "x;"); n != 500 {
		t.Errorf("the parts show %d of the 500 commands", n)
	}
}
