package clock_test

import (
	"context"
	"testing"
	"time"

	"github.com/taskloom/taskloom/internal/clock"
)

func TestFakeFiresInOrderOnlyWhenDue(t *testing.T) {
	t.Parallel()
	f := clock.NewFake(time.Unix(0, 0))
	a, b := f.NewTimer(2*time.Second), f.NewTimer(time.Second)
	f.Advance(999 * time.Millisecond)
	select {
	case <-b.C():
		t.Fatal("fired early")
	default:
	}
	f.Advance(time.Millisecond)
	<-b.C()
	if f.Waiters() != 1 {
		t.Fatalf("waiters = %d", f.Waiters())
	}
	if a.Stop() != true || f.Waiters() != 0 {
		t.Fatal("stop did not remove the timer")
	}
}

func TestWithTimeoutOnFakeClock(t *testing.T) {
	t.Parallel()
	f := clock.NewFake(time.Unix(0, 0))
	ctx, cancel := clock.WithTimeout(context.Background(), f, time.Minute)
	defer cancel()
	if err := f.BlockUntil(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	f.Advance(59 * time.Second)
	if ctx.Err() != nil {
		t.Fatal("ended before its deadline")
	}
	f.Advance(time.Second)
	<-ctx.Done()
	if !clock.TimedOut(ctx) {
		t.Fatalf("cause = %v", context.Cause(ctx))
	}
	ctx2, cancel2 := clock.WithTimeout(context.Background(), f, time.Minute)
	cancel2()
	if clock.TimedOut(ctx2) || ctx2.Err() == nil {
		t.Fatal("a canceled context must not count as timed out")
	}
}

func TestSleepHonoursContext(t *testing.T) {
	t.Parallel()
	f := clock.NewFake(time.Unix(0, 0))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- clock.Sleep(ctx, f, time.Hour) }()
	_ = f.BlockUntil(context.Background(), 1)
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("err = %v", err)
	}
}
