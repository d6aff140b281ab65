package cli

import (
	"context"
	"time"
)

// SetSleep makes the client wait with fn instead of the clock, so a test
// sees how long it would wait without waiting; it returns what undoes it.
func SetSleep(fn func(ctx context.Context, d time.Duration) error) (undo func()) {
	old := sleep
	sleep = fn
	return func() { sleep = old }
}

// TerminalSafe is what `taskloom tasks files N PATH` writes to a terminal
// for a file's bytes.
var TerminalSafe = terminalSafe
