package postgres

import (
	"slices"
	"sync"

	"github.com/taskloom/taskloom/domain"
)

// keptSteps is how many of a task's latest steps the store keeps from its
// own writes, for the iteration that follows its next claim of the task:
// that iteration's first read (RecentSteps) then costs nothing. It is
// more than a prompt shows (tasks.History.Window).
const keptSteps = 40

// keptBytes bounds the memory the kept steps take, all tasks together;
// keptTaskBytes one task's.
const (
	keptBytes     = 32 << 20
	keptTaskBytes = 2 << 20
)

// stepCache keeps the latest steps of the tasks this store wrote, each
// with the event_seq of the row they are current at. Every step is
// written with an event, which moves the row's event_seq, so a task's
// kept steps are all it has as long as its event_seq is the one they were
// kept at: each write and claim this store commits carries them forward
// (wrote, claimed); a change made anywhere else — another replica, a
// write whose outcome is unknown — leaves them behind, and the next
// claim drops them. A claim that finds them current arms them for one
// read (take): only the lease holder writes steps, so they hold for the
// iteration that follows; any other read goes to the database.
//
// A claim of a task it keeps nothing of, or nothing current, leaves a
// pending entry at the claim's event_seq, which the iteration's read from
// the database fills (fill): the next write of this store carries those
// steps forward, so a task that moved to this replica is read from the
// database once, not at every iteration.
type stepCache struct {
	mu    sync.Mutex
	tasks map[int64]*keptTask
	bytes int
}

type keptTask struct {
	seq   int64         // the event_seq the steps are current at
	steps []domain.Step // newest first, at most keptSteps
	all   bool          // steps are every step of the task
	armed bool          // a claim found them current; one read may use them
	// pending: claimed at seq, its steps not known yet; a read fills them.
	pending bool
	bytes   int // what the steps take, counted in stepCache.bytes
}

// pendingBytes is what a pending entry is counted as.
const pendingBytes = 128

// created keeps the steps of a task this store created: none.
func (c *stepCache) created(task, seq int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop(task)
	c.fit(task, &keptTask{seq: seq, all: true})
}

// wrote carries task's steps forward over a committed write that took
// its event_seq from seq-events to seq and added steps (oldest first).
func (c *stepCache) wrote(task, seq int64, events int, steps []domain.Step) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.tasks[task]
	if k == nil {
		return
	}
	c.drop(task)
	if events == 0 || k.pending || k.seq != seq-int64(events) {
		return
	}
	for _, st := range steps {
		k.steps = slices.Insert(k.steps, 0, st)
		k.bytes += stepBytes(st)
	}
	for len(k.steps) > keptSteps {
		k.bytes -= stepBytes(k.steps[len(k.steps)-1])
		k.steps = k.steps[:len(k.steps)-1]
		k.all = false
	}
	k.seq, k.armed = seq, false
	c.fit(task, k)
}

// claimed carries task's steps over a committed claim that took its
// event_seq to seq, and arms them; when it keeps none, or the row changed
// since they were kept, it leaves a pending entry for the read to fill.
func (c *stepCache) claimed(task, seq int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.tasks[task]
	if k != nil && !k.pending && k.seq == seq-1 {
		k.seq, k.armed = seq, true
		return
	}
	c.drop(task)
	c.fit(task, &keptTask{seq: seq, pending: true, bytes: pendingBytes})
}

// pendingAt says whether task's entry is pending, and at which event_seq:
// what a read from the database, made after this call, may fill.
func (c *stepCache) pendingAt(task int64) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if k := c.tasks[task]; k != nil && k.pending {
		return k.seq, true
	}
	return 0, false
}

// fill keeps steps (oldest first; all, when they are every step of the
// task) for task's entry pending at seq. They were read after the claim
// at seq, while its lease held, so no other steps were written; if the
// lease was lost and another replica wrote meanwhile, the row has moved
// past seq and this entry can never be carried forward or armed.
func (c *stepCache) fill(task, seq int64, steps []domain.Step, all bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.tasks[task]
	if k == nil || !k.pending || k.seq != seq {
		return
	}
	c.drop(task)
	if len(steps) > keptSteps {
		steps, all = steps[len(steps)-keptSteps:], false
	}
	f := &keptTask{seq: seq, all: all, steps: slices.Clone(steps)}
	slices.Reverse(f.steps)
	for _, st := range f.steps {
		f.bytes += stepBytes(st)
	}
	c.fit(task, f)
}

// forget drops task's steps.
func (c *stepCache) forget(task int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop(task)
}

// take returns, once after a claim, task's last k steps oldest first, if
// it keeps them all.
func (c *stepCache) take(task int64, k int) ([]domain.Step, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	kt := c.tasks[task]
	if kt == nil || kt.pending || !kt.armed || (k > len(kt.steps) && !kt.all) {
		return nil, false
	}
	kt.armed = false
	out := slices.Clone(kt.steps[:min(k, len(kt.steps))])
	slices.Reverse(out)
	return out, true
}

// fit keeps k for task, which it does not hold, within the bounds: it
// makes room by dropping other tasks' steps, and keeps none of a task
// whose steps alone take more than keptTaskBytes.
func (c *stepCache) fit(task int64, k *keptTask) {
	if k.bytes > keptTaskBytes {
		return
	}
	if c.tasks == nil {
		c.tasks = map[int64]*keptTask{}
	}
	for n := range c.tasks {
		if c.bytes+k.bytes <= keptBytes {
			break
		}
		c.drop(n)
	}
	c.tasks[task] = k
	c.bytes += k.bytes
}

func (c *stepCache) drop(task int64) {
	if k := c.tasks[task]; k != nil {
		c.bytes -= k.bytes
		delete(c.tasks, task)
	}
}

// stepBytes is about what st takes in memory.
func stepBytes(st domain.Step) int {
	return 128 + len(st.Thought) + len(st.Action) + len(st.Params) + len(st.Result) + len(st.Error) + len(st.Role)
}
