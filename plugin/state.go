package plugin

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"
)

// State is what providers composed for one message or model call.
type State struct {
	// Text is the providers' texts joined in position order.
	Text   string
	Values map[string]any
	Data   map[string]any
	// Providers reports each provider that ran, in position order,
	// including those that failed or ran out of time.
	Providers []ProviderOutput
}

// ProviderOutput is what one provider did during composition.
type ProviderOutput struct {
	Name     string
	Position int
	Result   ProviderResult
	Err      error
	Elapsed  time.Duration
	TimedOut bool
}

// ErrProviderTimeout marks a provider cut off by the time budget.
var ErrProviderTimeout = errors.New("provider ran out of time")

// ComposeState runs the providers concurrently under the runtime's time
// budget and merges their results, ordered by position (then name).
// Dynamic and private providers run only when named in include. A provider
// that fails or is still running when the budget is spent is logged and
// left out; the rest still count.
func (rt *Runtime) ComposeState(ctx context.Context, msg *Message, include ...string) *State {
	rt.mu.RLock()
	var ps []Provider
	for _, p := range rt.providers {
		info := p.Info()
		if (info.Dynamic || info.Private) && !slices.Contains(include, info.Name) {
			continue
		}
		ps = append(ps, p)
	}
	rt.mu.RUnlock()

	state := newState()
	if len(ps) == 0 {
		return state
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type done struct {
		i   int
		res ProviderResult
		err error
		at  time.Time
	}
	results := make(chan done, len(ps))
	start := rt.clk.Now()
	for i, p := range ps {
		go func() {
			var d done
			d.i = i
			defer func() {
				if r := recover(); r != nil {
					d.err = &ActionError{Action: "provider " + p.Info().Name, Err: errors.New("panic")}
					rt.log.Error("provider panicked", "provider", p.Info().Name, "panic", r)
				}
				d.at = rt.clk.Now()
				results <- d
			}()
			d.res, d.err = p.Get(ctx, msg, newState())
		}()
	}
	out := make([]ProviderOutput, len(ps))
	for i, p := range ps {
		info := p.Info()
		out[i] = ProviderOutput{Name: info.Name, Position: info.Position, Err: ErrProviderTimeout, TimedOut: true}
	}
	budget := rt.clk.NewTimer(rt.opts.ProviderBudget)
	defer budget.Stop()
	for pending := len(ps); pending > 0; pending-- {
		select {
		case d := <-results:
			out[d.i].Result, out[d.i].Err, out[d.i].TimedOut = d.res, d.err, false
			out[d.i].Elapsed = d.at.Sub(start)
		case <-budget.C():
			pending = 0
		case <-ctx.Done():
			pending = 0
		}
	}
	cancel() // providers still running are told to give up; nobody waits for them

	slices.SortStableFunc(out, func(a, b ProviderOutput) int {
		if a.Position != b.Position {
			return a.Position - b.Position
		}
		return strings.Compare(a.Name, b.Name)
	})
	var texts []string
	for _, o := range out {
		if o.Err != nil {
			rt.log.Warn("provider left out of state", "provider", o.Name, "err", o.Err, "timed_out", o.TimedOut)
			continue
		}
		if t := strings.TrimSpace(o.Result.Text); t != "" {
			texts = append(texts, t)
		}
		for k, v := range o.Result.Values {
			state.Values[k] = v
		}
		for k, v := range o.Result.Data {
			state.Data[k] = v
		}
	}
	state.Text = strings.Join(texts, "\n\n")
	state.Providers = out
	return state
}

// newState is an empty state. Each provider gets one of its own: they run
// concurrently, so none sees another's output.
func newState() *State {
	return &State{Values: map[string]any{}, Data: map[string]any{}}
}
