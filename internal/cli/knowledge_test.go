package cli_test

import (
	"testing"

	"github.com/taskloom/taskloom/internal/cli"
)

// TestTitleOf: a document's title is its first Markdown heading, else its
// file's name without the extension.
func TestTitleOf(t *testing.T) {
	for _, tc := range []struct{ path, text, want string }{
		{"docs/runbook.md", "intro\n\n## Restarting the queue ##\n# Later", "Restarting the queue"},
		{"notes/oncall.txt", "Ann is on call on Fridays.", "oncall"},
		{"x/notes.md", "#hashtag is no heading\n#\n####### nor seven\n### C# ###", "C#"},
		{"plain", "no heading", "plain"},
	} {
		if got := cli.TitleOf(tc.path, tc.text); got != tc.want {
			t.Errorf("TitleOf(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}
