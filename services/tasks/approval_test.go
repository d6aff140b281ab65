package tasks_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/services/tasks"
)

// approvalFixture is a fixture whose service makes write_file wait for a
// person, as run_command does by default.
func approvalFixture(t *testing.T, open teststore.Opener) *fixture {
	f := newFixture(t, open)
	f.svc = tasks.New(tasks.Options{Runtime: f.rt, Lease: lease, Owner: "test", ApproveTools: []string{"write_file"}})
	return f
}

func (f *fixture) outboxTexts() []string {
	f.t.Helper()
	var out []string
	for {
		room, rows, err := f.store.ClaimRoom(f.ctx, domain.RoomClaim{Owner: "reader", Now: f.clk.Now(), Lease: time.Hour})
		if err != nil {
			f.t.Fatal(err)
		}
		if room == "" {
			return out
		}
		ids := make([]int64, 0, len(rows))
		for _, r := range rows {
			var p struct{ Kind, Text string }
			_ = json.Unmarshal(r.Payload, &p)
			out = append(out, p.Kind+": "+p.Text)
			ids = append(ids, r.ID)
		}
		// Read is delivered: the room's next lines can be read too.
		if err := f.store.MarkSent(f.ctx, "reader", ids, nil); err != nil {
			f.t.Fatal(err)
		}
	}
}

// TestApprovedCallRunsExactlyAsAsked: a tool that needs approval does not
// run when the model picks it; the task waits on approval and its room is
// asked; once approved, the next claim runs exactly the stored call, with
// no model call, and its step completes the iteration that asked.
func TestApprovedCallRunsExactlyAsAsked(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := approvalFixture(t, open)
		f.model.Decide("write_file", map[string]string{"path": "deploy.sh", "content": "echo hi"}, 30, "continue")
		n := f.create("Write the deploy script").Number
		f.step("test")
		got := f.task(n)
		if got.Status != domain.StatusWaiting || got.WaitingOn != domain.WaitApproval || got.ApprovalAction != "write_file" {
			t.Fatalf("task = %s on %q asking %q; want waiting on approval of write_file", got.Status, got.WaitingOn, got.ApprovalAction)
		}
		if _, err := f.file(n, "deploy.sh"); !errors.Is(err, domain.ErrNoFile) {
			t.Fatalf("deploy.sh before anyone approved it: %v; want no such file", err)
		}
		if texts := f.outboxTexts(); len(texts) != 1 || !strings.HasPrefix(texts[0], `approval: write_file {"`) {
			t.Fatalf("outbox = %q; want one approval request", texts)
		}
		if f.step("test") {
			t.Fatal("a task waiting on approval was served")
		}
		if _, err := f.svc.Answer(f.ctx, n, "u1", "yes"); err == nil {
			t.Fatal("an answer was taken by a task waiting on an approval")
		}

		calls := len(f.model.Requests())
		if _, err := f.svc.Approve(f.ctx, n, "u1", ""); err != nil {
			t.Fatal(err)
		}
		f.step("test")
		if len(f.model.Requests()) != calls {
			t.Error("the approved call asked the model again")
		}
		data, err := f.file(n, "deploy.sh")
		if err != nil || data != "echo hi" {
			t.Fatalf("deploy.sh = %q, %v; want the approved content", data, err)
		}
		got = f.task(n)
		steps := f.steps(n)
		if got.Iteration != 1 || len(steps) != 1 || steps[0].Iteration != 1 || !steps[0].Success || got.ApprovalAction != "" {
			t.Fatalf("after the approved run: iteration %d, steps %+v, approval %q; want the one step of iteration 1", got.Iteration, steps, got.ApprovalAction)
		}
		if _, err := f.svc.Approve(f.ctx, n, "u1", ""); err == nil {
			t.Fatal("a second approval was taken")
		}
		f.check()
	})
}

// TestDeniedCallFailsItsStep: a denied call never runs; the step of the
// iteration that asked fails with the reason, and the task decides anew —
// a different call needs a new approval.
func TestDeniedCallFailsItsStep(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := approvalFixture(t, open)
		f.model.Decide("write_file", map[string]string{"path": "x.sh", "content": "rm -rf /"}, 30, "continue")
		f.model.Decide("write_file", map[string]string{"path": "x.sh", "content": "echo safe"}, 40, "continue")
		n := f.create("Write a script").Number
		f.step("test")
		if _, err := f.svc.Deny(f.ctx, n, "boss", "", "not that"); err != nil {
			t.Fatal(err)
		}
		steps := f.steps(n)
		if len(steps) != 1 || steps[0].Success || steps[0].Error != "denied by boss: not that" || steps[0].Action != "write_file" {
			t.Fatalf("steps = %+v; want iteration 1's step failed with the reason", steps)
		}
		if steps[0].Role != domain.RoleAgent {
			t.Fatalf("the denied step's role = %q, want the asking step's %q", steps[0].Role, domain.RoleAgent)
		}
		if got := f.task(n); got.Status != domain.StatusQueued || got.WaitingOn != domain.WaitNone || got.ApprovalRole != "" {
			t.Fatalf("task = %s on %q, approval asked as %q; want queued, nothing pending", got.Status, got.WaitingOn, got.ApprovalRole)
		}
		if _, err := f.file(n, "x.sh"); !errors.Is(err, domain.ErrNoFile) {
			t.Fatalf("x.sh after a denied call: %v; want no such file", err)
		}
		f.step("test") // the model asks again, differently
		got := f.task(n)
		if got.WaitingOn != domain.WaitApproval || !strings.Contains(got.ApprovalParams, "echo safe") {
			t.Fatalf("the changed request = %q %q; want a new approval wait for it", got.WaitingOn, got.ApprovalParams)
		}
		f.check()
	})
}

// TestSecondApprovalOfTheSameTask: the second call of a task that needs
// approval asks again — its own request, naming its own call — and,
// approved, runs exactly as asked, as the first did; the approval of the
// first does not carry over to it, nor is it refused as spent.
func TestSecondApprovalOfTheSameTask(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := approvalFixture(t, open)
		f.model.Decide("write_file", map[string]string{"path": "a.sh", "content": "echo a"}, 30, "continue")
		f.model.Decide("write_file", map[string]string{"path": "b.sh", "content": "echo b"}, 90, "continue")
		f.model.Decide("none", nil, 100, "done")
		n := f.create("Write two scripts").Number
		var ids []string
		for i, name := range []string{"a.sh", "b.sh"} {
			f.step("test") // the model picks the call; it waits on approval
			got := f.task(n)
			if got.Status != domain.StatusWaiting || got.WaitingOn != domain.WaitApproval || !strings.Contains(got.ApprovalParams, name) {
				t.Fatalf("call %d: task = %s on %q asking %s; want waiting on approval of %s", i+1, got.Status, got.WaitingOn, got.ApprovalParams, name)
			}
			ids = append(ids, domain.ApprovalID(got))
			if texts := f.outboxTexts(); len(texts) != 1 || !strings.Contains(texts[0], name) {
				t.Fatalf("call %d: outbox = %q; want one approval request for %s", i+1, texts, name)
			}
			if _, err := f.file(n, name); !errors.Is(err, domain.ErrNoFile) {
				t.Fatalf("%s before its approval: %v", name, err)
			}
			if _, err := f.svc.Approve(f.ctx, n, "u1", ids[i]); err != nil {
				t.Fatalf("approval %d: %v", i+1, err)
			}
			f.step("test") // the approved call runs
			if data, err := f.file(n, name); err != nil || data != "echo "+name[:1] {
				t.Fatalf("%s = %q, %v after its approval", name, data, err)
			}
		}
		if ids[0] == ids[1] {
			t.Errorf("both calls have the approval id %q", ids[0])
		}
		f.step("test")
		if got := f.task(n); got.Status != domain.StatusCompleted {
			t.Fatalf("task = %s after both approved calls; want completed", got.Status)
		}
		f.check()
	})
}
