package notify_test

import (
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// TestBatchedMessageNamesTheRole: the room's batched message says whose
// step a multi-agent task took last (docs/strategies.md: "Last action:
// researcher → http_get …"); the step's role survives the outbox.
func TestBatchedMessageNamesTheRole(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open(t), "a")
		task, err := f.tasks.Create(f.ctx, domain.NewTask{Goal: "Compare the queue libraries", Strategy: domain.StrategySupervisor,
			RoomID: "chat:C1", RequestorID: "u1", Now: f.clk.Now()})
		if err != nil {
			t.Fatal(err)
		}
		claimed, err := f.store.ClaimTask(f.ctx, domain.Claim{Owner: "w", Now: f.clk.Now(), Lease: time.Minute})
		if err != nil || claimed.Number != task.Number {
			t.Fatalf("claim: #%d, %v", claimed.Number, err)
		}
		step := domain.Step{Action: "http_get", Params: []byte(`{"url":"https://riverqueue.com"}`), Success: true, Role: "researcher"}
		_, err = f.store.UpdateTask(f.ctx, task.Number, func(cur domain.Task) (domain.Mutation, error) {
			m, err := domain.Iterated(cur, domain.Outcome{Owner: "w", Fence: cur.Fence, Now: f.clk.Now(), Progress: 20, Verdict: domain.VerdictContinue, Step: step})
			if err == nil {
				m.Notifications = f.svc.Outbox(cur, m.Task, &m)
			}
			return m, err
		})
		if err != nil {
			t.Fatal(err)
		}
		f.flush()
		msgs := f.out.messages()
		if len(msgs) != 1 || !strings.Contains(msgs[0], "Last action: researcher → `http_get https://riverqueue.com` ✓") {
			t.Fatalf("messages = %q", msgs)
		}
	})
}
