package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Mutation is one state change of one task, as a store writes it: the new
// row, the event that records it, the step it ran (if any), the
// notifications it causes and the changes to the task's files — all in one
// transaction.
type Mutation struct {
	Task  Task
	Event TaskEvent
	Step  *Step
	// Steps are the further steps of Step's iteration, written after it
	// in order (calls 1, 2…): a tools reply of several calls.
	Steps         []Step
	Notifications []Notification
	// Files are the writes and deletions of the task's files the step
	// made (docs/deploy.md), written before the event.
	Files []FileChange
	// Subtasks are the children the step's tool asked for, created by
	// the store in the same transaction, under the limits of subtasks
	// checked there (see NewTask.MaxActive, MaxSubtasks, MaxSubtaskDepth
	// and the parent's token budget). The store notes on the step, for
	// each, its number or why it was not created; a commit refused for a
	// lost lease creates none.
	Subtasks []NewTask
}

// MutateFunc computes a mutation from the current row, which the store has
// locked. Returning an error writes nothing.
type MutateFunc func(current Task) (Mutation, error)

// Change builds the mutation that moves before to after, recording an event
// of type typ whose payload lists exactly the columns that differ.
func Change(before, after Task, typ, actor string, now time.Time, detail map[string]any) (Mutation, error) {
	return change(before, after, typ, actor, now, detail, nil, nil)
}

// changeWithStep is Change for a mutation that writes step: its event
// records the step without its result, which is stored once, in the step
// (up to MaxResultBytes), and the task's digest counts it.
//
// more are the further steps of step's iteration (a tools reply's calls
// after its first), recorded and counted the same way.
func changeWithStep(before, after Task, typ, actor string, now time.Time, detail map[string]any, step Step, more ...Step) (Mutation, error) {
	m, err := change(before, after, typ, actor, now, detail, &step, more)
	if err != nil {
		return m, err
	}
	m.Step = &step
	m.Steps = more
	digested(&m.Task, func(d *Digest) {
		d.AddStep(step)
		for _, s := range more {
			d.AddStep(s)
		}
	})
	return m, nil
}

func change(before, after Task, typ, actor string, now time.Time, detail map[string]any, step *Step, more []Step) (Mutation, error) {
	changes, err := diff(before, after)
	if err != nil {
		return Mutation{}, fmt.Errorf("%s task #%d: %w", typ, before.Number, err)
	}
	after.EventSeq = before.EventSeq + 1
	p := EventPayload{Changes: changes, Detail: detail}
	if step != nil {
		st := *step
		st.Result = ""
		p.Step = &st
		for _, s := range more {
			s.Result = ""
			p.Steps = append(p.Steps, s)
		}
	}
	payload, err := json.Marshal(p)
	if err != nil {
		return Mutation{}, fmt.Errorf("%s task #%d: encode event: %w", typ, before.Number, err)
	}
	m := Mutation{
		Task: after,
		Event: TaskEvent{
			TaskNumber: after.Number,
			Sequence:   after.EventSeq,
			Type:       typ,
			Payload:    payload,
			Actor:      actor,
			Fence:      after.Fence,
			Time:       UTC(now),
		},
	}
	if _, ok := EventAnswer(m.Event); ok {
		digested(&m.Task, func(d *Digest) { d.addAnswer(m.Event.Sequence) })
	}
	return m, nil
}

// diff returns the columns of after that differ from before, by JSON name,
// with after's JSON: what columns gives, compared column by column. It
// encodes only the fields whose values differ (every event's payload is
// one, so this is on every write's path).
func diff(before, after Task) (map[string]json.RawMessage, error) {
	// Fields are compared as ==, unboxed (Value.Equal), and encoded only
	// when they differ so.
	b, a := reflect.ValueOf(&before).Elem(), reflect.ValueOf(&after).Elem()
	out := map[string]json.RawMessage{}
	for _, f := range taskFields {
		fa, fb := a.Field(f.index), b.Field(f.index)
		if f.isTime {
			// Equal instants at equal offsets encode alike; a time
			// encodes itself (no reflection, no boxing).
			ta, tb := fa.Addr().Interface().(*time.Time), fb.Addr().Interface().(*time.Time)
			if _, oa := ta.Zone(); ta.Equal(*tb) {
				if _, ob := tb.Zone(); oa == ob {
					continue
				}
			}
			ja, err := ta.MarshalJSON()
			if err != nil {
				return nil, err
			}
			out[f.name] = ja
			continue
		}
		if f.comparable && fa.Equal(fb) {
			continue
		}
		if ja, ok := plainJSON(fa); ok {
			// A string, number or bool that differs encodes differently.
			out[f.name] = ja
			continue
		}
		ja, err := json.Marshal(fa.Interface())
		if err != nil {
			return nil, err
		}
		jb, err := json.Marshal(fb.Interface())
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(ja, jb) {
			out[f.name] = ja
		}
	}
	return out, nil
}

// plainJSON is what encoding/json writes for v when v is an integer, a
// bool, or a string that needs no escaping; ok is false for anything else.
func plainJSON(v reflect.Value) (b json.RawMessage, ok bool) {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(nil, v.Int(), 10), true
	case reflect.Bool:
		return strconv.AppendBool(nil, v.Bool()), true
	case reflect.String:
		s := v.String()
		if !plainJSONString(s) {
			return nil, false
		}
		b = make([]byte, 0, len(s)+2)
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"'), true
	}
	return nil, false
}

// taskField is a field of Task with a JSON name.
type taskField struct {
	index      int
	name       string
	comparable bool
	isTime     bool
}

// taskFields are the fields columns encodes, in order.
var taskFields = func() []taskField {
	var out []taskField
	t := reflect.TypeFor[Task]()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, taskField{i, name, f.Type.Comparable(), f.Type == reflect.TypeFor[time.Time]()})
	}
	return out
}()

func columns(t Task) (map[string]json.RawMessage, error) {
	raw, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	return m, json.Unmarshal(raw, &m)
}
