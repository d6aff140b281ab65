package notify_test

import (
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
)

// TestBatchedMessageNamesTheRole: the room's batched message says whose
// step a multi-agent task took last (docs/strategies.md: "Last action:
// researcher → http_get …"); the step's role survives the outbox.
func TestBatchedMessageNamesTheRole(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open(t), "a")
		task, err := f.tasks.Create(f.ctx, plugin.NewTask{Goal: "Compare the queue libraries", Strategy: plugin.StrategySupervisor,
			RoomID: "chat:C1", RequestorID: "u1", Now: f.clk.Now()})
		if err != nil {
			t.Fatal(err)
		}
		claimed, err := f.store.ClaimTask(f.ctx, plugin.Claim{Owner: "w", Now: f.clk.Now(), Lease: time.Minute})
		if err != nil || claimed.Number != task.Number {
			t.Fatalf("claim: #%d, %v", claimed.Number, err)
		}
		step := plugin.Step{Action: "http_get", Params: []byte(`{"url":"https://riverqueue.com"}`), Success: true, Role: "researcher"}
		_, err = f.store.UpdateTask(f.ctx, task.Number, func(cur plugin.Task) (plugin.Mutation, error) {
			m, err := plugin.Iterated(cur, plugin.Outcome{Owner: "w", Fence: cur.Fence, Now: f.clk.Now(), Progress: 20, Verdict: plugin.VerdictContinue, Step: step})
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
