package cli_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/cli"
	"github.com/taskloom/taskloom/internal/testkit"
)

// terminal is an output that says it is a terminal, as os.Stdout on one
// does.
type terminal struct{ bytes.Buffer }

func (*terminal) IsTerminal() bool { return true }

func TestTerminalSafe(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"text, newlines and tabs", "plain\ttext\nhéllo — ✓ 日本\n", "plain\ttext\nhéllo — ✓ 日本\n"},
		{"clear the screen, set the title", "\x1b[2J\x1b]0;pwned\x07", `\x1b[2J\x1b]0;pwned\x07`},
		{"carriage return and DEL", "shown\rhidden\x7f", `shown\x0dhidden\x7f`},
		{"NUL and backspace", "a\x00b\x08", `a\x00b\x08`},
		{"a C1 control in UTF-8", "\u009b31m", `\u009b31m`},
		{"a C1 control as a lone byte", "\x9b31m", `\x9b31m`},
		{"not UTF-8", "caf\xe9 \xff", `caf\xe9 \xff`},
		{"right-to-left override", "invoice\u202efdp.exe", `invoice\u202efdp.exe`},
		{"every embedding and override", "\u202a\u202b\u202c\u202d\u202e", `\u202a\u202b\u202c\u202d\u202e`},
		{"isolates", "\u2066a\u2067b\u2068c\u2069", `\u2066a\u2067b\u2068c\u2069`},
		{"a backslash is left alone", `C:\temp\x1b`, `C:\temp\x1b`},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		if got := string(cli.TerminalSafe([]byte(tt.in))); got != tt.want {
			t.Errorf("%s: TerminalSafe(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

// TestFilesOnATerminal: a file whose bytes would drive a terminal is
// shown with them made visible on one; --raw, a pipe or a redirection
// get the bytes as they are.
func TestFilesOnATerminal(t *testing.T) {
	const content = "title\x1b]0;pwned\x07 \u202etxt.exe\nline 2\r\n"
	const escaped = `title\x1b]0;pwned\x07 \u202etxt.exe` + "\n" + `line 2\x0d` + "\n"
	model := testkit.NewScriptedModel().
		Decide("write_file", map[string]string{"path": "notes.txt", "content": content}, 40, "continue").
		Decide("write_file", map[string]string{"path": "invoice\u202etxt.exe", "content": "x"}, 60, "continue")
	s := newServer(t, model, "")
	if _, err := s.tasks.Create(s.ctx, domain.NewTask{Goal: "Write the notes", RequestorID: "u1", Actor: "u1", Now: t0}); err != nil {
		t.Fatal(err)
	}
	s.step()
	s.step()

	tests := []struct {
		name string
		tty  bool
		args []string
		want string
	}{
		{"a terminal", true, nil, escaped},
		{"a terminal, --raw", true, []string{"--raw"}, content},
		{"a pipe", false, nil, content},
		{"a pipe, --raw", false, []string{"--raw"}, content},
	}
	for _, tt := range tests {
		var out interface {
			String() string
			Write([]byte) (int, error)
		} = &bytes.Buffer{}
		if tt.tty {
			out = &terminal{}
		}
		var errOut bytes.Buffer
		args := append([]string{"files", "1", "notes.txt"}, tt.args...)
		if code := cli.Run(context.Background(), args, s.env, out, &errOut); code != 0 {
			t.Fatalf("%s: taskloom tasks %q = %d: %s", tt.name, args, code, errOut.String())
		}
		if got := out.String(); got != tt.want {
			t.Errorf("%s: wrote %q, want %q", tt.name, got, tt.want)
		}
	}
	// A redirection to a file gets the bytes as they are.
	f, err := os.Create(filepath.Join(t.TempDir(), "notes.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if code := cli.Run(context.Background(), []string{"files", "1", "notes.txt"}, s.env, f, io.Discard); code != 0 {
		t.Fatalf("files to a file = %d", code)
	}
	if got, err := os.ReadFile(f.Name()); err != nil || string(got) != content {
		t.Errorf("redirected to a file: %q %v, want %q", got, err, content)
	}
	// The listing is for people: a path that would reorder its line is
	// shown made visible wherever it goes.
	if code, out, errOut := run(t, s.env, "files", "1"); code != 0 || !strings.Contains(out, `invoice\u202etxt.exe`) || strings.ContainsRune(out, '\u202e') {
		t.Errorf("files 1 = %d, listing:\n%s%s", code, out, errOut)
	}
}
