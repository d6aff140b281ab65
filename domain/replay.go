package domain

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// Violation is one broken invariant of one task's record.
type Violation struct {
	TaskNumber int64
	Problem    string
}

func (v Violation) String() string { return fmt.Sprintf("task #%d: %s", v.TaskNumber, v.Problem) }

// Replay rebuilds a task by applying its events' changes in order, and
// folds them into its digest.
func Replay(events []TaskEvent) (Task, error) {
	var t Task
	for _, ev := range events {
		var p EventPayload
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			return t, fmt.Errorf("event %d (%s): payload: %w", ev.Sequence, ev.Type, err)
		}
		if err := applyChanges(&t, p.Changes); err != nil {
			return t, fmt.Errorf("event %d (%s): changes: %w", ev.Sequence, ev.Type, err)
		}
		t.EventSeq = ev.Sequence
	}
	t.Digest = DigestOf(events).String()
	return t, nil
}

// applyChanges sets the columns an event changed, by their JSON names.
func applyChanges(t *Task, changes map[string]json.RawMessage) error {
	if len(changes) == 0 {
		return nil
	}
	raw, err := json.Marshal(changes)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, t)
}

// Check replays a task's events and verifies the invariants of docs/tasks.md
// against the stored row and its step count: a contiguous sequence from 1
// that starts with "created"; terminal states absorb; progress within
// 0–100; stale counter and iteration within their bounds; fence tokens never
// decrease; a terminal task holds no lease; one step per step event; the
// rebuilt task equals the row; and the row's digest, when it has one, is
// the fold of its events.
func Check(row Task, events []TaskEvent, steps int) []Violation {
	var out []Violation
	bad := func(format string, args ...any) {
		out = append(out, Violation{TaskNumber: row.Number, Problem: fmt.Sprintf(format, args...)})
	}
	if len(events) == 0 {
		bad("has no events")
		return out
	}
	if events[0].Type != EventCreated {
		bad("first event is %q, not %q", events[0].Type, EventCreated)
	}
	var t Task
	var digest Digest
	stepEvents := 0
	// cycles is the cycle the latest iterated event counted, for a
	// strategy whose claims come in cycles (react): max_iterations bounds
	// its cycles, not its claims.
	cycles := 0
	var fence int64
	for i, ev := range events {
		if ev.Sequence != int64(i+1) {
			bad("event %d has sequence %d: the sequence has a gap or repeats", i+1, ev.Sequence)
		}
		if ev.TaskNumber != row.Number {
			bad("event %d belongs to task #%d", ev.Sequence, ev.TaskNumber)
		}
		if ev.Fence < fence {
			bad("event %d (%s) has fence %d after fence %d", ev.Sequence, ev.Type, ev.Fence, fence)
		}
		fence = max(fence, ev.Fence)
		var p EventPayload
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			bad("event %d (%s) has an unreadable payload: %v", ev.Sequence, ev.Type, err)
			continue
		}
		if p.Step != nil {
			stepEvents += 1 + len(p.Steps)
		}
		if c, ok := p.Detail["cycle"].(float64); ok && ev.Type == EventIterated {
			cycles = int(c)
		}
		digest.AddEvent(ev)
		wasTerminal := t.Status.Terminal()
		prevFence := t.Fence
		if err := applyChanges(&t, p.Changes); err != nil {
			bad("event %d (%s): %v", ev.Sequence, ev.Type, err)
		}
		if wasTerminal && len(p.Changes) > 0 {
			bad("event %d (%s) changes a task that had ended", ev.Sequence, ev.Type)
		}
		if t.Fence < prevFence {
			bad("event %d (%s) lowers the fence token from %d to %d", ev.Sequence, ev.Type, prevFence, t.Fence)
		}
		checkBounds(t, cycles, fmt.Sprintf("after event %d (%s)", ev.Sequence, ev.Type), bad)
	}
	t.EventSeq = int64(len(events))
	checkBounds(row, cycles, "the row", bad)
	// A review task moves between phases only as its table says.
	out = append(out, checkReviewPhases(row.Number, events)...)
	if row.Status.Terminal() && row.LeaseOwner != "" {
		bad("has ended (%s) but is leased by %q", row.Status, row.LeaseOwner)
	}
	if stepEvents != steps {
		bad("has %d steps but %d step events", steps, stepEvents)
	}
	if row.EventSeq != t.EventSeq {
		bad("row says its last event is %d, the log has %d", row.EventSeq, t.EventSeq)
	}
	if row.Digest != "" {
		if d, ok := ParseDigest(row.Digest); !ok {
			bad("has an unreadable digest %q", row.Digest)
		} else if d.String() != digest.String() {
			bad("digest is %s in the row but %s from the events", d, digest)
		}
	}
	if d, err := diff(t, row); err != nil {
		bad("cannot compare with the row: %v", err)
	} else {
		want, _ := columns(t)
		for _, k := range slices.Sorted(maps.Keys(d)) {
			bad("column %s is %s in the row but %s from the events", k, d[k], want[k])
		}
	}
	return out
}

func checkBounds(t Task, cycles int, where string, bad func(string, ...any)) {
	if t.Progress < 0 || t.Progress > 100 {
		bad("%s: progress %d is outside 0–100", where, t.Progress)
	}
	if t.StaleCounter < 0 || (t.MaxStaleIterations > 0 && t.StaleCounter > t.MaxStaleIterations) {
		bad("%s: stale counter %d is outside 0–%d", where, t.StaleCounter, t.MaxStaleIterations)
	}
	switch {
	case t.Iteration < 0 || (t.MaxIterations > 0 && cycles == 0 && t.Iteration > t.MaxIterations):
		bad("%s: iteration %d is outside 0–%d", where, t.Iteration, t.MaxIterations)
	case t.MaxIterations > 0 && cycles > t.MaxIterations:
		bad("%s: cycle %d is beyond max_iterations %d", where, cycles, t.MaxIterations)
	}
	if t.Status != "" && !t.Status.Valid() {
		bad("%s: unknown status %q", where, t.Status)
	}
}
