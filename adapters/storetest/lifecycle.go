package storetest

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// testLifecycle takes a task through a realistic life and checks its event
// log end to end.
func testLifecycle(t *testing.T, s domain.Store) {
	task := create(t, s, newTask("Write the release notes"))
	n := task.Number
	clock := t0
	tick := func() time.Time { clock = clock.Add(time.Minute); return clock }

	progress := []int{20, 20, 45}
	for _, p := range progress {
		c := claim(t, s, "w1", tick(), 5*time.Minute)
		iterate(t, s, c, tick(), p, domain.VerdictContinue)
	}
	// Ask the user, get an answer.
	c := claim(t, s, "w1", tick(), 5*time.Minute)
	o := outcome(c, tick(), 50, domain.VerdictContinue)
	o.Wait = domain.WaitAnswer
	o.Step.Action = "ask_user"
	if w := update(t, s, n, func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, o) }); w.Status != domain.StatusWaiting {
		t.Fatalf("after ask_user the task is %s, want waiting", w.Status)
	}
	noClaim(t, s, tick())
	update(t, s, n, func(cur domain.Task) (domain.Mutation, error) { return domain.Answered(cur, "u1", "v2.1", tick()) })
	// Paused, resumed, finished.
	update(t, s, n, func(cur domain.Task) (domain.Mutation, error) { return domain.Paused(cur, "u1", tick()) })
	noClaim(t, s, tick())
	update(t, s, n, func(cur domain.Task) (domain.Mutation, error) { return domain.Resumed(cur, "u1", tick()) })
	c = claim(t, s, "w2", tick(), 5*time.Minute)
	doneAt := tick()
	final := iterate(t, s, c, doneAt, 90, domain.VerdictDone)

	if final.Status != domain.StatusCompleted || final.Progress != 100 || final.Iteration != 5 ||
		final.LeaseOwner != "" || !final.CompletedAt.Equal(doneAt) || final.PromptTokens != 50 ||
		final.CompletionTokens != 25 || final.Fence != 5 || !final.StartedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("final task = %+v", final)
	}
	sameTask(t, "stored final task", get(t, s, n), final)

	evs := events(t, s, n)
	want := []string{
		domain.EventCreated,
		domain.EventClaimed, domain.EventIterated,
		domain.EventClaimed, domain.EventIterated,
		domain.EventClaimed, domain.EventIterated,
		domain.EventClaimed, domain.EventIterated,
		domain.EventAnswered, domain.EventPaused, domain.EventResumed,
		domain.EventClaimed, domain.EventIterated,
	}
	if got := eventTypes(evs); !slices.Equal(got, want) {
		t.Fatalf("events = %v\nwant %v", got, want)
	}
	for i, e := range evs {
		if e.Sequence != int64(i+1) || e.TaskNumber != n {
			t.Errorf("event %d has sequence %d, task #%d", i+1, e.Sequence, e.TaskNumber)
		}
		if i > 0 && (e.ID <= evs[i-1].ID || e.Time.Before(evs[i-1].Time)) {
			t.Errorf("event %d (id %d at %v) is not after event %d (id %d at %v)", i+1, e.ID, e.Time, i, evs[i-1].ID, evs[i-1].Time)
		}
	}
	if final.EventSeq != int64(len(evs)) {
		t.Errorf("row event_seq %d, %d events", final.EventSeq, len(evs))
	}
	tail, err := s.TaskEvents(t.Context(), n, 10)
	if err != nil || len(tail) != len(evs)-10 || tail[0].Sequence != 11 {
		t.Errorf("TaskEvents(after 10) = %d events from %v, %v", len(tail), tail, err)
	}
	rebuilt, err := domain.Replay(evs)
	if err != nil {
		t.Fatal(err)
	}
	sameTask(t, "task replayed from its events", rebuilt, final)
	check(t, s, n)
}

func testTerminal(t *testing.T, s domain.Store) {
	completed := create(t, s, newTask("Finish"))
	c := claim(t, s, "w1", t0, time.Minute)
	iterate(t, s, c, at(time.Second), 100, domain.VerdictDone)
	canceled := create(t, s, newTask("Drop"))
	update(t, s, canceled.Number, func(cur domain.Task) (domain.Mutation, error) {
		return domain.Canceled(cur, "u1", "changed my mind", at(time.Second))
	})

	now := at(time.Hour)
	ops := []struct {
		name string
		fn   func(cur domain.Task) (domain.Mutation, error)
	}{
		{"pause", func(cur domain.Task) (domain.Mutation, error) { return domain.Paused(cur, "u1", now) }},
		{"resume", func(cur domain.Task) (domain.Mutation, error) { return domain.Resumed(cur, "u1", now) }},
		{"cancel", func(cur domain.Task) (domain.Mutation, error) { return domain.Canceled(cur, "u1", "", now) }},
		{"answer", func(cur domain.Task) (domain.Mutation, error) { return domain.Answered(cur, "u1", "yes", now) }},
		{"iterate", func(cur domain.Task) (domain.Mutation, error) {
			return domain.Iterated(cur, domain.Outcome{Owner: cur.LeaseOwner, Fence: cur.Fence, Now: now, Progress: 50, Verdict: domain.VerdictContinue})
		}},
		// A MutateFunc that changes an ended task without a transition is
		// refused by the store itself.
		{"rewrite", func(cur domain.Task) (domain.Mutation, error) {
			after := cur
			after.Status = domain.StatusQueued
			return domain.Change(cur, after, domain.EventResumed, "u1", now, nil)
		}},
	}
	for _, task := range []domain.Task{get(t, s, completed.Number), get(t, s, canceled.Number)} {
		for _, op := range ops {
			t.Run(string(task.Status)+"/"+op.name, func(t *testing.T) {
				_, err := s.UpdateTask(t.Context(), task.Number, op.fn)
				if !errors.Is(err, domain.ErrTerminal) {
					t.Errorf("%s a %s task: %v, want ErrTerminal", op.name, task.Status, err)
				}
				sameTask(t, "row", get(t, s, task.Number), task)
				if n := int64(len(events(t, s, task.Number))); n != task.EventSeq {
					t.Errorf("%d events, want %d", n, task.EventSeq)
				}
			})
		}
	}
	noClaim(t, s, at(48*time.Hour))
	check(t, s, completed.Number, canceled.Number)
}

func testSteps(t *testing.T, s domain.Store) {
	task := create(t, s, newTask("Three steps"))
	type stepIn struct {
		action, params, result, errText string
		success                         bool
	}
	in := []stepIn{
		{"write_file", `{"path":"notes.md","content":"# Notes\n"}`, "wrote 8 bytes", "", true},
		{"http_get", `{"url":"http://127.0.0.1/"}`, "", "loopback addresses are refused", false},
		{"list_files", `{}`, "notes.md", "", true},
	}
	for i, st := range in {
		c := claim(t, s, "w1", at(time.Duration(i)*time.Minute), time.Minute)
		o := outcome(c, at(time.Duration(i)*time.Minute+time.Second), 10*(i+1), domain.VerdictContinue)
		o.Step = domain.Step{Thought: "thought " + st.action, Action: st.action, Params: json.RawMessage(st.params),
			Result: st.result, Success: st.success, Error: st.errText}
		update(t, s, task.Number, func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, o) })
	}
	steps, err := s.Steps(t.Context(), task.Number)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != len(in) {
		t.Fatalf("%d steps, want %d", len(steps), len(in))
	}
	for i, st := range steps {
		w := in[i]
		if st.TaskNumber != task.Number || st.Iteration != i+1 || st.Action != w.action || st.Result != w.result ||
			st.Success != w.success || st.Error != w.errText || st.Thought != "thought "+w.action ||
			st.Progress != 10*(i+1) || !st.Time.Equal(at(time.Duration(i)*time.Minute+time.Second)) {
			t.Errorf("step %d = %+v", i+1, st)
		}
		if !jsonEqual(st.Params, []byte(w.params)) {
			t.Errorf("step %d params = %s, want %s", i+1, st.Params, w.params)
		}
	}
	check(t, s, task.Number)
}

func testTimes(t *testing.T, s domain.Store) {
	// Nanoseconds are dropped (the stores keep microseconds) and any zone
	// comes back as UTC.
	paris := time.FixedZone("CET", 3600)
	created := time.Date(2026, 1, 2, 4, 4, 5, 123456789, paris)
	in := newTask("Keep time")
	in.Now = created
	task := create(t, s, in)
	want := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	got := get(t, s, task.Number)
	if !got.CreatedAt.Equal(want) || got.CreatedAt.Location() != time.UTC || !task.CreatedAt.Equal(want) {
		t.Errorf("created_at = %v (returned %v), want %v", got.CreatedAt, task.CreatedAt, want)
	}
	for _, z := range []time.Time{got.StartedAt, got.CompletedAt, got.LastProcessedAt, got.LeaseExpiresAt} {
		if !z.IsZero() {
			t.Errorf("an unset time came back as %v", z)
		}
	}
	c := claim(t, s, "w1", created.Add(time.Second), 90*time.Second+7*time.Microsecond)
	fresh := get(t, s, task.Number)
	if !fresh.LeaseExpiresAt.Equal(want.Add(91*time.Second+7*time.Microsecond)) || fresh.LeaseExpiresAt.Location() != time.UTC {
		t.Errorf("lease_expires_at = %v", fresh.LeaseExpiresAt)
	}
	sameTask(t, "claimed task read back", fresh, c)
	check(t, s, task.Number)
}

// testDirtyText stores what tools really return: NUL bytes and invalid
// UTF-8 become U+FFFD (one per byte), in the row, the step and the event
// alike, and the iteration is not lost.
func testDirtyText(t *testing.T, s domain.Store) {
	task := create(t, s, newTask("Read the \x00 binary file"))
	if task.Goal != "Read the \uFFFD binary file" {
		t.Errorf("goal = %q", task.Goal)
	}
	c := claim(t, s, "w1", t0, time.Minute)
	o := outcome(c, at(time.Second), 30, domain.VerdictContinue)
	o.Step.Result = "PK\x03\x04\x00\xff\xfe!"
	o.Step.Thought = "look \x00 inside"
	o.Step.Params = json.RawMessage(`{"path":"a\u0000b"}`)
	o.Summary = "read \x00 it"
	got := update(t, s, task.Number, func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, o) })
	if got.Summary != "read \uFFFD it" {
		t.Errorf("summary = %q", got.Summary)
	}
	sameTask(t, "stored task", get(t, s, task.Number), got)
	steps, err := s.Steps(t.Context(), task.Number)
	if err != nil || len(steps) != 1 {
		t.Fatalf("Steps = %v, %v", steps, err)
	}
	if st := steps[0]; st.Result != "PK\x03\x04\uFFFD\uFFFD\uFFFD!" || st.Thought != "look \uFFFD inside" ||
		!jsonEqual(st.Params, []byte(`{"path":"a\ufffdb"}`)) {
		t.Errorf("step = %q %q %s", st.Result, st.Thought, st.Params)
	}
	m, _, err := s.SaveMemory(t.Context(), domain.Memory{Platform: "discord", MessageID: "m\x00", Room: "r", Text: "hi\x00\xc3", CreatedAt: t0})
	if err != nil || m.Text != "hi\uFFFD\uFFFD" || m.MessageID != "m\uFFFD" {
		t.Errorf("SaveMemory = %+v, %v", m, err)
	}
	check(t, s, task.Number)
}
