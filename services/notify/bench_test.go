package notify_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// BenchmarkTerminalNotification measures the message of an ended task
// (claim, compose, send, mark sent) on PostgreSQL for a task of 10, 100
// and 1,000 steps, each with a result of 1 MiB: the bytes and
// allocations do not grow with the steps.
//
//	go test -run XXX -bench TerminalNotification -benchmem ./services/notify/
func BenchmarkTerminalNotification(b *testing.B) {
	for _, steps := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("steps=%d", steps), func(b *testing.B) {
			url := testkit.PostgresURL(b)
			f := newFixture(b, teststore.PostgresAt(b, url), "a")
			n := f.create("chat:C1", "Long task").Number
			f.iterate(n, 100, domain.VerdictDone, true) // step 1, and the terminal row
			if got, err := f.svc.FlushUrgent(f.ctx); err != nil || got != 1 {
				b.Fatalf("urgent flush sent %d (%v)", got, err)
			}
			testkit.FillSteps(b, url, n, 2, steps)
			ended := domain.Notification{Room: "chat:C1", TaskNumber: n, Category: domain.NotifyTerminal,
				Payload: []byte(`{"status":"completed"}`), CreatedAt: f.clk.Now()}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				if _, err := f.store.Enqueue(f.ctx, ended); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if got, err := f.svc.FlushUrgent(f.ctx); err != nil || got != 1 {
					b.Fatalf("urgent flush sent %d (%v)", got, err)
				}
			}
			b.StopTimer()
			if msgs := f.out.messages(); !strings.Contains(msgs[len(msgs)-1], fmt.Sprintf("Total steps: %d", steps)) {
				b.Fatalf("last message = %q", msgs[len(msgs)-1])
			}
		})
	}
}
