package cli

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// taskFile is one entry of GET /api/tasks/{n}/files.
type taskFile struct {
	Path      string    `json:"path"`
	Size      int64     `json:"size"`
	SHA256    string    `json:"sha256"`
	UpdatedAt time.Time `json:"updated_at"`
}

// files lists a task's files, or with a path prints one file's bytes:
// `taskloom tasks files 3`, `taskloom tasks files 3 notes/plan.md`. A
// file is written to a terminal with its control characters made
// visible (see terminalSafe), since a task's files are written by a model
// and the tools it ran, and an escape sequence in them could rewrite the
// screen or the terminal's title, or hide text; --raw, or any output that
// is not a terminal (a pipe, a file), gets the bytes as they are.
func (r *runner) files(pos []string) error {
	if len(pos) == 0 || len(pos) > 2 {
		return usagef("files takes a task number and, if you like, a path, e.g. `taskloom tasks files 3 notes/plan.md`")
	}
	n, err := number(pos[:1], "files")
	if err != nil {
		return err
	}
	if err := r.connect(); err != nil {
		return err
	}
	if len(pos) == 2 {
		segs := strings.Split(pos[1], "/")
		for i, s := range segs {
			segs[i] = url.PathEscape(s)
		}
		raw, err := r.c.call(r.ctx, "GET", fmt.Sprintf("/api/tasks/%d/files/%s", n, strings.Join(segs, "/")), nil, nil)
		if err != nil {
			return err
		}
		if !r.raw && isTerminal(r.out) {
			raw = terminalSafe(raw)
		}
		_, err = r.out.Write(raw)
		return err
	}
	var body struct {
		Files []taskFile `json:"files"`
	}
	raw, err := r.c.call(r.ctx, "GET", fmt.Sprintf("/api/tasks/%d/files", n), nil, &body)
	if err != nil {
		return err
	}
	if r.json {
		return r.printJSON(raw)
	}
	if len(body.Files) == 0 {
		_, err := fmt.Fprintf(r.out, "Task #%d has no files.\n", n)
		return err
	}
	tw := tabwriter.NewWriter(r.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tSIZE\tUPDATED")
	for _, f := range body.Files {
		// A path has no control characters, but may have a
		// bidirectional override that reorders the line.
		path := string(terminalSafe([]byte(f.Path)))
		fmt.Fprintf(tw, "%s\t%s\t%s\n", path, strconv.FormatInt(f.Size, 10), f.UpdatedAt.Local().Format("2006-01-02 15:04:05"))
	}
	return tw.Flush()
}

// terminalSafe returns b with everything a terminal would act on rather
// than show written out visibly, and the rest as it is:
//
//   - C0 controls but newline and tab, and DEL: \x1b, \x0d, \x7f;
//   - C1 controls (U+0080–U+009F): \u009b;
//   - bidirectional embeddings, overrides and isolates (U+202A–U+202E,
//     U+2066–U+2069), which reorder what follows them: \u202e;
//   - a byte that is not part of valid UTF-8: \xHH, since a terminal in
//     an 8-bit mode reads a lone 0x9b as the start of a control sequence.
//
// A backslash already in the file is left as it is: --raw tells the two
// apart.
func terminalSafe(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		switch {
		case r == utf8.RuneError && size <= 1:
			out = fmt.Appendf(out, `\x%02x`, b[0])
		case r == '\n' || r == '\t':
			out = append(out, b[:size]...)
		case r < 0x20 || r == 0x7f:
			out = fmt.Appendf(out, `\x%02x`, r)
		case r >= 0x80 && r <= 0x9f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, b[:size]...)
		}
		b = b[size:]
	}
	return out
}
