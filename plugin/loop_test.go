package plugin_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskloom/taskloom/plugin"
)

// Go returns once the loop says it is ready, a second Go is refused, and
// Stop cancels the loop and waits for it.
func TestLoop(t *testing.T) {
	var l plugin.Loop
	if err := l.Stop(t.Context()); err != nil {
		t.Fatalf("Stop of a loop never started = %v", err)
	}
	var ready, ended atomic.Bool
	if err := l.Go(t.Context(), func(ctx context.Context, started func()) {
		time.Sleep(10 * time.Millisecond) // Go waits for started, not for the goroutine to begin
		ready.Store(true)
		started()
		started() // twice is harmless
		<-ctx.Done()
		ended.Store(true)
	}); err != nil {
		t.Fatal(err)
	}
	if !ready.Load() {
		t.Error("Go returned before the loop was ready")
	}
	if err := l.Go(t.Context(), func(context.Context, func()) {}); !errors.Is(err, plugin.ErrStarted) {
		t.Errorf("second Go = %v, want ErrStarted", err)
	}
	if err := l.Stop(t.Context()); err != nil || !ended.Load() {
		t.Errorf("Stop = %v, loop ended %v", err, ended.Load())
	}
}

// Stop gives up when its context ends before the loop does.
func TestLoopStopDeadline(t *testing.T) {
	var l plugin.Loop
	hold := make(chan struct{})
	defer close(hold)
	if err := l.Go(t.Context(), func(_ context.Context, started func()) { started(); <-hold }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := l.Stop(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Stop = %v, want the context's error", err)
	}
}
