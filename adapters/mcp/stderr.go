package mcp

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"unicode/utf8"
)

// Bounds of what a stdio server writes to its stderr: a line logged is cut
// at maxStderrLine bytes, and the last stderrTail bytes are kept to say
// why a server did not start or ended.
const (
	maxStderrLine = 500
	stderrTail    = 1000
)

// stderrLog is a stdio server's stderr: each line is logged at debug
// level, and the last ones are kept.
type stderrLog struct {
	log    *slog.Logger
	server string

	mu      sync.Mutex
	partial []byte // a line not ended yet
	tail    []byte
}

// Write implements io.Writer.
func (w *stderrLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tail = append(w.tail, p...)
	if len(w.tail) > stderrTail {
		w.tail = w.tail[len(w.tail)-stderrTail:]
	}
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.logLine(w.partial[:i])
		w.partial = w.partial[i+1:]
	}
	if len(w.partial) > maxStderrLine {
		w.logLine(w.partial)
		w.partial = nil
	}
	return len(p), nil
}

func (w *stderrLog) logLine(line []byte) {
	if len(line) > maxStderrLine {
		line = line[:maxStderrLine]
	}
	if s := strings.TrimSpace(strings.ToValidUTF8(string(line), "\uFFFD")); s != "" {
		w.log.Debug("MCP server stderr", "mcp_server", w.server, "line", s)
	}
}

// said is what the server last wrote to stderr, as a clause to end an
// error with ("; its stderr ends: …"), or "" when it wrote nothing (or is
// not a stdio server).
func (w *stderrLog) said() string {
	if last := w.last(); last != "" {
		return "; its stderr ends: " + last
	}
	return ""
}

// last is the end of what the server wrote to stderr, on one line.
func (w *stderrLog) last() string {
	if w == nil {
		return ""
	}
	w.mu.Lock()
	tail := string(w.tail)
	w.mu.Unlock()
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) { // from a whole character
		tail = tail[1:]
	}
	return strings.Join(strings.Fields(strings.ToValidUTF8(tail, "\uFFFD")), " ")
}
