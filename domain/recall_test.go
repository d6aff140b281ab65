package domain_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/taskloom/taskloom/domain"
)

func TestRoomScope(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"discord:100":                "discord:100",
		"discord:100:200":            "discord:100",
		"slack:C1":                   "slack:C1",
		"slack:C1:1700000000.000100": "slack:C1",
		"slack:D1:1700000000.000100": "slack:D1",
		"console":                    "console",
		"":                           "",
		"a:b:c:d":                    "a:b",
		"slack:C1X":                  "slack:C1X",
		"discord::200":               "discord:",
	}
	for room, want := range tests {
		if got := domain.RoomScope(room); got != want {
			t.Errorf("RoomScope(%q) = %q; want %q", room, got, want)
		}
	}
}

// TestThreadRoom: a thread read by everyone who reads its channel is in
// the channel's scope; any other thread is a scope of its own, so what its
// members say is never recalled in the channel, where people who cannot
// read the thread would see it.
func TestThreadRoom(t *testing.T) {
	t.Parallel()
	tests := []struct {
		channel, thread string
		same            bool
		room, scope     string
	}{
		{"100", "200", true, "discord:100:200", "discord:100"},
		{"100", "200", false, "discord:200", "discord:200"},
		{"", "200", true, "discord:200", "discord:200"},
	}
	for _, tt := range tests {
		room := domain.ThreadRoom("discord", tt.channel, tt.thread, tt.same)
		if room != tt.room || domain.RoomScope(room) != tt.scope {
			t.Errorf("ThreadRoom(%q, %q, %v) = %q in scope %q; want %q in %q",
				tt.channel, tt.thread, tt.same, room, domain.RoomScope(room), tt.room, tt.scope)
		}
	}
}

func TestParsePerson(t *testing.T) {
	t.Parallel()
	if p, id, err := domain.ParsePerson("slack:U1:x"); err != nil || p != "slack" || id != "U1:x" {
		t.Errorf("ParsePerson = %q, %q, %v", p, id, err)
	}
	for _, bad := range []string{"", "u1", ":u1", "slack:", " slack:U1", "slack:U1\n"} {
		if _, _, err := domain.ParsePerson(bad); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("ParsePerson(%q) = %v; want ErrInvalid", bad, err)
		}
	}
}

// words is what a text says, whitespace aside.
func words(s string) string { return strings.Join(strings.Fields(s), " ") }

func TestSplitPassages(t *testing.T) {
	t.Parallel()
	short := "First paragraph.\n\nSecond paragraph, also short."
	if got := domain.SplitPassages(short); len(got) != 1 || got[0] != short {
		t.Errorf("short paragraphs: %q; want them together in one passage", got)
	}
	if got := domain.SplitPassages(" \n\n\t "); len(got) != 0 {
		t.Errorf("blank text: %q; want no passage", got)
	}
	sentence := "The quick brown fox jumps over the lazy dog near the river bank. "
	long := strings.Repeat(sentence, 40) // one paragraph of 40 sentences
	got := domain.SplitPassages(long)
	for _, p := range got {
		if !strings.HasPrefix(p, "The quick") || !strings.HasSuffix(p, "bank.") {
			t.Errorf("a long paragraph not split at sentences: %q", p)
		}
	}
	// A sentence with no end is split between words.
	endless := strings.Repeat("ünïcödé wörds ", 300)
	got = domain.SplitPassages(endless)
	if len(got) < 4 {
		t.Errorf("an endless sentence made %d passages; want about %d", len(got), len(endless)/domain.PassageChars)
	}
	for _, p := range got {
		for _, w := range strings.Fields(p) {
			if w != "ünïcödé" && w != "wörds" {
				t.Fatalf("a word was cut: %q", w)
			}
		}
	}
	// A blob with no spaces is cut, at rune boundaries, into passages
	// short enough to index.
	blob := strings.Repeat("é", 5*domain.PassageChars)
	got = domain.SplitPassages(blob)
	if strings.Join(got, "") != blob {
		t.Errorf("a blob's pieces do not make it up again")
	}
	for _, p := range got {
		if n := utf8.RuneCountInString(p); n > 2*domain.PassageChars || !utf8.ValidString(p) {
			t.Errorf("a blob piece of %d characters, valid %v", n, utf8.ValidString(p))
		}
	}
}

// TestSplitPassagesKeepsWords: on random texts no word is cut or lost, and
// passages are at most domain.PassageChars characters and not much
// shorter, but the last.
func TestSplitPassagesKeepsWords(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	vocab := []string{"a", "tea", "garden", "Kyoto", "naïve", "交差点", "résumé", "x", "supercalifragilistic"}
	for range 200 {
		var b strings.Builder
		for range r.IntN(3000) {
			b.WriteString(vocab[r.IntN(len(vocab))])
			switch r.IntN(20) {
			case 0:
				b.WriteString(". ")
			case 1:
				b.WriteString("\n\n")
			case 2:
				b.WriteString("? ")
			default:
				b.WriteString(" ")
			}
		}
		text := b.String()
		got := domain.SplitPassages(text)
		if words(strings.Join(got, " ")) != words(text) {
			t.Fatalf("passages of %q do not say what it says", text)
		}
		for i, p := range got {
			n := utf8.RuneCountInString(p)
			if n > domain.PassageChars {
				t.Fatalf("a passage of %d characters", n)
			}
			if i < len(got)-1 && n+utf8.RuneCountInString(got[i+1]) < domain.PassageChars/2 {
				t.Fatalf("two passages of %d and %d characters were not joined", n, utf8.RuneCountInString(got[i+1]))
			}
		}
	}
}
