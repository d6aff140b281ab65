package notify_test

import (
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// TestToolCallsNotified: a tools reply of two calls, the write succeeded
// and the read failed, shows the read as the last action and the read's
// error, not the write's success as a failure.
func TestToolCallsNotified(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		f := newFixture(t, open(t), "a")
		n := f.create("chat:C1", "Write then read").Number
		if _, err := f.store.ClaimTask(f.ctx, domain.Claim{Owner: "w", Now: f.clk.Now(), Lease: time.Minute}); err != nil {
			t.Fatal(err)
		}
		_, err := f.store.UpdateTask(f.ctx, n, func(cur domain.Task) (domain.Mutation, error) {
			m, err := domain.Iterated(cur, domain.Outcome{Owner: "w", Fence: cur.Fence, Now: f.clk.Now(), Progress: 20, Verdict: domain.VerdictContinue,
				Step:  domain.Step{Role: domain.RoleAgent, Action: "write_file", Params: []byte(`{"path":"a.md"}`), Success: true},
				Steps: []domain.Step{{Role: domain.RoleAgent, Action: "read_file", Params: []byte(`{"path":"b.md"}`), Error: "Cannot read b.md."}}})
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
		if len(msgs) != 1 || !strings.Contains(msgs[0], "read_file b.md") || !strings.Contains(msgs[0], "Cannot read b.md.") ||
			strings.Contains(msgs[0], "write_file") {
			t.Fatalf("messages = %q; want the read as the last action, with its error", msgs)
		}
	})
}
