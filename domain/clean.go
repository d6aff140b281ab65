package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// Text reaching a store is not always clean: a tool may read a binary
// file, a model may emit a NUL. PostgreSQL refuses NUL and invalid UTF-8 in
// text and jsonb, and an iteration must not fail for it, so both stores
// write every string with those bytes replaced by U+FFFD — one per byte, as
// encoding/json writes them, so a row and the event that recorded it still
// agree — and return the same text.

// CleanText replaces NUL and invalid UTF-8 bytes with U+FFFD.
func CleanText(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == 0 || (r == utf8.RuneError && size == 1) {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// CleanJSON returns raw with NUL and invalid UTF-8 in its strings replaced,
// re-encoding it only when it has any.
func CleanJSON(raw json.RawMessage) (json.RawMessage, error) {
	if utf8.Valid(raw) && !bytes.Contains(raw, []byte(`\u0000`)) {
		return raw, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: not JSON: %v", ErrInvalid, err)
	}
	out, err := json.Marshal(cleanValue(v))
	if err != nil {
		return nil, err
	}
	return out, nil
}

func cleanValue(v any) any {
	switch v := v.(type) {
	case string:
		return CleanText(v)
	case []any:
		for i := range v {
			v[i] = cleanValue(v[i])
		}
		return v
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[CleanText(k)] = cleanValue(e)
		}
		return out
	}
	return v
}

// CleanTask cleans a task's text columns.
func CleanTask(t *Task) {
	for _, p := range []*string{&t.Name, &t.Goal, &t.RequestorID, &t.Platform, &t.RoomID,
		&t.WorkspaceID, &t.Summary, &t.Error, &t.LeaseOwner} {
		*p = CleanText(*p)
	}
	t.Status = Status(CleanText(string(t.Status)))
}

// CleanStep cleans a step's text and parameters.
func CleanStep(s *Step) error {
	for _, p := range []*string{&s.Thought, &s.Action, &s.Result, &s.Error} {
		*p = CleanText(*p)
	}
	if len(s.Params) == 0 {
		s.Params = json.RawMessage(`{}`)
	}
	var err error
	s.Params, err = CleanJSON(s.Params)
	return err
}

// CleanEvent cleans an event's text and payload.
func CleanEvent(e *TaskEvent) error {
	e.Type = CleanText(e.Type)
	e.Actor = CleanText(e.Actor)
	var err error
	e.Payload, err = CleanJSON(e.Payload)
	return err
}

// CleanNotification cleans an outbox row; its payload must be JSON.
func CleanNotification(n *Notification) error {
	for _, p := range []*string{&n.Room, &n.Category, &n.LastError} {
		*p = CleanText(*p)
	}
	if len(n.Payload) == 0 {
		n.Payload = json.RawMessage(`{}`)
	}
	if !json.Valid(n.Payload) {
		return fmt.Errorf("%w: the payload is not JSON", ErrInvalid)
	}
	var err error
	n.Payload, err = CleanJSON(n.Payload)
	return err
}

// CleanMemory cleans a memory's text.
func CleanMemory(m *Memory) {
	for _, p := range []*string{&m.Platform, &m.MessageID, &m.Room, &m.WorkspaceID,
		&m.AuthorID, &m.AuthorName, &m.Text} {
		*p = CleanText(*p)
	}
}

// CheckMutation refuses what a MutateFunc must not do, whatever the
// transition: renumber the task, skip or repeat an event sequence, or change
// a task that has ended (its row, steps or files).
func CheckMutation(cur Task, m Mutation) error {
	switch {
	case m.Task.Number != cur.Number || m.Event.TaskNumber != cur.Number:
		return fmt.Errorf("update task #%d: %w: the mutation is for task #%d", cur.Number, ErrInvalid, m.Event.TaskNumber)
	case m.Event.Type == "":
		return fmt.Errorf("update task #%d: %w: the mutation has no event", cur.Number, ErrInvalid)
	case m.Event.Sequence != cur.EventSeq+1 || m.Task.EventSeq != m.Event.Sequence:
		return fmt.Errorf("update task #%d: %w: event sequence %d (row says %d) does not follow %d",
			cur.Number, ErrInvalid, m.Event.Sequence, m.Task.EventSeq, cur.EventSeq)
	case m.Step != nil && m.Step.TaskNumber != cur.Number:
		return fmt.Errorf("update task #%d: %w: the step is for task #%d", cur.Number, ErrInvalid, m.Step.TaskNumber)
	}
	if cur.Status.Terminal() {
		same, err := sameColumns(cur, m.Task)
		if err != nil {
			return fmt.Errorf("update task #%d: %w", cur.Number, err)
		}
		if !same || m.Step != nil || len(m.Files) > 0 || len(m.Subtasks) > 0 {
			return &TaskError{Op: "update", Number: cur.Number, Status: cur.Status, Err: ErrTerminal}
		}
	}
	return nil
}

// sameColumns reports whether a and b agree on every column but event_seq
// (which Task's JSON leaves out).
func sameColumns(a, b Task) (bool, error) {
	a.EventSeq = b.EventSeq
	d, err := DifferingColumns(a, b)
	return len(d) == 0, err
}

// DifferingColumns names the columns on which a and b disagree, event_seq
// included, in column order.
func DifferingColumns(a, b Task) ([]string, error) {
	var ma, mb map[string]json.RawMessage
	for _, x := range []struct {
		t Task
		m *map[string]json.RawMessage
	}{{a, &ma}, {b, &mb}} {
		raw, err := json.Marshal(x.t)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, x.m); err != nil {
			return nil, err
		}
	}
	var out []string
	for _, col := range slices.Sorted(maps.Keys(ma)) {
		if !bytes.Equal(ma[col], mb[col]) {
			out = append(out, col)
		}
	}
	if a.EventSeq != b.EventSeq {
		out = append(out, "event_seq")
	}
	return out, nil
}
