package render

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestVisible runs Visible over the table of cases in
// testdata/visible.json, which the dashboard's twin must pass too
// (adapters/httpapi). A person deciding on a call sees every character
// that will run: nothing prints blank, no run pushes the rest away, no
// letter passes for one of another script.
func TestVisible(t *testing.T) {
	t.Parallel()
	for _, tc := range visibleCases(t) {
		if got := Visible(tc.In); got != tc.Want {
			t.Errorf("%s: Visible(%+q)\n got %s\nwant %s", tc.Name, shortened(tc.In), shortened(got), shortened(tc.Want))
		}
	}
	// Bytes that are not UTF-8 cannot be written in JSON.
	for in, want := range map[string]string{"a\xffb": "a⟨0xFF⟩b", "\xff\xfe\xff\xff": "⟨0xFF⟩⟨0xFE⟩⟨0xFF⟩⟨0xFF⟩", "\uFFFD\xff": "\uFFFD⟨0xFF⟩"} {
		if got := Visible(in); got != want {
			t.Errorf("Visible(%q) = %q, want %q", in, got, want)
		}
	}
}

func shortened(s string) string {
	if rs := []rune(s); len(rs) > 200 {
		return string(rs[:100]) + "…" + string(rs[len(rs)-100:])
	}
	return s
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
