package domain_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// life keeps a task and its event log the way a store would, so the
// transitions can be tested, and replayed, without one.
type life struct {
	t      *testing.T
	task   domain.Task
	events []domain.TaskEvent
	steps  int
}

func newLife(t *testing.T, in domain.NewTask) *life {
	t.Helper()
	row, err := domain.NewTaskRow(in)
	if err != nil {
		t.Fatal(err)
	}
	row.Number = 1
	m, err := domain.Created(row, "tester", "")
	if err != nil {
		t.Fatal(err)
	}
	l := &life{t: t}
	l.apply(m)
	return l
}

func (l *life) apply(m domain.Mutation) {
	l.task = m.Task
	l.events = append(l.events, m.Event)
	if m.Step != nil {
		l.steps++
	}
}

func (l *life) do(m domain.Mutation, err error) error {
	if err == nil {
		l.apply(m)
	}
	return err
}

func (l *life) iterate(progress int, verdict domain.Verdict, at time.Time) error {
	l.t.Helper()
	if err := l.do(domain.Claimed(l.task, domain.Claim{Owner: "w1", Now: at, Lease: time.Minute})); err != nil {
		return err
	}
	return l.do(domain.Iterated(l.task, domain.Outcome{
		Owner: "w1", Fence: l.task.Fence, Now: at.Add(time.Second), Progress: progress, Verdict: verdict,
		Step: domain.Step{Action: "write_file", Params: json.RawMessage(`{"path":"a"}`), Result: "ok", Success: true},
	}))
}

func TestIterationRules(t *testing.T) {
	t.Parallel()
	type step struct {
		progress int
		verdict  domain.Verdict
	}
	tests := []struct {
		name      string
		maxIter   int
		steps     []step
		want      domain.Status
		progress  int
		stale     int
		wantError string
	}{
		{"rising progress keeps running", 50, []step{{10, "continue"}, {30, "continue"}}, domain.StatusRunning, 30, 0, ""},
		{"done completes at 100", 50, []step{{10, "continue"}, {60, "done"}}, domain.StatusCompleted, 100, 0, ""},
		{"stuck fails with a reason", 50, []step{{10, "stuck"}}, domain.StatusFailed, 10, 0, "the agent reported it is stuck"},
		{"three flat values are a stalemate", 50, []step{{20, "continue"}, {20, "continue"}, {15, "continue"}, {20, "continue"}}, domain.StatusStalemate, 20, 3, "no progress in 3 iterations"},
		{"a rise resets the stale counter", 50, []step{{20, "continue"}, {20, "continue"}, {20, "continue"}, {25, "continue"}}, domain.StatusRunning, 25, 0, ""},
		{"max iterations is a stalemate", 3, []step{{10, "continue"}, {20, "continue"}, {30, "continue"}}, domain.StatusStalemate, 30, 0, "reached the limit of 3 iterations"},
		{"progress is clamped to 100", 50, []step{{250, "continue"}}, domain.StatusRunning, 100, 0, ""},
		{"negative progress is not a rise", 50, []step{{-5, "continue"}}, domain.StatusRunning, 0, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := newLife(t, domain.NewTask{Goal: "Build auth", MaxIterations: tt.maxIter, Now: t0})
			at := t0
			for _, s := range tt.steps {
				at = at.Add(time.Minute)
				if err := l.iterate(s.progress, s.verdict, at); err != nil {
					t.Fatal(err)
				}
			}
			got := l.task
			if got.Status != tt.want || got.Progress != tt.progress || got.StaleCounter != tt.stale || got.Error != tt.wantError {
				t.Fatalf("got status=%s progress=%d stale=%d error=%q; want %s %d %d %q",
					got.Status, got.Progress, got.StaleCounter, got.Error, tt.want, tt.progress, tt.stale, tt.wantError)
			}
			if got.Iteration != len(tt.steps) || got.LeaseOwner != "" {
				t.Fatalf("iteration=%d lease=%q", got.Iteration, got.LeaseOwner)
			}
			if got.Status.Terminal() != !got.CompletedAt.IsZero() {
				t.Fatalf("completed_at %v for status %s", got.CompletedAt, got.Status)
			}
			if v := domain.Check(l.task, l.events, l.steps); len(v) != 0 {
				t.Fatalf("check: %v", v)
			}
		})
	}
}

func TestIteratedRefusesStaleFenceAndEndedTasks(t *testing.T) {
	t.Parallel()
	l := newLife(t, domain.NewTask{Goal: "x", Now: t0})
	if err := l.do(domain.Claimed(l.task, domain.Claim{Owner: "a", Now: t0, Lease: time.Minute})); err != nil {
		t.Fatal(err)
	}
	stale := domain.Outcome{Owner: "a", Fence: l.task.Fence, Now: t0.Add(2 * time.Minute), Progress: 50}
	// The lease ran out and b claimed the task.
	if err := l.do(domain.Claimed(l.task, domain.Claim{Owner: "b", Now: t0.Add(time.Minute), Lease: time.Minute})); err != nil {
		t.Fatal(err)
	}
	if _, err := domain.Iterated(l.task, stale); !errors.Is(err, domain.ErrStaleFence) {
		t.Fatalf("stale commit: err = %v", err)
	}
	if err := l.do(domain.Canceled(l.task, "u1", "", t0.Add(3*time.Minute))); err != nil {
		t.Fatal(err)
	}
	if l.task.LeaseOwner != "" {
		t.Fatal("canceled task kept its lease")
	}
	fresh := domain.Outcome{Owner: "b", Fence: 2, Now: t0.Add(4 * time.Minute)}
	for name, fn := range map[string]func() (domain.Mutation, error){
		"iterate": func() (domain.Mutation, error) { return domain.Iterated(l.task, fresh) },
		"pause":   func() (domain.Mutation, error) { return domain.Paused(l.task, "u", t0) },
		"resume":  func() (domain.Mutation, error) { return domain.Resumed(l.task, "u", t0) },
		"cancel":  func() (domain.Mutation, error) { return domain.Canceled(l.task, "u", "", t0) },
		"answer":  func() (domain.Mutation, error) { return domain.Answered(l.task, "u", "yes", t0) },
		"claim":   func() (domain.Mutation, error) { return domain.Claimed(l.task, domain.Claim{Owner: "c", Now: t0}) },
	} {
		if _, err := fn(); !errors.Is(err, domain.ErrTerminal) && !errors.Is(err, domain.ErrInvalidState) {
			t.Errorf("%s of a canceled task: err = %v", name, err)
		}
	}
	// Recording the rejection keeps the log valid and changes nothing.
	if err := l.do(domain.Rejected(l.task, stale, domain.ErrStaleFence)); err != nil {
		t.Fatal(err)
	}
	if v := domain.Check(l.task, l.events, l.steps); len(v) != 0 {
		t.Fatalf("check: %v", v)
	}
}

func TestGuardedTransitions(t *testing.T) {
	t.Parallel()
	l := newLife(t, domain.NewTask{Goal: "x", Now: t0})
	if _, err := domain.Resumed(l.task, "u", t0); !errors.Is(err, domain.ErrInvalidState) {
		t.Fatalf("resume of a queued task: %v", err)
	} else if want := "resume task #1: transition not allowed in this state (queued)"; err.Error() != want {
		t.Fatalf("message = %q, want %q", err, want)
	}
	if err := l.do(domain.Paused(l.task, "u", t0)); err != nil {
		t.Fatal(err)
	}
	if _, err := domain.Paused(l.task, "u", t0); !errors.Is(err, domain.ErrInvalidState) {
		t.Fatalf("pause of a paused task: %v", err)
	}
	if _, err := domain.Claimed(l.task, domain.Claim{Owner: "w", Now: t0}); err == nil {
		t.Fatal("a paused task was claimed")
	}
	if err := l.do(domain.Resumed(l.task, "u", t0)); err != nil || l.task.Status != domain.StatusQueued {
		t.Fatalf("resume: %v, status %s", err, l.task.Status)
	}
	if _, err := domain.Answered(l.task, "u", "x", t0); !errors.Is(err, domain.ErrInvalidState) {
		t.Fatalf("answer of a queued task: %v", err)
	}
}

func TestPausedDuringIterationStaysPaused(t *testing.T) {
	t.Parallel()
	l := newLife(t, domain.NewTask{Goal: "x", Now: t0})
	if err := l.do(domain.Claimed(l.task, domain.Claim{Owner: "w", Now: t0, Lease: time.Minute})); err != nil {
		t.Fatal(err)
	}
	fence := l.task.Fence
	if err := l.do(domain.Paused(l.task, "u", t0.Add(time.Second))); err != nil {
		t.Fatal(err)
	}
	if err := l.do(domain.Iterated(l.task, domain.Outcome{Owner: "w", Fence: fence, Now: t0.Add(2 * time.Second), Progress: 40})); err != nil {
		t.Fatal(err)
	}
	if l.task.Status != domain.StatusPaused || l.task.Progress != 40 || l.steps != 1 {
		t.Fatalf("status %s progress %d steps %d", l.task.Status, l.task.Progress, l.steps)
	}
}

func TestNewTaskRowValidates(t *testing.T) {
	t.Parallel()
	for _, goal := range []string{"", "   \n\t", strings.Repeat("é", domain.MaxGoalLength+1), "bad \xff utf8"} {
		if _, err := domain.NewTaskRow(domain.NewTask{Goal: goal}); !errors.Is(err, domain.ErrInvalid) {
			t.Errorf("goal of %d bytes: err = %v", len(goal), err)
		}
	}
	row, err := domain.NewTaskRow(domain.NewTask{Goal: strings.Repeat("é", domain.MaxGoalLength)})
	if err != nil || row.MaxIterations != 50 || row.MaxStaleIterations != 3 || row.WorkspaceID != "local" || row.Status != domain.StatusQueued {
		t.Fatalf("row = %+v, err = %v", row, err)
	}
}

func TestNameFromGoal(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"build auth": "Build auth",
		"fix the flaky login test. It fails on CI often":   "Fix the flaky login test",
		"one two three four five six seven eight nine ten": "One two three four five six seven eight",
		"éclair recipe":                 "Éclair recipe",
		strings.Repeat("abcdefghij", 8): "A" + strings.Repeat("bcdefghija", 5) + "bcdefghi…",
	}
	for goal, want := range tests {
		if got := domain.NameFromGoal(goal); got != want {
			t.Errorf("NameFromGoal(%q) = %q, want %q", goal, got, want)
		}
	}
}

func TestCheckFindsCorruption(t *testing.T) {
	t.Parallel()
	base := newLife(t, domain.NewTask{Goal: "x", Now: t0})
	for i := 1; i <= 3; i++ {
		if err := base.iterate(i*10, "continue", t0.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if v := domain.Check(base.task, base.events, base.steps); len(v) != 0 {
		t.Fatalf("clean life: %v", v)
	}
	tests := []struct {
		name    string
		corrupt func(row *domain.Task, evs []domain.TaskEvent, steps *int) []domain.TaskEvent
		want    string
	}{
		{"row progress edited", func(r *domain.Task, e []domain.TaskEvent, _ *int) []domain.TaskEvent { r.Progress = 99; return e }, "column progress is 99 in the row but 30 from the events"},
		{"progress out of range", func(r *domain.Task, e []domain.TaskEvent, _ *int) []domain.TaskEvent { r.Progress = 120; return e }, "progress 120 is outside 0–100"},
		{"gap in the sequence", func(_ *domain.Task, e []domain.TaskEvent, _ *int) []domain.TaskEvent {
			return append(e[:2:2], e[3:]...)
		}, "the sequence has a gap"},
		{"missing step", func(_ *domain.Task, e []domain.TaskEvent, s *int) []domain.TaskEvent { *s--; return e }, "has 2 steps but 3 step events"},
		{"terminal task with lease", func(r *domain.Task, e []domain.TaskEvent, _ *int) []domain.TaskEvent {
			r.Status, r.LeaseOwner = domain.StatusCompleted, "w9"
			return e
		}, "has ended (completed) but is leased"},
		{"fence lowered", func(_ *domain.Task, e []domain.TaskEvent, _ *int) []domain.TaskEvent {
			last := &e[len(e)-1]
			last.Fence = 0
			return e
		}, "fence 0 after fence"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row := base.task
			evs := append([]domain.TaskEvent(nil), base.events...)
			steps := base.steps
			evs = tt.corrupt(&row, evs, &steps)
			v := domain.Check(row, evs, steps)
			found := false
			for _, x := range v {
				if strings.Contains(x.String(), tt.want) {
					found = true
				}
			}
			if !found {
				t.Fatalf("violations %v do not mention %q", v, tt.want)
			}
		})
	}
}

func TestEventsRecordOnlyChangedColumns(t *testing.T) {
	t.Parallel()
	l := newLife(t, domain.NewTask{Goal: "x", Now: t0})
	if err := l.do(domain.Paused(l.task, "u", t0)); err != nil {
		t.Fatal(err)
	}
	var p domain.EventPayload
	if err := json.Unmarshal(l.events[1].Payload, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Changes) != 1 || string(p.Changes["status"]) != `"paused"` {
		t.Fatalf("changes = %v", p.Changes)
	}
	if l.events[1].Sequence != 2 || l.events[1].Actor != "u" {
		t.Fatalf("event = %+v", l.events[1])
	}
}
