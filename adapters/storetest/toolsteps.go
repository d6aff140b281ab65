package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// twoCalls is a claim of a tools reply of two calls: the write succeeded,
// the read after it failed.
func twoCalls(c domain.Task, now time.Time) domain.Outcome {
	o := outcome(c, now, 30, domain.VerdictContinue)
	o.Step = domain.Step{Thought: "write, then read", Action: "write_file", Params: json.RawMessage(`{"path":"a.md","content":"alpha"}`),
		Result: "wrote 5 bytes", Success: true, Role: "agent"}
	o.Steps = []domain.Step{{Action: "read_file", Params: json.RawMessage(`{"path":"b.md"}`),
		Error: "no file b.md", Success: false, Role: "agent"}}
	return o
}

// testToolSteps: the steps of one claim (a tools reply's calls) are
// written in its one commit, each with its own action, params, result and
// success, in order under the claim's iteration, told apart by Call; every
// read of steps returns them in that order, a page can end between two of
// them and the next page starts at the other, the event records both and
// the task's check holds.
func testToolSteps(t *testing.T, s domain.Store) {
	task := create(t, s, newTask("Write then read"))
	c := claim(t, s, "w1", at(0), time.Minute)
	update(t, s, task.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Iterated(cur, twoCalls(c, at(time.Second)))
	})
	c = claim(t, s, "w1", at(time.Minute), time.Minute)
	iterate(t, s, c, at(time.Minute+time.Second), 40, domain.VerdictContinue)

	type key struct {
		iteration, call int
		action          string
		success         bool
	}
	want := []key{{1, 0, "write_file", true}, {1, 1, "read_file", false}, {2, 0, "post_message", true}}
	keys := func(steps []domain.Step) []key {
		out := make([]key, len(steps))
		for i, st := range steps {
			out[i] = key{st.Iteration, st.Call, st.Action, st.Success}
		}
		return out
	}
	same := func(what string, got []domain.Step, want []key) {
		t.Helper()
		if g := keys(got); fmt.Sprint(g) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want %v", what, g, want)
		}
	}
	all, err := s.Steps(t.Context(), task.Number)
	if err != nil {
		t.Fatal(err)
	}
	same("Steps", all, want)
	if len(all) == 3 {
		if r := all[1]; r.Error != "no file b.md" || !jsonEqual(r.Params, []byte(`{"path":"b.md"}`)) || r.Progress != 30 ||
			!r.Time.Equal(at(time.Second)) || r.Role != "agent" || r.Thought != "" {
			t.Errorf("the read's step = %+v", r)
		}
		if w := all[0]; w.Result != "wrote 5 bytes" || w.Thought != "write, then read" || w.Call != 0 {
			t.Errorf("the write's step = %+v", w)
		}
	}
	recent, err := s.RecentSteps(t.Context(), task.Number, 2)
	if err != nil {
		t.Fatal(err)
	}
	same("RecentSteps(2)", recent, want[1:])

	page, err := s.PageSteps(t.Context(), task.Number, domain.StepQuery{Limit: 2, ResultRunes: 100})
	if err != nil || page.Total != 3 {
		t.Fatalf("PageSteps = total %d, %v; want 3", page.Total, err)
	}
	same("PageSteps(limit 2)", page.Steps, want[1:])
	// The page ended between the two calls of iteration 1: the next one
	// starts before the read, at the write.
	page, err = s.PageSteps(t.Context(), task.Number, domain.StepQuery{Limit: 2, Before: 1, BeforeCall: 1, ResultRunes: 100})
	if err != nil {
		t.Fatal(err)
	}
	same("PageSteps(before 1.1)", page.Steps, want[:1])
	page, err = s.PageSteps(t.Context(), task.Number, domain.StepQuery{Limit: 5, Before: 2, ResultRunes: 100})
	if err != nil {
		t.Fatal(err)
	}
	same("PageSteps(before 2)", page.Steps, want[:2])

	if st, err := s.Step(t.Context(), task.Number, 1); err != nil || st.Action != "write_file" || st.Call != 0 {
		t.Errorf("Step(1) = %+v, %v; want the write, call 0", st, err)
	}
	if st, err := s.StepCall(t.Context(), task.Number, 1, 1); err != nil || st.Action != "read_file" || st.Success || st.Call != 1 {
		t.Errorf("StepCall(1, 1) = %+v, %v; want the failed read", st, err)
	}
	if _, err := s.StepCall(t.Context(), task.Number, 1, 2); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("StepCall(1, 2) = %v, want ErrNotFound", err)
	}

	// The iterated event records both steps, without their results.
	var iterated []domain.EventPayload
	for _, e := range events(t, s, task.Number) {
		if e.Type == domain.EventIterated {
			iterated = append(iterated, payload(t, e))
		}
	}
	if len(iterated) != 2 || iterated[0].Step == nil || iterated[0].Step.Action != "write_file" ||
		len(iterated[0].Steps) != 1 || iterated[0].Steps[0].Action != "read_file" || iterated[0].Steps[0].Call != 1 {
		t.Fatalf("iterated events = %+v", iterated)
	}
	d, ok := domain.ParseDigest(get(t, s, task.Number).Digest)
	if !ok || d.Steps != 3 || d.Actions["read_file"].Runs != 1 || d.Actions["read_file"].Succeeded != 0 {
		t.Errorf("digest = %+v, want 3 steps, one failed read", d)
	}
	check(t, s, task.Number)
}

// testToolStepsNeedTheLease: a claim of several steps committed after its
// lease was lost writes none of them.
func testToolStepsNeedTheLease(t *testing.T, s domain.Store) {
	task := create(t, s, newTask("Late calls"))
	late := claim(t, s, "w1", at(0), time.Minute)
	claim(t, s, "w2", at(2*time.Minute), time.Minute)
	_, err := s.UpdateTask(t.Context(), task.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Iterated(cur, twoCalls(late, at(2*time.Minute+time.Second)))
	})
	if !errors.Is(err, domain.ErrStaleFence) {
		t.Fatalf("late commit = %v, want ErrStaleFence", err)
	}
	// What the late claim did is kept in the rejection, every call.
	update(t, s, task.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Rejected(cur, twoCalls(late, at(2*time.Minute+time.Second)), err)
	})
	evs := events(t, s, task.Number)
	p := payload(t, evs[len(evs)-1])
	calls, _ := p.Detail["calls"].([]any)
	if evs[len(evs)-1].Type != domain.EventResultRejected || p.Detail["action"] != "write_file" || len(calls) != 1 ||
		calls[0].(map[string]any)["action"] != "read_file" {
		t.Errorf("the rejection = %s %v", evs[len(evs)-1].Type, p.Detail)
	}
	if steps, err := s.Steps(t.Context(), task.Number); err != nil || len(steps) != 0 {
		t.Errorf("Steps = %d, %v; want none", len(steps), err)
	}
	check(t, s, task.Number)
}
