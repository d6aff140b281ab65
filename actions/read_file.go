package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// MaxReadBytes is how much read_file returns when the call gives no limit:
// the cap it had before offset and limit existed, so a call written then
// still reads what it read.
const MaxReadBytes = 64 << 10

// MaxReadLimit is the largest limit read_file takes. It leaves room under
// domain.MaxResultBytes for the closing note, so the step keeps a whole
// read and read_result can page through it.
const MaxReadLimit = 1_000_000

// ReadFile reads a file, or a part of one, of the calling task, as its
// iteration sees it (its own writes included).
type ReadFile struct{}

var _ plugin.Action = ReadFile{}

func (ReadFile) Info() plugin.ActionInfo {
	return plugin.ActionInfo{
		Name: "read_file",
		Description: "Read a text file from the task's workspace: at most limit bytes (default 65536, at most 1000000) from byte offset (default 0). " +
			"A part never starts or ends inside a character; when more is left, the answer ends with the file's size and the next offset.",
		Examples:   []string{`{"path":"notes/plan.md"}`, `{"path":"data/big.csv","offset":65536,"limit":8000}`},
		Parameters: schema(`{"type":"object","additionalProperties":false,"required":["path"],"properties":{"path":{"type":"string"},"offset":{"type":"integer","minimum":0,"description":"bytes to skip from the start of the file"},"limit":{"type":"integer","minimum":1,"maximum":1000000,"description":"bytes to read at most"}}}`),
		Tool:       true,
		TaskOnly:   true,
	}
}

func (ReadFile) Handle(ctx context.Context, call *plugin.Call) (plugin.Result, error) {
	_, files, refused := filesOf(call)
	if refused != nil {
		return *refused, nil
	}
	var p struct {
		Path   string `json:"path"`
		Offset *int64 `json:"offset"`
		Limit  *int64 `json:"limit"`
	}
	if r := decode(call.Params, &p); r != nil {
		return *r, nil
	}
	offset, limit := int64(0), int64(MaxReadBytes)
	if p.Offset != nil {
		if *p.Offset < 0 {
			return fail("The offset is %d; it counts bytes from the start of the file, from 0.", *p.Offset)
		}
		offset = *p.Offset
	}
	if p.Limit != nil {
		if *p.Limit < 1 {
			return fail("The limit is %d; read_file reads at least 1 byte.", *p.Limit)
		}
		limit = min(*p.Limit, MaxReadLimit)
	}
	rel, err := cleanRel(p.Path)
	if err != nil {
		return fail("Cannot read: %v.", err)
	}
	data, err := files.Read(ctx, rel)
	if errors.Is(err, domain.ErrNoFile) {
		if isFolder(ctx, files, rel) {
			return fail("%s is a folder; use list_files.", rel)
		}
		return fail("Cannot read %s: there is no such file.", rel)
	}
	if err != nil {
		if why, ok := fileRefusal(err); ok {
			return fail("Cannot read %s: %s.", rel, why)
		}
		return plugin.Result{}, fmt.Errorf("read_file %s: %w", rel, err)
	}
	size := int64(len(data))
	if offset > 0 && offset >= size {
		return fail("%s has %d bytes; there is nothing to read at offset %d.", rel, size, offset)
	}
	// Take a few bytes on either side of [offset, offset+limit) to move
	// both cuts back to the start of a character (or, for a limit smaller
	// than one, forward past it).
	lo := max(0, offset-(utf8.UTFMax-1))
	hi := min(size, offset+limit+utf8.UTFMax)
	buf := data[lo:hi]
	start, end := runeWindow(buf, int(offset-lo), int(min(offset+limit-lo, int64(len(buf)))))
	text := string(buf[start:end])
	from, to := lo+int64(start), lo+int64(end)
	switch {
	case to < size:
		text += fmt.Sprintf("\n[truncated: bytes %d to %d of %d; read on with read_file {\"path\": %s, \"offset\": %d}]", from, to, size, jsonString(rel), to)
	case from > 0:
		text += fmt.Sprintf("\n[bytes %d to %d of %d: the end of the file]", from, to, size)
	}
	return plugin.Result{Success: true, Text: text}, nil
}

// isFolder reports whether the task has files inside a folder named rel.
func isFolder(ctx context.Context, files domain.Files, rel string) bool {
	all, err := files.List(ctx)
	if err != nil {
		return false
	}
	for _, f := range all {
		if strings.HasPrefix(f.Path, rel+"/") {
			return true
		}
	}
	return false
}

// runeWindow moves the cuts start and end of buf back to the start of the
// UTF-8 sequence each falls in; a cut at len(buf) stays. Text that is not
// UTF-8 is cut where asked. When moving end back would leave nothing (a
// limit smaller than the character at start), end moves forward past that
// character instead, so every read makes progress.
func runeWindow(buf []byte, start, end int) (int, int) {
	start = runeStartAt(buf, start)
	if end >= len(buf) {
		return start, len(buf)
	}
	if e := runeStartAt(buf, end); e > start {
		return start, e
	}
	if _, size := utf8.DecodeRune(buf[start:]); size > 0 && start+size <= len(buf) {
		return start, start + size
	}
	return start, end
}

// runeStartAt returns the start of the UTF-8 sequence holding buf[i], or
// i when none is found within utf8.UTFMax-1 bytes before it.
func runeStartAt(buf []byte, i int) int {
	if i >= len(buf) {
		return len(buf)
	}
	j := i
	for j > 0 && i-j < utf8.UTFMax-1 && !utf8.RuneStart(buf[j]) {
		j--
	}
	if !utf8.RuneStart(buf[j]) {
		return i
	}
	return j
}

// jsonString quotes s as a JSON string, for a call the model can copy.
func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Sprintf("%q", s)
	}
	return string(b)
}
