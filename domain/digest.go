package domain

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Digest condenses a task's whole history into what its prompt says of
// the part it does not show (docs/PERFORMANCE.md: an iteration reads the last few
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
// has none (one created before digests) or an unreadable one. It reads
// what String writes without encoding/json (every iteration reads one)
// and leaves anything else to encoding/json, so the result is
// json.Unmarshal's either way (TestDigestCodec).
func ParseDigest(s string) (d Digest, ok bool) {
	if s == "" {
		return Digest{}, false
	}
	if d, ok := parseCanonicalDigest(s); ok {
		return d, true
	}
	if json.Unmarshal([]byte(s), &d) != nil {
		return Digest{}, false
	}
	return d, true
}

// String is d's column value: JSON with its keys in order, so equal
// digests are equal strings. It writes what encoding/json writes
// (TestDigestCodec), without reflection: every commit of a step writes
// one.
func (d Digest) String() string {
	b := make([]byte, 0, 16+32*len(d.Actions)+8*len(d.Answers))
	b = append(b, `{"steps":`...)
	b = strconv.AppendInt(b, int64(d.Steps), 10)
	if len(d.Actions) > 0 {
		b = append(b, `,"actions":{`...)
		for i, k := range slices.Sorted(maps.Keys(d.Actions)) {
			if i > 0 {
				b = append(b, ',')
			}
			if plainJSONString(k) {
				b = append(append(append(b, '"'), k...), '"')
			} else {
				q, _ := json.Marshal(k) // a string always encodes
				b = append(b, q...)
			}
			c := d.Actions[k]
			b = append(b, `:{"runs":`...)
			b = strconv.AppendInt(b, int64(c.Runs), 10)
			b = append(b, `,"ok":`...)
			b = strconv.AppendInt(b, int64(c.Succeeded), 10)
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	if len(d.Answers) > 0 {
		b = append(b, `,"answers":[`...)
		for i, a := range d.Answers {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, a, 10)
		}
		b = append(b, ']')
	}
	return string(append(b, '}'))
}

// plainJSONString reports whether encoding/json writes s as it is, in
// quotes: printable ASCII with nothing it escapes.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// parseCanonicalDigest reads s when it is exactly what String writes for
// a digest whose action names are plain JSON strings; ok is false for
// anything else.
func parseCanonicalDigest(s string) (d Digest, ok bool) {
	p := digestScanner{s: s}
	if !p.lit(`{"steps":`) || !p.int(&d.Steps) {
		return Digest{}, false
	}
	if p.lit(`,"actions":{`) {
		d.Actions = map[string]ActionCount{}
		for first := true; !p.lit("}"); first = false {
			var k string
			var c ActionCount
			if (!first && !p.lit(",")) || !p.key(&k) || !p.lit(`:{"runs":`) || !p.int(&c.Runs) ||
				!p.lit(`,"ok":`) || !p.int(&c.Succeeded) || !p.lit("}") {
				return Digest{}, false
			}
			d.Actions[k] = c
		}
	}
	if p.lit(`,"answers":[`) {
		if p.lit("]") {
			return Digest{}, false // String writes none; encoding/json makes an empty slice
		}
		for first := true; !p.lit("]"); first = false {
			var a int
			if (!first && !p.lit(",")) || !p.int(&a) {
				return Digest{}, false
			}
			d.Answers = append(d.Answers, int64(a))
		}
	}
	if !p.lit("}") || p.s != "" {
		return Digest{}, false
	}
	return d, true
}

// digestScanner consumes a canonical digest from the front of s.
type digestScanner struct{ s string }

func (p *digestScanner) lit(l string) bool {
	if !strings.HasPrefix(p.s, l) {
		return false
	}
	p.s = p.s[len(l):]
	return true
}

// int reads a JSON integer (no leading zeros) that fits an int.
func (p *digestScanner) int(v *int) bool {
	i := 0
	if i < len(p.s) && p.s[i] == '-' {
		i++
	}
	start := i
	for i < len(p.s) && p.s[i] >= '0' && p.s[i] <= '9' {
		i++
	}
	if i == start || (p.s[start] == '0' && i > start+1) {
		return false
	}
	n, err := strconv.Atoi(p.s[:i])
	if err != nil {
		return false
	}
	*v, p.s = n, p.s[i:]
	return true
}

// key reads a quoted string with nothing escaped or to escape.
func (p *digestScanner) key(k *string) bool {
	if !p.lit(`"`) {
		return false
	}
	end := strings.IndexByte(p.s, '"')
	if end < 0 || !plainJSONString(p.s[:end]) {
		return false
	}
	*k, p.s = p.s[:end], p.s[end+1:]
	return true
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
	for _, s := range p.Steps {
		d.AddStep(s)
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
