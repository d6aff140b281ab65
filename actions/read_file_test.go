package actions_test

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/taskloom/taskloom/actions"
)

// nextRead finds the offset a read_file answer says to read on from.
var nextRead = regexp.MustCompile(`\n\[truncated: bytes (\d+) to (\d+) of (\d+); read on with read_file \{"path": "[^"]*", "offset": (\d+)\}\]$`)

// splitRead separates a read_file answer into the file's text and its
// closing note (empty when the whole file was read).
func splitRead(t *testing.T, text string) (page, note string) {
	t.Helper()
	i := strings.LastIndex(text, "\n[")
	if i < 0 {
		return text, ""
	}
	return text[:i], text[i:]
}

// TestReadFileParts reads parts of a file whose characters are 1, 2, 3 and
// 4 bytes long, with cuts asked for inside each.
func TestReadFileParts(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	// Bytes: a 0, b 1, é 2–3, 日 4–6, 😀 7–10, z 11; 12 in all.
	const text = "abé日😀z"
	write(t, k, "mb.txt", text)
	cases := []struct {
		name   string
		params map[string]any
		want   string // the answer, note included
	}{
		{"whole file, as before offset and limit", map[string]any{"path": "mb.txt"}, text},
		{"end inside é moves back", map[string]any{"path": "mb.txt", "limit": 3},
			"ab\n[truncated: bytes 0 to 2 of 12; read on with read_file {\"path\": \"mb.txt\", \"offset\": 2}]"},
		{"start inside é moves back", map[string]any{"path": "mb.txt", "offset": 3, "limit": 4},
			"é日\n[truncated: bytes 2 to 7 of 12; read on with read_file {\"path\": \"mb.txt\", \"offset\": 7}]"},
		{"both ends inside characters", map[string]any{"path": "mb.txt", "offset": 5, "limit": 4},
			"日\n[truncated: bytes 4 to 7 of 12; read on with read_file {\"path\": \"mb.txt\", \"offset\": 7}]"},
		{"start inside 😀, to the end", map[string]any{"path": "mb.txt", "offset": 9},
			"😀z\n[bytes 7 to 12 of 12: the end of the file]"},
		{"a limit smaller than the character", map[string]any{"path": "mb.txt", "offset": 7, "limit": 1},
			"😀\n[truncated: bytes 7 to 11 of 12; read on with read_file {\"path\": \"mb.txt\", \"offset\": 11}]"},
		{"the last byte", map[string]any{"path": "mb.txt", "offset": 11, "limit": 1}, "z\n[bytes 11 to 12 of 12: the end of the file]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ok, got := k.call("read_file", c.params)
			if !ok || got != c.want {
				t.Fatalf("read_file %v = %v %q, want %q", c.params, ok, got, c.want)
			}
			if !utf8.ValidString(got) {
				t.Fatalf("read_file %v split a character: %q", c.params, got)
			}
		})
	}
}

func TestReadFileRefusals(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	write(t, k, "mb.txt", "abé日😀z")
	write(t, k, "empty.txt", "")
	cases := []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"path": "mb.txt", "offset": 12}, "mb.txt has 12 bytes; there is nothing to read at offset 12."},
		{map[string]any{"path": "mb.txt", "offset": 99}, "mb.txt has 12 bytes; there is nothing to read at offset 99."},
		{map[string]any{"path": "empty.txt", "offset": 1}, "empty.txt has 0 bytes; there is nothing to read at offset 1."},
		{map[string]any{"path": "mb.txt", "offset": -1}, "The offset is -1; it counts bytes from the start of the file, from 0."},
		{map[string]any{"path": "mb.txt", "limit": 0}, "The limit is 0; read_file reads at least 1 byte."},
		{map[string]any{"path": "mb.txt", "offset": 1.5}, "The parameters are not valid"},
		{map[string]any{"path": "../mb.txt", "offset": 1}, "outside the task's workspace"},
		{map[string]any{"path": "/etc/passwd", "offset": 0, "limit": 10}, "outside the task's workspace"},
	}
	for _, c := range cases {
		if ok, got := k.call("read_file", c.params); ok || !strings.Contains(got, c.want) {
			t.Errorf("read_file %v = %v %q, want the refusal %q", c.params, ok, got, c.want)
		}
	}
	if ok, got := k.call("read_file", map[string]any{"path": "empty.txt"}); !ok || got != "" {
		t.Errorf("empty file: %v %q", ok, got)
	}
}

// TestReadFilePagesJoinUp follows the next offsets through a file of mixed
// 1- to 4-byte characters with several limits: the pages, joined, are the
// file, none is longer than its limit (but for a limit under one
// character), and none splits a character.
func TestReadFilePagesJoinUp(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	text := mixedText(200_000)
	write(t, k, "big.txt", text)
	for _, limit := range []int{0, 1, 2, 3, 5, 8000, 65_535} {
		t.Run("limit="+strconv.Itoa(limit), func(t *testing.T) {
			if limit > 0 && limit < 8000 {
				text := mixedText(2000) // small limits take many calls
				write(t, k, "small.txt", text)
				got := readAll(t, k, "small.txt", limit)
				if got != text {
					t.Fatalf("the pages joined differ from the file (%d bytes, want %d)", len(got), len(text))
				}
				return
			}
			if got := readAll(t, k, "big.txt", limit); got != text {
				t.Fatalf("the pages joined differ from the file (%d bytes, want %d)", len(got), len(text))
			}
		})
	}
}

// TestReadFileLimits: with no limit read_file reads MaxReadBytes, as it
// did before it took one; a limit past MaxReadLimit reads MaxReadLimit.
func TestReadFileLimits(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	write(t, k, "huge.txt", strings.Repeat("x", actions.MaxReadLimit+10))
	cases := []struct {
		params map[string]any
		bytes  int
	}{
		{map[string]any{"path": "huge.txt"}, actions.MaxReadBytes},
		{map[string]any{"path": "huge.txt", "limit": 5 * actions.MaxReadLimit}, actions.MaxReadLimit},
	}
	for _, c := range cases {
		ok, got := k.call("read_file", c.params)
		page, note := splitRead(t, got)
		if want := fmt.Sprintf(`"offset": %d}]`, c.bytes); !ok || len(page) != c.bytes || !strings.HasSuffix(note, want) {
			t.Errorf("read_file %v: %d bytes, note %q; want %d bytes and a note ending %q", c.params, len(page), note, c.bytes, want)
		}
	}
}

// readAll reads path in pages of limit bytes (0: the default), following
// each answer's next offset, and joins them.
func readAll(t *testing.T, k *kit, path string, limit int) string {
	t.Helper()
	var b strings.Builder
	offset := 0
	for calls := 0; ; calls++ {
		if calls > 10_000 {
			t.Fatal("read_file never reached the end")
		}
		params := map[string]any{"path": path, "offset": offset}
		if limit > 0 {
			params["limit"] = limit
		}
		ok, got := k.call("read_file", params)
		if !ok {
			t.Fatalf("read_file %v: %s", params, got)
		}
		page, note := splitRead(t, got)
		if !utf8.ValidString(page) {
			t.Fatalf("read_file %v split a character", params)
		}
		if capacity := cmp.Or(limit, actions.MaxReadBytes); len(page) > max(capacity, utf8.UTFMax) {
			t.Fatalf("read_file %v returned %d bytes", params, len(page))
		}
		b.WriteString(page)
		m := nextRead.FindStringSubmatch(note)
		if m == nil {
			if offset > 0 && !strings.HasPrefix(note, "\n[bytes ") {
				t.Fatalf("the last page's note is %q", note)
			}
			return b.String()
		}
		next, _ := strconv.Atoi(m[4])
		if from, _ := strconv.Atoi(m[1]); from != offset {
			t.Fatalf("asked from %d, the note says from %d", offset, from)
		}
		if next <= offset {
			t.Fatalf("read_file %v did not move on: next offset %d", params, next)
		}
		offset = next
	}
}

// write puts a file in the kit's iteration, as write_file would, without
// write_file's limit on one call.
func write(t *testing.T, k *kit, path, text string) {
	t.Helper()
	if err := k.files.Write(context.Background(), path, []byte(text)); err != nil {
		t.Fatal(err)
	}
}

// mixedText returns about n bytes of text mixing characters of every UTF-8
// length, so any cut can fall inside one.
func mixedText(n int) string {
	const alphabet = "ab é 日本 😀\n ü ç 中 🎉 x"
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(alphabet)
		b.WriteString(strconv.Itoa(b.Len()))
	}
	return b.String()
}
