package postgres

import (
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/taskloom/taskloom/adapters/sqlstore"
	"github.com/taskloom/taskloom/plugin"
)

// prefetchSteps is how many of a task's latest steps a claim reads for the
// iteration that follows it: the iteration's first read (RecentSteps) then
// costs no round trip, as the claim's last one, with its event and COMMIT,
// carried it. The steps cannot change meanwhile: only the holder of the
// task's lease writes them, and the cache forgets them at the task's next
// write.
const prefetchSteps = 32

// stepCache keeps the steps claims read ahead, for one RecentSteps each;
// at most rowCacheSize tasks.
type stepCache struct {
	mu    sync.Mutex
	tasks map[int64][]plugin.Step // newest first, as read
}

// prefetch queues the read of task's latest steps in t, to be kept once t
// commits.
func (t *txn) prefetch(task int64) {
	t.batch.Queue(sqlRecentSteps, task, prefetchSteps).Query(func(rows pgx.Rows) error {
		steps, err := sqlstore.Collect(rows, sqlstore.ScanStep)
		if err != nil {
			return err
		}
		if t.steps == nil {
			t.steps = map[int64][]plugin.Step{}
		}
		t.steps[task] = steps
		return nil
	})
}

func (c *stepCache) put(task int64, steps []plugin.Step) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tasks == nil || len(c.tasks) >= rowCacheSize {
		c.tasks = map[int64][]plugin.Step{}
	}
	c.tasks[task] = steps
}

func (c *stepCache) drop(task int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.tasks, task)
}

// take returns, once, task's last k steps oldest first, if a claim read
// them all ahead.
func (c *stepCache) take(task int64, k int) ([]plugin.Step, bool) {
	c.mu.Lock()
	steps, ok := c.tasks[task]
	delete(c.tasks, task)
	c.mu.Unlock()
	if !ok || (k > len(steps) && len(steps) == prefetchSteps) {
		return nil, false
	}
	out := slices.Clone(steps[:min(k, len(steps))])
	slices.Reverse(out)
	return out, true
}
