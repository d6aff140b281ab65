package render

import (
	"slices"
	"testing"
)

func TestClusters(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   string
		want []string
	}{
		{"ascii", "ab", []string{"a", "b"}},
		{"zwj family", "a👨‍👩‍👧b", []string{"a", "👨‍👩‍👧", "b"}},
		{"flags pair up", "🇫🇷🇩🇪🇯", []string{"🇫🇷", "🇩🇪", "🇯"}},
		{"keycap", "1️⃣#️⃣", []string{"1️⃣", "#️⃣"}},
		{"skin tone", "👍🏽👋🏿", []string{"👍🏽", "👋🏿"}},
		{"vs16", "❤️!", []string{"❤️", "!"}},
		{"combining", "e\u0301a\u0308", []string{"e\u0301", "a\u0308"}},
		{"tag flag", "🏴\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007Fx", []string{"🏴\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F", "x"}},
		{"zwj profession", "🧑🏽‍💻", []string{"🧑🏽‍💻"}},
		{"newline alone", "a\n\u0301", []string{"a", "\n", "\u0301"}},
		{"hangul jamo", "\u1100\u1161\u11a8가", []string{"\u1100\u1161\u11a8", "가"}},
	} {
		if got := clusters(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("%s: clusters(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestClip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly ten", 11, "exactly ten"},
		{"a long task name here", 10, "a long ta…"},
		{"word then space", 10, "word then…"},
		{"ab👨‍👩‍👧cdef", 6, "ab…"}, // the family does not fit whole
		{"ab🇫🇷cdef", 5, "ab🇫🇷…"},
		{"日本語のタスク名前", 5, "日本語の…"},
	} {
		if got := clip(tc.in, tc.max); got != tc.want {
			t.Errorf("clip(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

func TestWidth(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"abc", 3},
		{"日本", 4},
		{"한국", 4},
		{"✅", 2},
		{"👨‍👩‍👧", 2},
		{"🇫🇷", 2},
		{"❤️", 2},
		{"❤", 1},
		{"e\u0301", 1},
		{"a\u200bb", 2},
		{"ｆｕｌｌ", 8},
		{"…", 1},
	} {
		if got := width(tc.in); got != tc.want {
			t.Errorf("width(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
