package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/tasks"
)

// outboxCalls are the ids the approval requests in the outbox carry, in
// order. Rows are not taken out: a later read sees them again.
func (f *fixture) outboxCalls() []string {
	f.t.Helper()
	var out []string
	for {
		room, rows, err := f.store.ClaimRoom(f.ctx, domain.RoomClaim{Owner: "reader", Now: f.clk.Now(), Lease: time.Millisecond})
		if err != nil {
			f.t.Fatal(err)
		}
		if room == "" {
			return out
		}
		for _, r := range rows {
			var p struct{ Kind, Call string }
			if json.Unmarshal(r.Payload, &p) == nil && p.Kind == "approval" {
				out = append(out, p.Call)
			}
		}
	}
}

// TestDecisionsLandOnTheirCall: deny call A; the model asks call B; an
// approval that names A changes nothing and says what is pending now; one
// that names B runs B. The request posted for each carries its own id.
func TestDecisionsLandOnTheirCall(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := approvalFixture(t, open)
		f.model.Decide("write_file", map[string]string{"path": "a.sh", "content": "echo A"}, 20, "continue")
		f.model.Decide("write_file", map[string]string{"path": "b.sh", "content": "echo B"}, 30, "continue")
		n := f.create("Write a script").Number
		f.step("test")
		a := domain.ApprovalID(f.task(n))
		if got := f.outboxCalls(); len(got) != 1 || got[0] != a || a == "" {
			t.Fatalf("requests posted carry %q; want the pending call's id %q", got, a)
		}
		if _, err := f.svc.Deny(f.ctx, n, "u1", a, "not A"); err != nil {
			t.Fatal(err)
		}
		f.step("test")
		waiting := f.task(n)
		b := domain.ApprovalID(waiting)
		if b == "" || b == a {
			t.Fatalf("after the model asked again the pending id is %q (A's was %q)", b, a)
		}
		if got := f.outboxCalls(); len(got) != 2 || got[1] != b {
			t.Fatalf("requests posted carry %q; want B's id %q", got, b)
		}

		for _, decide := range []func() error{
			func() error { _, err := f.svc.Approve(f.ctx, n, "u1", a); return err },
			func() error { _, err := f.svc.Deny(f.ctx, n, "u1", a, "late"); return err },
			func() error { _, err := f.svc.Approve(f.ctx, n, "u1", "not-an-id"); return err },
		} {
			err := decide()
			var stale *domain.StaleApprovalError
			if !errors.As(err, &stale) || !errors.Is(err, domain.ErrInvalidState) || domain.ApprovalID(stale.Now) != b {
				t.Fatalf("a decision on A's call = %v; want a StaleApprovalError naming B", err)
			}
		}
		if got := f.task(n); got.EventSeq != waiting.EventSeq || got.ApprovalGranted || domain.ApprovalID(got) != b {
			t.Fatalf("a stale decision changed the task: %+v", got)
		}

		if _, err := f.svc.Approve(f.ctx, n, "u1", b); err != nil {
			t.Fatal(err)
		}
		f.step("test")
		if data, err := f.file(n, "b.sh"); err != nil || data != "echo B" {
			t.Fatalf("b.sh = %q, %v; want B run as asked", data, err)
		}
		if _, err := f.file(n, "a.sh"); !errors.Is(err, domain.ErrNoFile) {
			t.Fatalf("a.sh: %v; A was denied and must never run", err)
		}
		if _, err := f.svc.Approve(f.ctx, n, "u1", b); !errors.Is(err, domain.ErrStaleApproval) {
			t.Fatalf("approving B again = %v; want it refused as no longer pending", err)
		}
		f.check()
	})
}

// TestAskedApprovalIDIsTheCommittedOne: the id a request is posted with,
// computed before the iteration commits, is the id of the call once it
// is pending — for a call with parameters and one without.
func TestAskedApprovalIDIsTheCommittedOne(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := approvalFixture(t, open)
		f.model.Decide("write_file", map[string]string{"path": "x", "content": "  spaced  "}, 20, "continue")
		n := f.create("Write").Number
		before := f.task(n)
		f.step("test")
		got := f.task(n)
		if want := domain.AskedApprovalID(before, got.ApprovalAction, json.RawMessage(got.ApprovalParams)); domain.ApprovalID(got) != want {
			t.Fatalf("pending id %q, asked id %q", domain.ApprovalID(got), want)
		}
	})
}

// TestTaskWithoutARoomAsksAndWaits: a task made through the API has no
// room; it asks its question and waits for an approval like any other,
// is answered and approved, and completes.
func TestTaskWithoutARoomAsksAndWaits(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := approvalFixture(t, open)
		f.model.Decide("ask_user", map[string]string{"question": "Which port?"}, 10, "continue")
		f.model.Decide("write_file", map[string]string{"path": "port", "content": "8080"}, 50, "continue")
		f.model.Decide("", nil, 100, "done")
		n := f.create("Configure the port", func(in *domain.NewTask) { in.RoomID, in.Platform = "", "api" }).Number

		f.step("test")
		if got := f.task(n); got.Status != domain.StatusWaiting || got.WaitingOn != domain.WaitAnswer {
			t.Fatalf("after asking: %s on %q; want waiting on an answer", got.Status, got.WaitingOn)
		}
		if f.step("test") {
			t.Fatal("a task waiting on an answer was served")
		}
		if _, err := f.svc.Answer(f.ctx, n, "api", "8080"); err != nil {
			t.Fatal(err)
		}
		f.step("test")
		got := f.task(n)
		if got.Status != domain.StatusWaiting || got.WaitingOn != domain.WaitApproval || domain.ApprovalID(got) == "" {
			t.Fatalf("after asking approval: %s on %q; want waiting on an approval (error %q)", got.Status, got.WaitingOn, got.Error)
		}
		evs, err := f.store.TaskEvents(f.ctx, n, 0)
		if err != nil {
			t.Fatal(err)
		}
		var asked bool
		for _, e := range evs {
			var p domain.EventPayload
			_ = json.Unmarshal(e.Payload, &p)
			asked = asked || (e.Type == domain.EventIterated && p.Detail["call"] == domain.ApprovalID(got))
		}
		if !asked {
			t.Fatal("no event carries the approval request's id")
		}
		if _, err := f.svc.Approve(f.ctx, n, "api", domain.ApprovalID(got)); err != nil {
			t.Fatal(err)
		}
		f.step("test")
		f.step("test")
		if got := f.task(n); got.Status != domain.StatusCompleted {
			t.Fatalf("task = %s (%s); want completed", got.Status, got.Error)
		}
		if data, err := f.file(n, "port"); err != nil || data != "8080" {
			t.Fatalf("port = %q, %v", data, err)
		}
		f.check()
	})
}

// TestCommitThatCannotSucceedFailsTheTask: a result the store refuses
// every time (here a notification it cannot take) is not made again
// forever: after MaxCommitFailures tries of the same iteration the task
// fails with the reason, having asked the model that many times.
func TestCommitThatCannotSucceedFailsTheTask(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open)
		refuse := func(before, after domain.Task, m *domain.Mutation) []domain.Notification {
			if m.Event.Type != domain.EventIterated {
				return nil
			}
			return []domain.Notification{{TaskNumber: after.Number}} // no room: the store refuses it
		}
		f.svc = tasks.New(tasks.Options{Runtime: f.rt, Lease: lease, Owner: "test", Notify: refuse})
		decision := testkit.DecisionJSON("write_file", map[string]string{"path": "x", "content": "y"}, 20, "continue")
		f.model.Default(func(context.Context, plugin.ModelRequest) (plugin.ModelResponse, error) {
			return plugin.ModelResponse{Text: decision}, nil
		})
		n := f.create("Loop forever").Number
		for i := 1; i <= domain.MaxCommitFailures; i++ {
			if _, err := f.svc.Step(f.ctx, "test"); err == nil {
				t.Fatalf("try %d: the commit went through", i)
			}
			f.clk.Advance(lease)
			got := f.task(n)
			if want := i == domain.MaxCommitFailures; got.Status.Terminal() != want {
				t.Fatalf("after %d failed commits: %s; want ended %v", i, got.Status, want)
			}
		}
		got := f.task(n)
		if got.Status != domain.StatusFailed || !strings.Contains(got.Error, "could not be recorded (3 tries)") {
			t.Fatalf("task = %s, %q; want failed saying why", got.Status, got.Error)
		}
		if calls := len(f.model.Requests()); calls != domain.MaxCommitFailures {
			t.Fatalf("the model was asked %d times; want %d", calls, domain.MaxCommitFailures)
		}
		if f.step("test") {
			t.Fatal("the failed task was served again")
		}
		f.check()
	})
}

// TestLastIterationAsksNothing: an iteration that asks a question or an
// approval but ends its task (its last iteration) posts no request:
// nobody could answer it.
func TestLastIterationAsksNothing(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := approvalFixture(t, open)
		f.model.Decide("write_file", map[string]string{"path": "x", "content": "y"}, 20, "continue")
		f.model.Decide("ask_user", map[string]string{"question": "Which port?"}, 20, "continue")
		last := func(in *domain.NewTask) { in.MaxIterations = 1 }
		a := f.create("Ask approval on the last iteration", last).Number
		f.step("test")
		q := f.create("Ask a question on the last iteration", last).Number
		f.step("test")
		for _, n := range []int64{a, q} {
			if got := f.task(n); got.Status != domain.StatusStalemate || got.WaitingOn != domain.WaitNone || domain.ApprovalID(got) != "" {
				t.Fatalf("#%d = %s waiting on %q; want ended, waiting on nothing", n, got.Status, got.WaitingOn)
			}
		}
		for _, text := range f.outboxTexts() {
			if strings.HasPrefix(text, "approval:") || strings.HasPrefix(text, "question:") {
				t.Errorf("the outbox asks %q of an ended task", text)
			}
		}
		f.check()
	})
}
