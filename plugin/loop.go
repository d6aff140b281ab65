package plugin

import (
	"context"
	"errors"
	"sync"
)

// ErrStarted refuses to start a Loop that runs already.
var ErrStarted = errors.New("already started")

// Loop is the goroutine of a Service that works in the background, from
// its Start to its Stop. The zero Loop is ready to use.
type Loop struct {
	mu   sync.Mutex
	stop context.CancelFunc
	done chan struct{}
}

// Go runs run in a goroutine of its own until Stop, with a context that
// Stop cancels (and ctx does not: ctx only bounds the start). It returns
// once run has called ready — when the loop waits for its first event,
// so that what it waits on is there before anyone looks — or run has
// returned, or ctx is done. ErrStarted when the loop runs already.
func (l *Loop) Go(ctx context.Context, run func(ctx context.Context, ready func())) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done != nil {
		return ErrStarted
	}
	loopCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done, started := make(chan struct{}), make(chan struct{})
	l.stop, l.done = stop, done
	var once sync.Once
	go func() {
		defer close(done)
		run(loopCtx, func() { once.Do(func() { close(started) }) })
	}()
	select {
	case <-started:
	case <-done:
	case <-ctx.Done():
	}
	return nil
}

// Stop cancels the loop's context and waits for run to return, or for ctx
// to end. A loop never started stops at once.
func (l *Loop) Stop(ctx context.Context) error {
	l.mu.Lock()
	stop, done := l.stop, l.done
	l.mu.Unlock()
	if stop == nil {
		return nil
	}
	stop()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
