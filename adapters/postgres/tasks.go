package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/taskloom/taskloom/adapters/sqlstore"
	"github.com/taskloom/taskloom/domain"
)

// Write implements sqlstore.Dialect. The transaction costs as few round
// trips as its reads allow: its writes are queued and sent with its next
// read, BEGIN with the first, and the last of them with the COMMIT. A
// transaction that reads nothing is one pipeline, which PostgreSQL runs as
// one implicit transaction. A claim is one statement that writes its
// event too, so one round trip (txn.ClaimHead). The mutation of a task
// this store claimed takes one: it starts from the claimed row
// (sqlstore.RowCache) and writes it only if it has not changed since; if
// it has, or anything fails after the claimed row was used, the
// transaction runs again from a locked read. An iteration is therefore
// two round trips, as the bare claim and commit of docs/tasks.md are, or one
// when its commit claims the worker's next task (ClaimAhead), and reads
// none of the task's steps when this store wrote them (stepCache).
func (s *Store) Write(ctx context.Context, fn func(sqlstore.Tx) error) error {
	st := writeState{cached: true}
	for {
		again, err := s.write(ctx, fn, &st)
		if !again {
			return fileRefusal(err)
		}
	}
}

// writeState is what one run of a transaction tells the next.
type writeState struct {
	// cached: the transaction may start from the claimed rows.
	cached bool
	// turnTries counts the runs whose claim ahead lost its turn.
	turnTries int
}

// write runs fn in one transaction; again says to run it once more: from
// a locked read, as it failed after using a claimed row, or, when the
// claim it carried (ClaimAhead) lost its turn, from the same rows on a
// fresh snapshot.
func (s *Store) write(ctx context.Context, fn func(sqlstore.Tx) error, st *writeState) (again bool, err error) {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, fmt.Errorf("begin transaction: %w", err)
	}
	defer c.Release()
	t := &txn{tx: c.Conn(), batch: &pgx.Batch{}, turnTries: st.turnTries}
	if st.cached {
		t.cache = &s.claimed
	}
	// fail says whether to run the transaction again after err. Only a
	// transaction known to have failed is run again here: one whose
	// commit was sent and not answered (its connection broke) may have
	// committed, which only the caller can find out (a write retried
	// from here would take its own commit for a stale fence).
	fail := func(err error, sent bool) bool {
		if sent && !failedOnServer(err) {
			return false
		}
		if t.ahead != nil && turnFailure(t.ahead.err) {
			// Nothing was written: the rows handed out are still the
			// ones claimed.
			for _, row := range t.taken {
				s.claimed.put(row)
			}
			st.turnTries++
			return true
		}
		st.cached = false
		return t.usedCache()
	}
	if err := fn(t); err != nil {
		t.rollback(ctx)
		return fail(err, false), err // no COMMIT sent: nothing committed
	}
	if !t.begun {
		// Nothing was sent yet: the statements go in one pipeline, which
		// PostgreSQL runs as one implicit transaction, committed at its
		// Sync, with no BEGIN and COMMIT to send.
		if err := t.flush(ctx); err != nil {
			t.rollback(ctx)
			return fail(err, true), fmt.Errorf("write: %w", err)
		}
	} else {
		// The COMMIT may complete and the connection fail before the
		// batch's end (a terminated backend reports FATAL at the Sync that
		// follows): its tag says the transaction committed, so the write
		// is not reported failed — a claim taken so is used, not left
		// leased.
		committed := false
		t.release()
		t.batch.Queue("commit").Exec(func(tag pgconn.CommandTag) error {
			committed = tag.String() == "COMMIT"
			return nil
		})
		if err := t.flush(ctx); err != nil && !committed {
			t.rollback(ctx)
			return fail(err, true), fmt.Errorf("write and commit: %w", err)
		}
	}
	if len(t.missed) > 0 {
		// Cannot happen: the event of a row that changed meanwhile fails
		// the transaction (sqlUpdateTaskIfUnchanged).
		return false, fmt.Errorf("write and commit: task #%d changed since it was claimed, yet its event was written", t.missed[0])
	}
	for n, seq := range t.seqs {
		s.claimed.drop(n)
		s.steps.wrote(n, seq, t.events[n], t.steps[n])
	}
	for n := range t.events {
		if _, ok := t.seqs[n]; !ok {
			s.steps.forget(n)
		}
	}
	for n, seq := range t.inserted {
		s.steps.created(n, seq)
	}
	for _, row := range t.claims {
		s.claimed.put(row)
		s.steps.claimed(row.Number, row.EventSeq)
	}
	return false, nil
}

// txn is a sqlstore.Tx on a connection with a transaction open, or queued
// to open.
type txn struct {
	tx    *pgx.Conn
	batch *pgx.Batch
	// begun: a BEGIN was sent; the transaction spans round trips.
	begun bool
	// sealed: a statement that commits on its own was sent (a claim
	// with its event); nothing may follow it.
	sealed bool
	// floored: this transaction holds its event floor lock (InsertEvent).
	floored bool
	// cache, when set, hands out claimed rows (CachedTask); expect holds
	// the event_seq each row handed out must still have when written.
	cache  *rowCache
	expect map[int64]int64
	cached bool          // a row was handed out
	taken  []domain.Task // the rows handed out
	// ahead is the claim made with the transaction's writes (ClaimAhead),
	// and turnTries how many runs before this one lost that claim's turn.
	ahead     *claimScan
	turnTries int
	// What the transaction wrote, which the store's caches learn once it
	// commits: the event_seq each task's row was written with last, how
	// many events and which steps (oldest first) it wrote of each task,
	// the tasks it created (with their event_seq) and the rows it claimed.
	seqs     map[int64]int64
	events   map[int64]int
	steps    map[int64][]domain.Step
	inserted map[int64]int64
	claims   []domain.Task
	// pending is a task's write held back (combine.go).
	pending *pendingWrite
	// missed are the rows sqlUpdateTaskIfUnchanged found changed.
	missed []int64
	// lastPut is the file write queued last, while nothing was queued
	// after it, with its task (files.go's CheckFiles folds into it).
	lastPut     *pgx.QueuedQuery
	lastPutTask int64
	// lastEnqueue is the insert of notifications queued last, of
	// enqueued rows (Enqueue adds the next to it).
	lastEnqueue *pgx.QueuedQuery
	enqueued    int
}

var (
	_ sqlstore.Dialect      = (*Store)(nil)
	_ sqlstore.Tx           = (*txn)(nil)
	_ sqlstore.AheadClaimer = (*txn)(nil)
	_ sqlstore.RowCache     = (*txn)(nil)
)

// rollback ends the transaction if one was opened. A connection it
// cannot bring back idle is closed by the pool when released.
func (t *txn) rollback(ctx context.Context) {
	if t.tx.PgConn().TxStatus() == 'I' {
		return
	}
	_, _ = t.tx.Exec(context.WithoutCancel(ctx), "rollback")
}

// send sends the queued statements, after a BEGIN the first time: the
// transaction goes on after them.
func (t *txn) send(ctx context.Context) error {
	t.release()
	if t.batch.Len() == 0 {
		return nil
	}
	if !t.begun {
		t.begun = true
		t.batch.QueuedQueries = append([]*pgx.QueuedQuery{{SQL: "begin"}}, t.batch.QueuedQueries...)
	}
	return t.flush(ctx)
}

// flush sends the queued statements as they are.
func (t *txn) flush(ctx context.Context) error {
	t.release()
	if t.batch.Len() == 0 {
		return nil
	}
	b := t.batch
	t.batch = &pgx.Batch{}
	if err := prepare(ctx, t.tx, b); err != nil {
		return err
	}
	return t.tx.SendBatch(ctx, b).Close()
}

// prepare makes each statement of b a named prepared statement of conn
// the first time conn sends it (a round trip then, as pgx's statement
// cache takes), so that a batch that fails keeps its statements. pgx
// drops every statement of a failed batch from its statement cache and
// prepares them anew the next time: parsed and planned again, with a
// DEALLOCATE and a PREPARE round trip first. A claim that lost its turn
// fails its batch, one iteration in seven at 16 workers, and that
// re-preparing was a ninth of the database's CPU (perf); named
// statements pgx keeps.
//
// A connection keeps at most maxPrepared of them: when a batch brings
// more, its statements are deallocated first and prepared again as they
// come.
func prepare(ctx context.Context, conn *pgx.Conn, b *pgx.Batch) error {
	data := conn.PgConn().CustomData()
	known, _ := data[preparedKey].(map[string]struct{})
	if known == nil {
		known = map[string]struct{}{}
		data[preparedKey] = known
	}
	fresh := 0
	for _, q := range b.QueuedQueries {
		if _, ok := known[q.SQL]; !ok {
			fresh++
		}
	}
	if fresh == 0 {
		return nil
	}
	if len(known)+fresh > maxPrepared {
		if err := conn.DeallocateAll(ctx); err != nil {
			return fmt.Errorf("deallocate the prepared statements: %w", err)
		}
		clear(known)
	}
	for _, q := range b.QueuedQueries {
		if _, ok := known[q.SQL]; ok {
			continue
		}
		if _, err := conn.Prepare(ctx, q.SQL, q.SQL); err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		known[q.SQL] = struct{}{}
	}
	return nil
}

// maxPrepared bounds the statements prepare keeps on one connection. The
// write path's statements are few — a claim, inserts, and a combined
// write for each set of columns a change touches — but they are built from
// what changed, so no list of them is fixed.
const maxPrepared = 256

// preparedKey is where a connection's CustomData holds the statements
// prepare made on it.
const preparedKey = "taskloom.prepared"

// queryRow returns a row whose Scan sends the queued statements and the
// query together.
func (t *txn) queryRow(ctx context.Context, q string, args ...any) pgx.Row {
	return pipedRow{t: t, ctx: ctx, q: q, args: args}
}

// pipedRow is a query queued behind the transaction's pending statements.
type pipedRow struct {
	t    *txn
	ctx  context.Context
	q    string
	args []any
}

func (r pipedRow) Scan(dest ...any) error {
	var scanErr error
	r.t.release()
	r.t.batch.Queue(r.q, r.args...).QueryRow(func(row pgx.Row) error {
		scanErr = row.Scan(dest...)
		if errors.Is(scanErr, pgx.ErrNoRows) {
			return nil // not a failure of the batch
		}
		return scanErr
	})
	if err := r.t.send(r.ctx); err != nil {
		return err
	}
	return scanErr
}

func (t *txn) query(ctx context.Context, q string, args ...any) (pgx.Rows, error) {
	if err := t.send(ctx); err != nil {
		return nil, err
	}
	return t.tx.Query(ctx, q, args...)
}

// Now is the database server's clock.
func (t *txn) Now(ctx context.Context) (time.Time, error) {
	var now time.Time
	err := t.queryRow(ctx, sqlNow).Scan(&now)
	return now, err
}

func (t *txn) LockTask(ctx context.Context, number int64) (domain.Task, error) {
	return noRows(sqlstore.ScanTask(t.queryRow(ctx, sqlLockTask, number)))
}

func (t *txn) Children(ctx context.Context, parent int64) ([]domain.Task, error) {
	rows, err := t.query(ctx, sqlChildren, parent)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return sqlstore.Collect(rows, scanTask)
}

// LockRequestor queues the lock: it is taken, in order, before the next
// read (CountActive) in the same round trip.
func (t *txn) LockRequestor(_ context.Context, requestor string) error {
	t.release()
	t.batch.Queue(sqlLockRequestor, requestor)
	return nil
}

func (t *txn) CountActive(ctx context.Context, requestor string) (int, error) {
	var n int
	err := t.queryRow(ctx, sqlCountActive, requestor).Scan(&n)
	return n, err
}

func (t *txn) InsertTask(ctx context.Context, row domain.Task) (int64, error) {
	var n int64
	err := t.queryRow(ctx, sqlInsertTask, sqlstore.TaskArgs(row, timeArg)[1:]...).Scan(&n)
	if err == nil {
		t.inserted = setIn(t.inserted, n, row.EventSeq)
	}
	return n, err
}

func (t *txn) TaskByOrigin(ctx context.Context, origin string) (int64, error) {
	var n int64
	err := t.queryRow(ctx, sqlTaskByOrigin, origin).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return n, err
}

func (t *txn) InsertOrigin(ctx context.Context, origin string, number int64) (bool, error) {
	n, err := t.exec(ctx, sqlInsertOrigin, origin, number)
	return n == 1, err
}

// setIn sets m[k] to v, making m if it is nil, and returns m.
func setIn[K comparable, V any](m map[K]V, k K, v V) map[K]V {
	if m == nil {
		m = map[K]V{}
	}
	m[k] = v
	return m
}

// claimRetries is how many times a claim is taken again after it lost its
// turn, before one is taken in READ COMMITTED. Each retry is a round
// trip, made only while other workers are giving tasks back under it: a
// claim loses its turn only when another transaction committed a change
// to a row it reached, so the queue moves while a claimer retries. 3 let
// an out-of-turn claim through once in a CI run of the whole suite under
// the race detector, and 8 may have: a starved process sees its snapshots
// go stale more often. 32 keeps the worst case to some 32 round trips.
const claimRetries = 32

// ClaimsAlone is true: the claim statement writes its event and commits
// alone (txn.ClaimHead), and joins a worker's commit through ClaimAhead.
func (s *Store) ClaimsAlone() bool { return true }

// ClaimHead claims with sqlClaimWithEvent, alone in a pipeline: BEGIN,
// the claim with its event and COMMIT in one round trip. It passes over
// no task: except must be 0 (sqlstore.Dialect's ClaimsAlone).
//
// Claims take turns: the statement walks the queue in the order of its
// snapshot. In READ COMMITTED, a row another worker claimed and gave back
// after that snapshot would be locked in its latest version, and
// PostgreSQL rechecks only the WHERE clause on it (EvalPlanQual), not the
// order, so the statement could take a row now served more recently than
// tasks it passed over: an out-of-turn claim. So a claim runs in a
// REPEATABLE READ transaction, where PostgreSQL locks no row changed since
// the snapshot: it fails the statement with a serialization failure
// instead (a claim that lost its turn), which undoes the claim and its
// event, and the claim is taken again on a fresh snapshot. Only a row the
// claim goes on to take, unchanged since its snapshot and so first in the
// queue as it stands, is ever locked by it; no failing claim holds a lock
// that would make the others pass over a claimable row. After
// claimRetries lost turns the claim is taken in READ COMMITTED.
func (t *txn) ClaimHead(ctx context.Context, cl domain.Claim, except int64) (sqlstore.ClaimResult, error) {
	if t.begun || t.batch.Len() > 0 || t.sealed || except != 0 {
		return sqlstore.ClaimResult{}, errors.New("a claim with its event must be alone in its transaction, passing over no task")
	}
	t.sealed = true
	for try := 0; ; try++ {
		check := try < claimRetries
		if check {
			t.batch.Queue(sqlBeginClaim)
			t.batch.Queue(sqlClaimPlan)
		}
		c := t.queueClaim(cl)
		committed := false
		if check {
			t.batch.Queue("commit").Exec(func(tag pgconn.CommandTag) error {
				committed = tag.String() == "COMMIT"
				return nil
			})
		}
		err := t.flush(ctx)
		if committed {
			// The claim committed; a connection that failed after it (a
			// terminated backend reports FATAL at the Sync that follows)
			// does not undo it, and a claim reported failed would leave
			// its task leased to nobody until the lease ends.
			err = nil
		}
		if err == nil {
			err = c.err
		}
		if err != nil {
			// A failed statement leaves its transaction open, aborted.
			t.rollback(ctx)
		}
		if check && turnFailure(err) {
			continue
		}
		return c.result(cl, err)
	}
}

// ClaimAhead implements sqlstore.AheadClaimer when the transaction has
// read nothing (so nothing was sent yet): the claim statement goes first,
// then the transaction's writes, all sent with the COMMIT in one
// pipeline. The transaction is then a claim's: REPEATABLE READ, its
// snapshot taken by the claim, as late as it can be; when the claim loses
// its turn, the statements after it do not run and Write runs the
// transaction again from the rows it was handed (Store.write), up to
// claimRetries times, and then once in READ COMMITTED. (With the claim
// after the writes, a claim lost its turn about twice as often.)
func (t *txn) ClaimAhead(_ context.Context, cl domain.Claim) func() (sqlstore.ClaimResult, error) {
	if t.begun || t.sealed {
		return nil
	}
	t.release()
	check := t.turnTries < claimRetries
	begin := "begin"
	if check {
		begin = sqlBeginClaim
	}
	writes := t.batch.QueuedQueries
	t.batch.QueuedQueries = []*pgx.QueuedQuery{{SQL: begin}}
	if check {
		t.batch.Queue(sqlClaimPlan)
	}
	c := t.queueClaim(cl)
	t.batch.QueuedQueries = append(t.batch.QueuedQueries, writes...)
	t.begun, t.sealed = true, true
	t.ahead = c
	return func() (sqlstore.ClaimResult, error) { return c.result(cl, c.err) }
}

// failedOnServer reports whether err is PostgreSQL's report of a failed
// statement, after which its transaction cannot commit; a broken
// connection or a FATAL error (the backend ending, perhaps after a
// commit) is not.
func failedOnServer(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.SeverityUnlocalized == "ERROR"
}

// turnFailure reports whether err is a claim's lost turn (see
// ClaimHead).
func turnFailure(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == sqlstateSerialization
}

// claimScan is a claim statement queued in a batch, and what it returned
// once the batch was sent.
type claimScan struct {
	after                     domain.Task
	oldStatus, oldOwner       string
	oldExpiry, oldStarted, at sqlstore.Time
	payload                   []byte
	err                       error // the scan's; nil for no rows too
	none                      bool  // no task was ready
}

// queueClaim queues the claim statement; a row it claims is one the
// store's caches learn of once the transaction commits (t.claims).
func (t *txn) queueClaim(cl domain.Claim) *claimScan {
	var q string
	var args []any
	if cl.StoreClock {
		q, args = sqlClaimWithEventOnStoreClock, []any{cl.Owner, cl.Lease, int64(eventFloorSpace)}
	} else {
		q, args = sqlClaimWithEvent, []any{timeArg(domain.UTC(cl.Now)), cl.Owner, timeArg(domain.UTC(cl.Now.Add(cl.Lease))), int64(eventFloorSpace)}
	}
	c := &claimScan{}
	t.batch.Queue(q, args...).QueryRow(func(row pgx.Row) error {
		c.after, c.err = sqlstore.ScanTask(row, &c.oldStatus, &c.oldOwner, &c.oldExpiry, &c.oldStarted, &c.payload, &c.at)
		if errors.Is(c.err, pgx.ErrNoRows) {
			c.err, c.none = nil, true
			return nil // not a failure of the batch
		}
		if c.err == nil {
			t.claims = append(t.claims, c.after)
		}
		return c.err
	})
	return c
}

// result is what the claim cl took, as ClaimHead returns it; err is
// the claim's transaction's.
func (c *claimScan) result(cl domain.Claim, err error) (sqlstore.ClaimResult, error) {
	if err == nil && c.none {
		err = sqlstore.ErrNoRows
	}
	if err != nil {
		return sqlstore.ClaimResult{}, err
	}
	before := c.after
	before.Status = domain.Status(c.oldStatus)
	before.LeaseOwner = c.oldOwner
	before.LeaseExpiresAt = c.oldExpiry.T
	before.StartedAt = c.oldStarted.T
	before.Fence--
	before.EventSeq--
	ev := domain.TaskEvent{TaskNumber: c.after.Number, Sequence: c.after.EventSeq, Type: domain.EventClaimed,
		Payload: c.payload, Actor: cl.Owner, Fence: c.after.Fence, Time: c.at.T}
	return sqlstore.ClaimResult{Before: before, After: c.after, Event: ev, Now: c.at.T}, nil
}

// sqlstateSerialization is serialization_failure: a REPEATABLE READ
// statement met a row changed since its snapshot.
const sqlstateSerialization = "40001"

// sqlBeginClaim opens a checked claim's transaction (see ClaimHead).
const sqlBeginClaim = "begin isolation level repeatable read"

// sqlClaimPlan follows sqlBeginClaim: the claim walks the queue index in
// its order (an index scan, which stops at the first row it can take and
// marks the dead entries it passes so that later claims skip them) rather
// than reading every entry of the index into a bitmap and sorting the
// rows, which the planner picks when it expects few active tasks — and
// then each claim visits every dead entry left by the commits since the
// last vacuum (docs/PERFORMANCE.md, "Through the binary"). It lasts the
// claim's transaction, whose other statements are an iteration's writes,
// found by key; the statements first planned there keep that plan on the
// connection (plan_cache_mode is force_generic_plan), which for them is
// the one they would have anyway.
const sqlClaimPlan = "set local enable_bitmapscan = off"

// UpdateTask holds the write of row back, to send it with its step and
// event as one statement (writeWithEvent), or else on its own. A row
// CachedTask handed out is written only if its event_seq is still the one
// it had; otherwise the transaction fails (sqlUpdateTaskIfUnchanged).
func (t *txn) UpdateTask(_ context.Context, before, row domain.Task) error {
	t.seqs = setIn(t.seqs, row.Number, row.EventSeq)
	var expect *int64
	if seq, ok := t.expect[row.Number]; ok {
		// Once written, the row is this transaction's: a second write
		// of it in the same transaction is not conditional.
		expect = &seq
		delete(t.expect, row.Number)
	}
	t.hold(before, row, expect)
	return nil
}

// CachedTask implements sqlstore.RowCache: the row this store last
// claimed of number, once.
func (t *txn) CachedTask(number int64) (domain.Task, bool) {
	if t.cache == nil {
		return domain.Task{}, false
	}
	row, ok := t.cache.take(number)
	if !ok {
		return domain.Task{}, false
	}
	if t.expect == nil {
		t.expect = map[int64]int64{}
	}
	t.expect[number] = row.EventSeq
	t.cached = true
	t.taken = append(t.taken, row)
	return row, true
}

func (t *txn) usedCache() bool { return t.cached }

// rowCache keeps the rows a store claimed, as the claim statement returned
// them, until they are written or claimed again; at most rowCacheSize.
type rowCache struct {
	mu   sync.Mutex
	rows map[int64]domain.Task
}

const rowCacheSize = 10_000

func (c *rowCache) put(row domain.Task) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rows == nil || len(c.rows) >= rowCacheSize {
		c.rows = map[int64]domain.Task{} // the rest are read again
	}
	c.rows[row.Number] = row
}

func (c *rowCache) take(number int64) (domain.Task, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	row, ok := c.rows[number]
	delete(c.rows, number)
	return row, ok
}

func (c *rowCache) drop(number int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.rows, number)
}

// InsertEvent queues the insert of e. Before its first event, the
// transaction takes its event floor lock, which EventsSince reads: see
// sqlInsertFirstEvent.
func (t *txn) InsertEvent(_ context.Context, e domain.TaskEvent) error {
	t.events = setIn(t.events, e.TaskNumber, t.events[e.TaskNumber]+1)
	floor := !t.floored
	t.floored = true
	if t.writeWithEvent(e, floor) {
		return nil
	}
	t.release()
	if floor {
		t.batch.Queue(sqlInsertFirstEvent, append(sqlstore.EventArgs(e, timeArg), int64(eventFloorSpace))...)
		return nil
	}
	t.batch.Queue(sqlInsertEvent, sqlstore.EventArgs(e, timeArg)...)
	return nil
}

func (t *txn) InsertStep(_ context.Context, st domain.Step) error {
	t.steps = setIn(t.steps, st.TaskNumber, append(t.steps[st.TaskNumber], st))
	if t.holdStep(st) {
		return nil
	}
	t.release()
	t.batch.Queue(sqlInsertStep, sqlstore.StepArgs(st, timeArg)...)
	return nil
}

// Enqueue queues the insert of n ahead of a held write of a task's row
// (pendingWrite), which it neither reads nor changes: the row, its step
// and its event still go as one statement after it, as a file's write
// does. Notifications queued one after the other (an iteration's progress
// and action) go as one insert of their rows, in order, so their IDs
// follow that order as separate inserts' would.
func (t *txn) Enqueue(_ context.Context, n domain.Notification) error {
	args := sqlstore.NotificationArgs(n, timeArg)
	nq := len(t.batch.QueuedQueries)
	if q := t.lastEnqueue; q != nil && nq > 0 && t.batch.QueuedQueries[nq-1] == q && t.enqueued < maxEnqueueRows {
		t.enqueued++
		q.SQL = sqlEnqueueRows(t.enqueued)
		q.Arguments = append(q.Arguments, args...)
		return nil
	}
	t.lastEnqueue, t.enqueued = t.batch.Queue(sqlEnqueueRows(1), args...), 1
	return nil
}

// maxEnqueueRows bounds the rows of one insert of notifications: the
// statements of each count are prepared once per connection.
const maxEnqueueRows = 8

// enqueueRows are the inserts of 1 to maxEnqueueRows notifications, with
// no RETURNING: a transaction's insert reads nothing back.
var enqueueRows = func() []string {
	out := make([]string, maxEnqueueRows+1)
	for n := 1; n <= maxEnqueueRows; n++ {
		var b strings.Builder
		b.WriteString(`INSERT INTO notifications (room, task_number, category, payload, created_at, attempts, next_attempt_at, last_error) VALUES `)
		for r := range n {
			if r > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(")
			for c := range 8 {
				if c > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "$%d", r*8+c+1)
			}
			b.WriteString(")")
		}
		out[n] = b.String()
	}
	return out
}()

func sqlEnqueueRows(n int) string { return enqueueRows[n] }

// RoomHeads implements sqlstore.Tx, piped behind the transaction's
// pending statements (a head written back by the room visited last).
func (t *txn) RoomHeads(ctx context.Context, w sqlstore.RoomWalk) ([]sqlstore.RoomKey, error) {
	q := sqlWalkRooms
	if w.Urgent {
		q = sqlWalkUrgentRooms
	}
	at, id := w.After.At, w.After.ID
	if at == nil {
		// Before every head: '-infinity' is the earliest a head says.
		at, id = pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}, math.MinInt64
	}
	var keys []sqlstore.RoomKey
	t.release()
	t.batch.Queue(q, timeArg(w.Now), at, id, w.After.Room, append([]string{}, w.Skip...)).Query(func(rows pgx.Rows) error {
		var err error
		keys, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (sqlstore.RoomKey, error) {
			var k sqlstore.RoomKey
			var at pgtype.Timestamptz
			err := row.Scan(&k.Room, &at, &k.ID)
			k.At = at
			return k, err
		})
		return err
	})
	return keys, t.send(ctx)
}

// ClaimRoom sends, in one round trip, the try of the room's advisory
// lock for this transaction with a read of its head's version, and the
// claim, which takes rows only when that lock was taken (another sender
// claiming the room at this moment holds it, or an enqueue into it is
// committing: the walk passes it by) and, read after the lock, the room
// is due as its rows say (a claim committed just before holds it) and as
// its head was walked (sqlClaimRoom). The write of its head, as its rows
// then derive it, goes with the transaction's next statements.
func (t *txn) ClaimRoom(ctx context.Context, k sqlstore.RoomKey, c sqlstore.RoomTake) ([]domain.Notification, error) {
	var claimed []domain.Notification
	t.release()
	t.batch.Queue(sqlLockRoom, k.Room)
	t.batch.Queue(sqlClaimRoom, timeArg(c.Now), k.Room, c.Owner, timeArg(c.Until), c.Limit, k.At, k.ID, c.Urgent,
		append([]string{}, c.Categories...)).Query(func(rows pgx.Rows) error {
		var err error
		claimed, err = sqlstore.Collect(rows, sqlstore.ScanNotification)
		return err
	})
	if err := t.send(ctx); err != nil {
		return nil, err
	}
	t.batch.Queue(sqlWriteRoomHead, k.Room)
	return claimed, nil
}

// DeleteSent deletes the rows sent, then, with the commit, writes the
// heads of their rooms as the rows left derive them, for each room whose
// lock it takes (sqlLockRoom; a room being claimed or enqueued into is
// left as it is): the room's next claim then finds its head exact,
// rather than the head still pointing at the rows sent.
func (t *txn) DeleteSent(ctx context.Context, owner string, ids []int64) (int64, error) {
	var n int64
	var rooms []string
	if err := t.queryRow(ctx, sqlMarkSent, ids, owner).Scan(&n, &rooms); err != nil {
		return 0, err
	}
	for _, room := range rooms {
		t.batch.Queue(sqlLockRoom, room)
		t.batch.Queue(sqlWriteRoomHead, room)
	}
	return n, nil
}

func (t *txn) ReleaseClaimed(ctx context.Context, owner string, ids []int64, retryAt time.Time, reason string) (int64, error) {
	return t.exec(ctx, sqlRelease, ids, owner, timeArg(retryAt), reason)
}

func (t *txn) SettleUnclaimed(ctx context.Context, id int64, sent bool, due time.Time) (int64, error) {
	if sent {
		return t.exec(ctx, sqlDropUnclaimed, id)
	}
	return t.exec(ctx, sqlDueUnclaimed, id, timeArg(due))
}

func (t *txn) GiveBackClaimed(ctx context.Context, owner string, ids []int64, due time.Time) (int64, error) {
	return t.exec(ctx, sqlGiveBack, ids, owner, timeArg(due))
}

func (t *txn) RenewClaimed(ctx context.Context, owner string, ids []int64, until time.Time) (int64, error) {
	return t.exec(ctx, sqlRenewClaim, ids, owner, timeArg(until))
}

func (t *txn) MarkSending(ctx context.Context, owner string, ids []int64, key string, now time.Time, rendered string) (int64, error) {
	return t.exec(ctx, sqlMarkSending, ids, owner, key, timeArg(now), rendered)
}

func (t *txn) FailClaimed(ctx context.Context, owner string, ids []int64, now time.Time, reason string) (int64, error) {
	return t.exec(ctx, sqlFail, ids, owner, timeArg(now), reason)
}

func (t *txn) LockNotification(ctx context.Context, id int64) (domain.Notification, error) {
	return noRows(sqlstore.ScanNotification(t.queryRow(ctx, sqlLockNotification, id)))
}

func (t *txn) RetryFailed(ctx context.Context, id int64, now time.Time) (domain.Notification, error) {
	return sqlstore.ScanNotification(t.queryRow(ctx, sqlRetryNotification, id, timeArg(now)))
}

// exec sends the queued statements and one more together, and says how
// many rows the last one changed.
func (t *txn) exec(ctx context.Context, q string, args ...any) (int64, error) {
	var n int64
	t.release()
	t.batch.Queue(q, args...).Exec(func(tag pgconn.CommandTag) error {
		n = tag.RowsAffected()
		return nil
	})
	err := t.send(ctx)
	return n, err
}

func (t *txn) SaveRoomProgress(_ context.Context, p domain.RoomProgress) error {
	t.release()
	t.batch.Queue(sqlUpsertRoomProgress, p.Room, p.TaskNumber, p.Progress, p.From)
	return nil
}
