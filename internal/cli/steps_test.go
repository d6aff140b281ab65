package cli_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
)

// TestShowATaskWithManySteps: show lists the page of latest steps the API
// sends and says how many there are in all; a task waiting on an answer
// still shows its question (its last step asked it).
func TestShowATaskWithManySteps(t *testing.T) {
	s := newServer(t, testkit.NewScriptedModel(), "")
	task, err := s.tasks.Create(s.ctx, domain.NewTask{Goal: "Read a lot", RequestorID: "u1", Actor: "u1", Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 30; i++ {
		now := t0.Add(time.Duration(i) * time.Second)
		c, err := s.store.ClaimTask(s.ctx, domain.Claim{Owner: "w", Now: now, Lease: time.Minute})
		if err != nil || c.Number != task.Number {
			t.Fatalf("claim: #%d %v", c.Number, err)
		}
		o := domain.Outcome{Owner: "w", Fence: c.Fence, Now: now, Progress: i,
			Step: domain.Step{Action: "read_file", Params: []byte(fmt.Sprintf(`{"path":"f%d.txt"}`, i)), Result: "text", Success: true}}
		if i == 30 {
			o.Wait = domain.WaitAnswer
			o.Step = domain.Step{Action: "ask_user", Params: []byte(`{"question":"Which license?"}`), Success: true}
		}
		if _, err := s.store.UpdateTask(s.ctx, task.Number, func(cur domain.Task) (domain.Mutation, error) { return domain.Iterated(cur, o) }); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := run(t, s.env, "show", "1")
	if code != 0 {
		t.Fatalf("show = %d %s", code, errOut)
	}
	for _, w := range []string{"Steps (last 20 of 30):", "f11.txt", "Which license?"} {
		if !strings.Contains(out, w) {
			t.Errorf("want %q in\n%s", w, out)
		}
	}
	if strings.Contains(out, "f10.txt") {
		t.Errorf("show lists more than the page:\n%s", out)
	}
}
