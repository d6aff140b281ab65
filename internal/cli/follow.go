package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/taskloom/taskloom/internal/render"
)

// maxReconnects bounds how often --follow reconnects a dropped stream
// before it gives up.
const maxReconnects = 5

// A server keeps a bounded number of event streams open and refuses one
// more with 503 and Retry-After. --follow then waits as long as it asks
// (defaultBusyWait when it does not say, at most maxBusyWait) and tries
// again, up to maxBusyWaits times in a row.
const (
	maxBusyWaits    = 10
	defaultBusyWait = 2 * time.Second
	maxBusyWait     = time.Minute
)

// sleep waits for d or until ctx is done; tests replace it.
var sleep = func(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// follower prints a task's events and, with --follow, keeps its progress
// bar up to date from the event stream until the task ends.
type follower struct {
	r    *runner
	task task
	tty  bool

	lastID   string // the global ID of the last event printed
	progress int    // the progress before the next event, for its delta
	barShown bool   // on a terminal: the bar is the current line
	lastBar  string
}

func (f *follower) history(raw json.RawMessage) error {
	var e event
	if err := json.Unmarshal(raw, &e); err != nil {
		return fmt.Errorf("an event of task #%d is not what this client understands: %w", f.task.Number, err)
	}
	f.lastID = strconv.FormatInt(e.ID, 10)
	f.print(e, raw)
	return nil
}

func (f *follower) print(e event, raw []byte) {
	out := f.r.out
	if f.r.json {
		var b bytes.Buffer
		if json.Compact(&b, raw) == nil {
			b.WriteByte('\n')
			out.Write(b.Bytes())
		}
		return
	}
	if f.tty && f.barShown {
		fmt.Fprint(out, "\r\033[K")
		f.barShown = false
	}
	fmt.Fprintln(out, eventLine(e, f.progress))
	if raw, ok := e.Payload.Changes["progress"]; ok {
		_ = json.Unmarshal(raw, &f.progress)
	}
}

// drawBar shows the task's progress line: redrawn in place on a terminal,
// a new line when it changed otherwise.
func (f *follower) drawBar() {
	if f.r.json {
		return
	}
	t := f.task
	line := fmt.Sprintf("#%d %s  %s  %s", t.Number, bar(t.Progress), startedStatus(t), "iteration "+iterations(t))
	switch {
	case f.tty:
		fmt.Fprint(f.r.out, "\r\033[K"+line)
		f.barShown = true
	case line != f.lastBar:
		fmt.Fprintln(f.r.out, line)
	}
	f.lastBar = line
}

// follow streams the task's events until it ends.
func (f *follower) follow() error {
	ctx := f.r.ctx
	n := f.task.Number
	f.drawBar()
	if terminal(f.task.Status) {
		f.finish()
		return nil
	}
	query := fmt.Sprintf("?task=%d", n)
	busy := 0 // 503s in a row
	for attempt := 0; ; {
		last, done, err := f.r.c.events(ctx, query, f.lastID, func(ev sseEvent) bool {
			if ev.Event != "" { // "ready" and any other kind: not a task event
				return false
			}
			var e event
			if json.Unmarshal([]byte(ev.Data), &e) != nil || e.TaskNumber != n {
				return false
			}
			f.print(e, []byte(ev.Data))
			f.task.apply(e.Payload.Changes)
			f.drawBar()
			return terminal(f.task.Status)
		})
		if last != "" {
			f.lastID = last
		}
		if done {
			f.finish()
			return nil
		}
		var ae *apiError
		switch {
		case ctx.Err() != nil:
			f.endLine()
			return ctx.Err()
		case errors.As(err, &ae) && ae.Status == http.StatusServiceUnavailable:
			// The server has no room for another stream just now.
			if busy++; busy > maxBusyWaits {
				f.endLine()
				return fmt.Errorf("follow task #%d: the server refused the event stream %d times in a row: %w", n, busy, err)
			}
			wait := ae.RetryAfter
			if wait <= 0 {
				wait = defaultBusyWait
			}
			wait = min(wait, maxBusyWait)
			f.endLine()
			fmt.Fprintf(f.r.errOut, "taskloom tasks: %s (trying again in %s)\n", clean(ae.Message), wait)
			if err := sleep(ctx, wait); err != nil {
				f.endLine()
				return err
			}
			continue
		case errors.As(err, &ae):
			f.endLine()
			return err
		case attempt >= maxReconnects:
			f.endLine()
			if err == nil {
				err = errors.New("the server kept closing the event stream")
			}
			return fmt.Errorf("follow task #%d: %w", n, err)
		}
		// Dropped (a restart, a proxy): resume after the last event seen.
		busy = 0
		attempt++
		if err := sleep(ctx, time.Duration(attempt)*time.Second); err != nil {
			f.endLine()
			return err
		}
	}
}

func (f *follower) endLine() {
	if f.tty && f.barShown {
		fmt.Fprintln(f.r.out)
		f.barShown = false
	}
}

// finish ends the bar and says how the task ended.
func (f *follower) finish() {
	if f.r.json {
		return
	}
	f.endLine()
	t := f.task
	took := ""
	if t.CompletedAt != nil && t.CreatedAt != nil {
		took = " in " + render.Duration(t.CompletedAt.Sub(*t.CreatedAt))
	}
	switch t.Status {
	case "completed":
		fmt.Fprintf(f.r.out, "✅ Task #%d completed%s.\n", t.Number, took)
		if t.Summary != "" {
			fmt.Fprintf(f.r.out, "   Summary: %s\n", cut(clean(t.Summary), 2000))
		}
	case "failed":
		fmt.Fprintf(f.r.out, "❌ Task #%d failed: %s\n", t.Number, clean(t.Error))
	case "stalemate":
		fmt.Fprintf(f.r.out, "⚠️ Task #%d stalled: %s\n", t.Number, clean(t.Error))
	case "canceled":
		fmt.Fprintf(f.r.out, "🛑 Task #%d canceled.\n", t.Number)
	}
}
