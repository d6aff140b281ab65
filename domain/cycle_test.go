package domain_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// cycleClaim commits one claim of cycle c: unjudged, or judged at
// progress.
func (l *life) cycleClaim(c, progress int, unjudged bool, at time.Time) error {
	l.t.Helper()
	if err := l.do(domain.Claimed(l.task, domain.Claim{Owner: "w1", Now: at, Lease: time.Minute})); err != nil {
		return err
	}
	return l.do(domain.Iterated(l.task, domain.Outcome{
		Owner: "w1", Fence: l.task.Fence, Now: at.Add(time.Second), Progress: progress, Verdict: domain.VerdictContinue,
		Unjudged: unjudged, Cycle: c,
		Step: domain.Step{Action: "write_file", Params: json.RawMessage(`{"path":"a"}`), Result: "ok", Success: true},
	}))
}

// TestCheckBoundsCycles: a task whose claims come in cycles (react) runs
// more claims than max_iterations, which bounds its cycles; check takes
// that from the events and still catches a cycle past the limit.
func TestCheckBoundsCycles(t *testing.T) {
	t.Parallel()
	l := newLife(t, domain.NewTask{Goal: "Think, act, observe", MaxIterations: 2, Now: t0})
	at := t0
	for c := 1; c <= 2; c++ {
		for i, unjudged := range []bool{true, true, false} {
			at = at.Add(time.Minute)
			if err := l.cycleClaim(c, 10*c+i, unjudged, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	if l.task.Status != domain.StatusStalemate || l.task.Iteration != 6 || l.task.Error != "reached the limit of 2 iterations" {
		t.Fatalf("after two cycles: %s, iteration %d, %q", l.task.Status, l.task.Iteration, l.task.Error)
	}
	if v := domain.Check(l.task, l.events, l.steps); len(v) != 0 {
		t.Fatalf("check of six claims in two cycles: %v", v)
	}

	// An event log claiming a third cycle of a task that allows two.
	evs := append([]domain.TaskEvent(nil), l.events...)
	last := &evs[len(evs)-1]
	var p domain.EventPayload
	if err := json.Unmarshal(last.Payload, &p); err != nil {
		t.Fatal(err)
	}
	p.Detail["cycle"] = 3
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	last.Payload = raw
	v := domain.Check(l.task, evs, l.steps)
	if len(v) == 0 || !strings.Contains(v[0].Problem, "cycle 3 is beyond max_iterations 2") {
		t.Fatalf("check of a third cycle = %v", v)
	}
}
