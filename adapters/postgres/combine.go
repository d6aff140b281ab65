package postgres

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/taskloom/taskloom/adapters/sqlstore"
	"github.com/taskloom/taskloom/domain"
)

// A mutation writes a task's row, maybe a step, and its event, one after
// the other (sqlstore's writeMutation). The transaction holds the row's
// write back (pendingWrite) and, when the step and the event of the same
// task follow, sends the three as one statement (sqlWriteTask) that sets
// only the columns that changed: one statement to parse, bind and run
// instead of three, and a handful of parameters instead of every column.
// The writes of the iteration's notifications and files, which neither
// read nor change the row, are queued ahead of it; anything else the
// transaction sends first sends the held write on its own, as it was.

// pendingWrite is a task's row held back, with the step that followed it.
type pendingWrite struct {
	before, after domain.Task
	// expect, when set, is the event_seq the row must still have
	// (sqlUpdateTaskIfUnchanged).
	expect *int64
	step   *domain.Step
}

// hold holds the write of after back; before is the row it replaces.
func (t *txn) hold(before, after domain.Task, expect *int64) {
	t.release()
	t.pending = &pendingWrite{before: before, after: after, expect: expect}
}

// release queues the held write, and its step, as separate statements.
func (t *txn) release() {
	p := t.pending
	if p == nil {
		return
	}
	t.pending = nil
	if p.expect != nil {
		number := p.after.Number
		t.batch.Queue(sqlUpdateTaskIfUnchanged, append(sqlstore.TaskArgs(p.after, timeArg), *p.expect)...).Exec(func(tag pgconn.CommandTag) error {
			if tag.RowsAffected() != 1 {
				t.missed = append(t.missed, number)
			}
			return nil
		})
	} else {
		t.batch.Queue(sqlUpdateTask, sqlstore.TaskArgs(p.after, timeArg)...)
	}
	if p.step != nil {
		t.batch.Queue(sqlInsertStep, sqlstore.StepArgs(*p.step, timeArg)...)
	}
}

// holdStep adds st to the held write of its task, if there is one and it
// has none yet; it says whether it did.
func (t *txn) holdStep(st domain.Step) bool {
	if p := t.pending; p != nil && p.after.Number == st.TaskNumber && p.step == nil {
		p.step = &st
		return true
	}
	return false
}

// writeWithEvent queues the held write of e's task, its step and e as one
// statement, first taking the floor lock when floor is set; it says
// whether it did (there was a held write of that task, with a column
// changed).
func (t *txn) writeWithEvent(e domain.TaskEvent, floor bool) bool {
	p := t.pending
	if p == nil || p.after.Number != e.TaskNumber {
		return false
	}
	before, after := sqlstore.TaskArgs(p.before, timeArg), sqlstore.TaskArgs(p.after, timeArg)
	var key writeKey
	args := []any{p.after.Number}
	for i := 1; i < len(after); i++ {
		if p.before.Number == 0 || before[i] != after[i] {
			key.cols |= 1 << i
			args = append(args, after[i])
		}
	}
	if key.cols == 0 {
		return false
	}
	t.pending = nil
	if p.expect != nil {
		key.expect = true
		args = append(args, *p.expect)
	}
	if p.step != nil {
		key.step = true
		args = append(args, sqlstore.StepArgs(*p.step, timeArg)...)
	}
	args = append(args, sqlstore.EventArgs(e, timeArg)...)
	if floor {
		key.floor = true
		args = append(args, int64(eventFloorSpace))
	}
	number := p.after.Number
	t.batch.Queue(writeSQL(key), args...).QueryRow(func(row pgx.Row) error {
		var n int
		if err := row.Scan(&n); err != nil {
			return err
		}
		if n != 1 {
			t.missed = append(t.missed, number)
		}
		return nil
	})
	return true
}

// writeKey names one shape of sqlWriteTask: the columns it sets (bit i
// for taskColumns[i]), whether the row must still have an event_seq,
// whether a step is inserted, and whether the event takes the floor lock.
type writeKey struct {
	cols                uint64
	expect, step, floor bool
}

// writeKey.cols has a bit for each task column: a column past its 64th
// would never be written, so a store with more refuses to load.
func init() {
	if n := len(taskColumns); n > 64 {
		panic(fmt.Sprintf("adapters/postgres: tasks has %d columns; writeKey.cols holds 64: widen it", n))
	}
}

var writeSQLs sync.Map // writeKey → string

// writeSQL is sqlWriteTask of shape k: $1 the task's number, then the
// values of the columns set, then the event_seq expected, then the step's
// columns, then the event's (and eventFloorSpace). It returns how many
// rows the UPDATE changed. The event is inserted whether or not the row
// was: a row that changed since it was read has written the event of its
// next sequence already, so the insert fails, and the transaction with it,
// as sqlUpdateTaskIfUnchanged's does.
func writeSQL(k writeKey) string {
	if q, ok := writeSQLs.Load(k); ok {
		return q.(string)
	}
	var set []string
	n := 1
	for i, c := range taskColumns {
		if k.cols&(1<<i) != 0 {
			n++
			set = append(set, fmt.Sprintf("%s = $%d", c, n))
		}
	}
	where := "number = $1"
	if k.expect {
		n++
		where += fmt.Sprintf(" AND event_seq = $%d", n)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "WITH u AS (UPDATE tasks SET %s WHERE %s RETURNING 1)", strings.Join(set, ", "), where)
	if k.step {
		fmt.Fprintf(&b, ",\ns AS (%s)", shiftParams(sqlInsertStep, n))
		n += strings.Count(sqlstore.StepColumns, ",") + 1
	}
	ev := sqlInsertEvent
	if k.floor {
		ev = sqlInsertFirstEvent
	}
	fmt.Fprintf(&b, ",\ne AS (%s)\nSELECT count(*) FROM u", shiftParams(ev, n))
	q := b.String()
	writeSQLs.Store(k, q)
	return q
}

var paramRef = regexp.MustCompile(`\$(\d+)`)

// shiftParams renumbers the parameters $1, $2… of q from $by+1.
func shiftParams(q string, by int) string {
	return paramRef.ReplaceAllStringFunc(q, func(p string) string {
		i, _ := strconv.Atoi(p[1:])
		return "$" + strconv.Itoa(i+by)
	})
}
