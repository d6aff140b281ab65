package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// interleaved makes a task named name and another, and iterates them in
// turn steps times, each step the action tool_i that fill completes: the
// first task's steps are interleaved with another's, as in a busy store.
// It returns both.
func interleaved(t *testing.T, s domain.Store, name string, steps int, fill func(i int, n int64, step *domain.Step)) (domain.Task, domain.Task) {
	t.Helper()
	a := create(t, s, newTask(name))
	b := create(t, s, newTask("Interleaved"))
	for i := 1; i <= steps; i++ {
		for _, n := range []int64{a.Number, b.Number} {
			now := at(time.Duration(2*i) * time.Minute)
			if n == b.Number {
				now = now.Add(time.Minute)
			}
			c := claim(t, s, "w1", now, time.Minute)
			if c.Number != n {
				t.Fatalf("claimed #%d, want #%d", c.Number, n)
			}
			o := outcome(c, now.Add(time.Second), 10*i, domain.VerdictContinue)
			o.Step.Action = fmt.Sprintf("tool_%d", i)
			fill(i, n, &o.Step)
			update(t, s, n, func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, o) })
		}
	}
	return a, b
}

// testPageSteps: a page of a task's steps is the latest ones (before an
// iteration, when asked), oldest first, with the count of them all, each
// result clipped to the characters asked for (none when 0) and its whole
// size in bytes told — whatever the other tasks have.
func testPageSteps(t *testing.T, s domain.Store) {
	result := func(i int, n int64) string {
		return fmt.Sprintf("résultat %d of #%d: ", i, n) + strings.Repeat("x", 100*i)
	}
	a, _ := interleaved(t, s, "Five steps", 5, func(i int, n int64, step *domain.Step) { step.Result = result(i, n) })
	all, err := s.Steps(t.Context(), a.Number)
	if err != nil || len(all) != 5 {
		t.Fatalf("Steps = %d steps, %v", len(all), err)
	}
	// want is the steps of all[from:to], each result clipped to runes.
	want := func(from, to, runes int) []domain.Step {
		var out []domain.Step
		for _, st := range all[from:to] {
			st.ResultBytes = len(st.Result)
			if r := []rune(st.Result); len(r) > runes {
				st.Result = string(r[:runes])
			}
			out = append(out, st)
		}
		return out
	}
	for _, c := range []struct {
		q        domain.StepQuery
		from, to int
	}{
		{domain.StepQuery{Limit: 2, ResultRunes: 1 << 20}, 3, 5},
		{domain.StepQuery{Limit: 100, ResultRunes: 1 << 20}, 0, 5},
		{domain.StepQuery{Limit: 2, ResultRunes: 10}, 3, 5},
		{domain.StepQuery{Limit: 1}, 4, 5},
		{domain.StepQuery{Limit: 2, Before: 4, ResultRunes: 10}, 1, 3},
		{domain.StepQuery{Limit: 5, Before: 3, ResultRunes: 10}, 0, 2},
		{domain.StepQuery{Limit: 5, Before: 1}, 0, 0},
		{domain.StepQuery{}, 0, 0},
	} {
		page, err := s.PageSteps(t.Context(), a.Number, c.q)
		if err != nil {
			t.Fatalf("PageSteps(%+v): %v", c.q, err)
		}
		if page.Total != 5 {
			t.Errorf("PageSteps(%+v).Total = %d, want 5", c.q, page.Total)
		}
		if w := want(c.from, c.to, c.q.ResultRunes); !reflect.DeepEqual(page.Steps, w) {
			t.Errorf("PageSteps(%+v) = %+v\nwant %+v", c.q, page.Steps, w)
		}
	}
	if page, err := s.PageSteps(t.Context(), 999, domain.StepQuery{Limit: 5}); err != nil || page.Total != 0 || len(page.Steps) != 0 {
		t.Errorf("PageSteps of no task = %+v, %v; want none", page, err)
	}
}

// testHistoryReads: the bounded reads an iteration makes (docs/PERFORMANCE.md) —
// a task's last k steps, one step by iteration, events by sequence —
// return what the full reads return, for that task only.
func testHistoryReads(t *testing.T, s domain.Store) {
	a, b := interleaved(t, s, "Seven steps", 7, func(i int, n int64, step *domain.Step) {
		step.Result, step.Success = fmt.Sprintf("result %d of #%d", i, n), i%3 != 0
	})
	all, err := s.Steps(t.Context(), a.Number)
	if err != nil || len(all) != 7 {
		t.Fatalf("Steps = %d steps, %v", len(all), err)
	}
	for _, k := range []int{1, 3, 7, 100} {
		got, err := s.RecentSteps(t.Context(), a.Number, k)
		if err != nil {
			t.Fatalf("RecentSteps(k=%d): %v", k, err)
		}
		if want := all[max(0, len(all)-k):]; !reflect.DeepEqual(got, want) {
			t.Errorf("RecentSteps(k=%d) = iterations %v, want %v", k, iterations(got), iterations(want))
		}
	}
	if got, err := s.RecentSteps(t.Context(), a.Number, 0); err != nil || len(got) != 0 {
		t.Errorf("RecentSteps(k=0) = %v, %v; want none", iterations(got), err)
	}
	if got, err := s.RecentSteps(t.Context(), 999, 5); err != nil || len(got) != 0 {
		t.Errorf("RecentSteps of no task = %v, %v; want none", iterations(got), err)
	}

	for _, want := range all {
		got, err := s.Step(t.Context(), a.Number, want.Iteration)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Step(%d) = %+v, %v; want %+v", want.Iteration, got, err, want)
		}
	}
	for _, it := range []int{0, 8} {
		if _, err := s.Step(t.Context(), a.Number, it); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("Step(%d) of a task with 7 steps: %v, want ErrNotFound", it, err)
		}
	}

	evs := events(t, s, a.Number)
	got, err := s.EventsAt(t.Context(), a.Number, []int64{9, 1, 4, 999})
	if err != nil {
		t.Fatal(err)
	}
	if want := []domain.TaskEvent{evs[0], evs[3], evs[8]}; !reflect.DeepEqual(got, want) {
		t.Errorf("EventsAt(9, 1, 4, 999) = sequences %v of #%v, want 1, 4, 9 of #%d", sequences(got), taskNumbers(got), a.Number)
	}
	if got, err := s.EventsAt(t.Context(), a.Number, nil); err != nil || len(got) != 0 {
		t.Errorf("EventsAt(none) = %v, %v", sequences(got), err)
	}
	check(t, s, a.Number, b.Number)
}

// testDigest: the digest a task's row keeps is written in the commit of
// each step and answer — steps counted by action, failed or not,
// approval denials included, the latest answers' event sequences — and
// `taskloom check` finds it equal to the fold of the events, and reports
// a row whose digest is not.
func testDigest(t *testing.T, s domain.Store) {
	task := create(t, s, newTask("Keep a digest"))
	n := task.Number
	if d, ok := domain.ParseDigest(get(t, s, n).Digest); !ok || d.Steps != 0 {
		t.Fatalf("a new task's digest = %q", get(t, s, n).Digest)
	}
	progress := 0
	step := func(now time.Time, action string, ok bool, wait domain.WaitOn) {
		t.Helper()
		c := claim(t, s, "w1", now, time.Minute)
		progress += 10
		o := outcome(c, now.Add(time.Second), progress, domain.VerdictContinue)
		o.Step.Action, o.Step.Success, o.Wait = action, ok, wait
		update(t, s, n, func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, o) })
	}
	step(at(time.Minute), "write_file", true, domain.WaitNone)
	step(at(2*time.Minute), "http_get", false, domain.WaitNone)
	step(at(3*time.Minute), "ask_user", true, domain.WaitAnswer)
	answered := update(t, s, n, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Answered(cur, "u1", "use JWT", at(4*time.Minute))
	})
	step(at(5*time.Minute), "run_command", true, domain.WaitApproval) // asks; no step yet
	update(t, s, n, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Denied(cur, "u1", "", "not now", at(6*time.Minute))
	})
	step(at(7*time.Minute), "write_file", true, domain.WaitNone)

	row := get(t, s, n)
	want := domain.Digest{Steps: 5, Actions: map[string]domain.ActionCount{
		"write_file": {Runs: 2, Succeeded: 2}, "http_get": {Runs: 1}, "ask_user": {Runs: 1, Succeeded: 1}, "run_command": {Runs: 1},
	}, Answers: []int64{answered.EventSeq}}
	if got, ok := domain.ParseDigest(row.Digest); !ok || got.String() != want.String() {
		t.Fatalf("digest = %s, want %s", row.Digest, want)
	}
	if got := domain.DigestOf(events(t, s, n)); got.String() != row.Digest {
		t.Errorf("the events fold to %s, the row has %s", got, row.Digest)
	}
	check(t, s, n)

	// A digest that is not the fold of the events is reported.
	wrong := want
	wrong.Steps = 4
	update(t, s, n, func(cur domain.Task) (domain.Mutation, error) {
		m, err := domain.Paused(cur, "u1", at(8*time.Minute))
		m.Task.Digest = wrong.String()
		return m, err
	})
	steps, err := s.Steps(t.Context(), n)
	if err != nil {
		t.Fatal(err)
	}
	v := domain.Check(get(t, s, n), events(t, s, n), len(steps))
	if len(v) != 1 || !slices.ContainsFunc(v, func(x domain.Violation) bool { return containsAll(x.Problem, "digest", `"steps":4`) }) {
		t.Errorf("check of a row with a wrong digest = %v", v)
	}

	// A task from before digests (none in its row) keeps none, and checks.
	update(t, s, n, func(cur domain.Task) (domain.Mutation, error) {
		m, err := domain.Resumed(cur, "u1", at(9*time.Minute))
		m.Task.Digest = ""
		return m, err
	})
	step(at(10*time.Minute), "write_file", true, domain.WaitNone)
	if d := get(t, s, n).Digest; d != "" {
		t.Errorf("a task with no digest has %q after a step", d)
	}
	check(t, s, n)
}

func iterations(steps []domain.Step) []int {
	out := make([]int, len(steps))
	for i, s := range steps {
		out[i] = s.Iteration
	}
	return out
}

func sequences(evs []domain.TaskEvent) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Sequence
	}
	return out
}

func taskNumbers(evs []domain.TaskEvent) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.TaskNumber
	}
	return out
}

// containsAll reports whether s contains every one of parts.
func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
