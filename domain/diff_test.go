package domain

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// diffByColumns is what diff computes, the slow way: both rows encoded
// whole and compared column by column.
func diffByColumns(t *testing.T, before, after Task) map[string]json.RawMessage {
	t.Helper()
	b, err := columns(before)
	if err != nil {
		t.Fatal(err)
	}
	a, err := columns(after)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]json.RawMessage{}
	for k, v := range a {
		if !bytes.Equal(b[k], v) {
			out[k] = v
		}
	}
	return out
}

// TestDiffIsColumnsCompared: diff gives, for every field of Task changed
// alone or with others, what comparing the encoded rows gives — also for
// times that are the same instant in another location (no change) and for
// the fields JSON leaves out (EventSeq, Digest: no change) and for a time
// that differs from another only in its monotonic reading (no change).
func TestDiffIsColumnsCompared(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	base := Task{Number: 7, Name: "n", Goal: "g", Status: StatusRunning, Progress: 10, LastProcessedAt: t0,
		CreatedAt: t0, LeaseOwner: "w", LeaseExpiresAt: t0.Add(time.Minute), Fence: 3, EventSeq: 4, Digest: "d",
		State: `{"a":1}`, Summary: "<b>&"}
	changed := func(v reflect.Value) reflect.Value {
		switch v.Kind() {
		case reflect.String:
			return reflect.ValueOf(v.String() + "x<&>").Convert(v.Type())
		case reflect.Int, reflect.Int64:
			return reflect.ValueOf(v.Int() + 1).Convert(v.Type())
		case reflect.Bool:
			return reflect.ValueOf(!v.Bool())
		}
		if tm, ok := v.Interface().(time.Time); ok {
			return reflect.ValueOf(tm.Add(time.Microsecond))
		}
		t.Fatalf("no change for a %s", v.Type())
		return v
	}
	var all Task
	allv := reflect.ValueOf(&all).Elem()
	allv.Set(reflect.ValueOf(base))
	typ := reflect.TypeFor[Task]()
	for i := range typ.NumField() {
		after := base
		av := reflect.ValueOf(&after).Elem()
		av.Field(i).Set(changed(av.Field(i)))
		allv.Field(i).Set(changed(allv.Field(i)))
		check(t, typ.Field(i).Name, base, after)
	}
	check(t, "every field", base, all)
	check(t, "nothing", base, base)
	moved := base
	moved.LastProcessedAt = t0.In(time.FixedZone("X", 3600))
	check(t, "the same instant elsewhere", base, moved)
	renamed := base
	renamed.LastProcessedAt = t0.In(time.FixedZone("Y", 0))
	check(t, "the same instant at the same offset, named otherwise", base, renamed)
	check(t, "from zero", Task{}, base)
	// A time with a monotonic reading and the same time without: not equal
	// in Go, the same in JSON.
	now := time.Now()
	mono, plain := base, base
	mono.StartedAt, plain.StartedAt = now, now.Round(0)
	check(t, "the same time without its monotonic reading", mono, plain)
}

func check(t *testing.T, what string, before, after Task) {
	t.Helper()
	got, err := diff(before, after)
	if err != nil {
		t.Fatal(err)
	}
	want := diffByColumns(t, before, after)
	if !reflect.DeepEqual(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want))) {
		t.Fatalf("%s: diff changed %v, want %v", what, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	for k := range want {
		if !bytes.Equal(got[k], want[k]) {
			t.Errorf("%s: %s is %s, want %s", what, k, got[k], want[k])
		}
	}
}

// BenchmarkIterated is the domain's share of an iteration's commit: the
// diff of the row and the encoding of the event with its step.
func BenchmarkIterated(b *testing.B) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	t := Task{Number: 7, Name: "bench", Goal: "a goal of some length to copy around", Status: StatusRunning,
		MaxIterations: 1000, MaxStaleIterations: 1000, LeaseOwner: "w1", LeaseExpiresAt: now.Add(time.Minute),
		Fence: 3, EventSeq: 9, StartedAt: now, CreatedAt: now, Digest: `{"steps":3,"actions":{"noop":{"runs":3,"ok":3}}}`}
	o := Outcome{Owner: "w1", Fence: 3, Now: now.Add(time.Second), Progress: 10, Verdict: VerdictContinue,
		Step: Step{Action: "noop", Params: json.RawMessage(`{}`), Result: "done", Success: true}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Iterated(t, o); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPlainJSON: the values diff encodes itself are encoded as
// encoding/json encodes them, and those it cannot are left to it.
func TestPlainJSON(t *testing.T) {
	for _, v := range []any{0, -7, int64(1) << 62, true, false, "", "running", "w-1 host:42", Status("paused"),
		`say "hi"`, "a<b", "tab\there", "naïve", "back\\slash", "&"} {
		got, ok := plainJSON(reflect.ValueOf(v))
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		plain := true
		if s, isString := v.(string); isString {
			plain = !strings.ContainsAny(s, "\"\\<>&\t") && s == strings.ToValidUTF8(s, "") && !strings.ContainsFunc(s, func(r rune) bool { return r >= 0x7f })
		}
		if ok != plain || (ok && string(got) != string(want)) {
			t.Errorf("plainJSON(%#v) = %s, %v; want %s, %v", v, got, ok, want, plain)
		}
	}
}
