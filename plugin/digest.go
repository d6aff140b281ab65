package plugin

import (
	"encoding/json"
	"slices"
)

// Digest condenses a task's whole history into what its prompt says of
// the part it does not show (PRODUCT §11: an iteration reads the last few
// steps, not all of them): how many steps the task ran, by action and how
// many succeeded, and where its latest answers are in its event log. It is
// kept on the task (the digest column) and folded forward by the
// transition that writes a step or an answer, in that commit, so it is
// always the fold of the task's events (DigestOf); `taskloom check`
// verifies that it is.
//
// A task created before digests existed has none (Task.Digest is ""),
// and keeps none: its iterations fold its events instead.
type Digest struct {
	// Steps counts the task's steps.
	Steps int `json:"steps"`
	// Actions counts the steps by action ("" for a step with none).
	Actions map[string]ActionCount `json:"actions,omitempty"`
	// Answers are the sequences of the task's latest events that carry an
	// answer or its subtasks' outcomes (EventAnswer), oldest first, at
	// most DigestAnswers of them.
	Answers []int64 `json:"answers,omitempty"`
}

// ActionCount is how many steps ran one action and how many of them
// succeeded.
type ActionCount struct {
	Runs      int `json:"runs"`
	Succeeded int `json:"ok"`
}

// DigestAnswers is how many of a task's latest answers its digest points
// to: more than a prompt shows.
const DigestAnswers = 10

// ParseDigest reads a task's digest column. ok is false for a task that
// has none (one created before digests) or an unreadable one.
func ParseDigest(s string) (d Digest, ok bool) {
	if s == "" || json.Unmarshal([]byte(s), &d) != nil {
		return Digest{}, false
	}
	return d, true
}

// String is d's column value: JSON with its keys in order, so equal
// digests are equal strings.
func (d Digest) String() string {
	raw, err := json.Marshal(d)
	if err != nil {
		return "" // a map of strings to ints always encodes
	}
	return string(raw)
}

// Succeeded counts the steps that succeeded.
func (d Digest) Succeeded() int {
	n := 0
	for _, c := range d.Actions {
		n += c.Succeeded
	}
	return n
}

// AddStep counts one step.
func (d *Digest) AddStep(s Step) {
	if d.Actions == nil {
		d.Actions = map[string]ActionCount{}
	}
	c := d.Actions[s.Action]
	c.Runs++
	if s.Success {
		c.Succeeded++
	}
	d.Actions[s.Action] = c
	d.Steps++
}

// AddEvent folds one event of the task into d: the step it records, and
// whether it carries an answer.
func (d *Digest) AddEvent(ev TaskEvent) {
	var p EventPayload
	if json.Unmarshal(ev.Payload, &p) != nil {
		return
	}
	if p.Step != nil {
		d.AddStep(*p.Step)
	}
	if _, ok := answerOf(ev.Type, p); ok {
		d.addAnswer(ev.Sequence)
	}
}

func (d *Digest) addAnswer(seq int64) {
	d.Answers = append(d.Answers, seq)
	if n := len(d.Answers); n > DigestAnswers {
		d.Answers = slices.Clone(d.Answers[n-DigestAnswers:])
	}
}

// Without is what d counts of the steps older than window, the task's
// latest steps: the part of its history a prompt that shows window only
// counts. Steps of window d never counted are ignored.
func (d Digest) Without(window []Step) Digest {
	out := Digest{Steps: d.Steps, Actions: make(map[string]ActionCount, len(d.Actions))}
	for k, c := range d.Actions {
		out.Actions[k] = c
	}
	for _, s := range window {
		c, ok := out.Actions[s.Action]
		if !ok || c.Runs == 0 {
			continue
		}
		c.Runs--
		if s.Success && c.Succeeded > 0 {
			c.Succeeded--
		}
		out.Steps--
		if c.Runs == 0 {
			delete(out.Actions, s.Action)
		} else {
			out.Actions[s.Action] = c
		}
	}
	return out
}

// DigestOf folds a task's events, oldest first, into its digest.
func DigestOf(events []TaskEvent) Digest {
	var d Digest
	for _, ev := range events {
		d.AddEvent(ev)
	}
	return d
}

// EventAnswer returns the answer an event carries: what a person answered
// the task's question (answered), or the outcomes of the subtasks it
// waited on (the subtask_ended that resumed it).
func EventAnswer(ev TaskEvent) (string, bool) {
	if ev.Type != EventAnswered && ev.Type != EventSubtaskEnded {
		return "", false
	}
	var p EventPayload
	if json.Unmarshal(ev.Payload, &p) != nil {
		return "", false
	}
	return answerOf(ev.Type, p)
}

func answerOf(typ string, p EventPayload) (string, bool) {
	key := ""
	switch typ {
	case EventAnswered:
		key = "answer"
	case EventSubtaskEnded:
		key = "outcomes"
	default:
		return "", false
	}
	a, ok := p.Detail[key].(string)
	return a, ok
}

// digested applies fold to t's digest, when t has one: the commit that
// writes a step or an answer writes the digest that counts it.
func digested(t *Task, fold func(*Digest)) {
	if t.Digest == "" {
		return
	}
	d, ok := ParseDigest(t.Digest)
	if !ok {
		return // unreadable: left for `taskloom check` to report
	}
	fold(&d)
	t.Digest = d.String()
}
