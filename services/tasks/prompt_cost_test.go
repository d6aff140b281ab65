package tasks_test

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
)

// The cost of an iteration is counted in billed-equivalent input tokens
// (docs/PERFORMANCE.md): the tokens a prompt sends uncached, plus a
// quarter of those in the prefix it shares byte for byte with the prompt
// before it, which a provider's prompt cache serves at a fraction of the
// price. Tokens are estimated as bytes ÷ 4, as BenchmarkPromptTokens does.
const (
	bytesPerToken = 4
	cachedWeight  = 0.25
)

// tokens is the estimate of how many tokens n bytes of prompt are.
func tokens(n int) float64 { return float64(n) / bytesPerToken }

// promptCost is what one iteration's prompt costs.
type promptCost struct {
	bytes, prefix int     // the prompt's size, and the prefix it shares with the one before
	billed        float64 // uncached + cachedWeight × cached, in tokens
	uncached      float64 // tokens of the prompt past the shared prefix
	floor         float64 // tokens of the newest step and what follows it: new whatever the layout
}

// cost is the cost of the prompt of iteration it (from 1).
func (s promptStats) cost(it int) promptCost {
	size, prefix := s.size[it-1], s.prefix[it-1]
	return promptCost{
		bytes: size, prefix: prefix,
		billed:   tokens(size-prefix) + cachedWeight*tokens(prefix),
		uncached: tokens(size - prefix),
		floor:    tokens(s.latest[it-1]),
	}
}

// meanCost is the mean cost of the prompts of iterations from…to.
func (s promptStats) meanCost(from, to int) promptCost {
	var m promptCost
	for it := from; it <= to; it++ {
		c := s.cost(it)
		m.bytes += c.bytes
		m.prefix += c.prefix
		m.billed += c.billed
		m.uncached += c.uncached
		m.floor += c.floor
	}
	n := to - from + 1
	m.bytes, m.prefix = m.bytes/n, m.prefix/n
	m.billed, m.uncached, m.floor = m.billed/float64(n), m.uncached/float64(n), m.floor/float64(n)
	return m
}

// The cost targets of docs/PERFORMANCE.md, on the mixed task.
const (
	maxBilledGrowth  = 1.3  // billed tokens at iteration 50 ÷ at iteration 5
	maxUncachedOver  = 1.15 // uncached tokens ÷ their floor, over iterations 2–60
	costIterations   = 60
	costEarly        = 5
	costLate         = 50
	costFirstCounted = 2 // the first prompt has no prompt before it to share with
)

// costShape is a task shape the cost is measured on.
type costShape struct {
	name string
	tool plugin.Action
}

var costShapes = []costShape{{"mixed", fetchMixed{}}, {"pages", fetchPage{}}}

// writeCostTable prints, for each shape's stats, the prompts of
// iterations 5 and 50 and the mean over 2–60: bytes, tokens, the prefix
// shared with the prompt before, billed-equivalent tokens, the uncached
// part and its floor; then the ratios against the targets and the
// cached share.
func writeCostTable(w io.Writer, shapes []costShape, stats []promptStats) {
	fmt.Fprintf(w, "prompt cost over %d iterations (tokens ≈ bytes/%d; billed = uncached + %.2f × cached prefix):\n", costIterations, bytesPerToken, cachedWeight)
	fmt.Fprintf(w, "%-6s %-8s %8s %8s %8s %8s %9s %8s %8s\n", "task", "prompt", "bytes", "tokens", "prefix B", "billed", "uncached", "floor", "unc/flr")
	for i, sh := range shapes {
		s := stats[i]
		row := func(label string, c promptCost) {
			fmt.Fprintf(w, "%-6s %-8s %8d %8.0f %8d %8.0f %9.0f %8.0f %8.2f\n", sh.name, label, c.bytes, tokens(c.bytes), c.prefix, c.billed, c.uncached, c.floor, c.uncached/c.floor)
		}
		row(fmt.Sprintf("it. %d", costEarly), s.cost(costEarly))
		row(fmt.Sprintf("it. %d", costLate), s.cost(costLate))
		row(fmt.Sprintf("%d–%d", costFirstCounted, costIterations), s.meanCost(costFirstCounted, costIterations))
	}
	for i, sh := range shapes {
		s := stats[i]
		m := s.meanCost(costFirstCounted, costIterations)
		fmt.Fprintf(w, "%-6s billed 50/5 %.2f (target ≤ %.2f on mixed); uncached/floor %.2f (≤ %.2f); cached share %.1f%%\n",
			sh.name, s.cost(costLate).billed/s.cost(costEarly).billed, maxBilledGrowth,
			m.uncached/m.floor, maxUncachedOver, 100*s.overall(costFirstCounted))
	}
}

// TestPromptCost holds docs/PERFORMANCE.md's cost targets on the mixed
// task of 60 iterations (fetchMixed): its prompt at iteration 50 costs at
// most 1.3 times, in billed-equivalent input tokens, its prompt at
// iteration 5, and over iterations 2–60 it sends uncached at most 1.15
// times its floor — the newest step as shown and the instructions after
// it, which no layout can have sent before. It counts bytes, not time,
// so it is a test; it logs the same table for the pages task, whose
// ratios are not targets (its newest result is a page every step).
func TestPromptCost(t *testing.T) {
	t.Parallel()
	var stats []promptStats
	for _, sh := range costShapes {
		stats = append(stats, measurePrompts(t, teststore.SQLite, costIterations, sh.tool))
	}
	var table strings.Builder
	writeCostTable(&table, costShapes, stats)
	t.Log("\n" + table.String())
	mixed := stats[0]
	if g := mixed.cost(costLate).billed / mixed.cost(costEarly).billed; g > maxBilledGrowth {
		t.Errorf("the mixed task's prompt at iteration %d costs %.0f billed tokens, %.2f times its %.0f at iteration %d (at most %.2f)",
			costLate, mixed.cost(costLate).billed, g, mixed.cost(costEarly).billed, costEarly, maxBilledGrowth)
	}
	if m := mixed.meanCost(costFirstCounted, costIterations); m.uncached > maxUncachedOver*m.floor {
		t.Errorf("the mixed task's prompts send %.0f tokens uncached, %.2f times their floor of %.0f (at most %.2f): the history churns",
			m.uncached, m.uncached/m.floor, m.floor, maxUncachedOver)
	}
}
