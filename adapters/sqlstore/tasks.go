package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/taskloom/taskloom/domain"
)

// Core is the write logic of a SQL store over its Dialect. A store embeds
// it and gets CreateTask, ClaimTask, UpdateTask, ClaimRoom and MarkSent.
type Core struct {
	D Dialect
}

// CreateTask validates in, numbers the task and writes it with its
// "created" event.
func (c Core) CreateTask(ctx context.Context, in domain.NewTask) (domain.Task, error) {
	row, err := domain.NewTaskRow(in)
	if err != nil {
		return domain.Task{}, err
	}
	domain.CleanTask(&row)
	actor, origin := domain.CleanText(in.Actor), domain.CleanText(in.Origin)
	fresh := row
	var existing domain.Task
	// A create that meets another one's uncommitted task for its origin
	// (PostgreSQL: the insert waits for it) tries again, to find it.
	for attempt := 1; ; attempt++ {
		row, existing = fresh, domain.Task{}
		err = c.D.Write(ctx, func(tx Tx) error {
			if origin != "" {
				n, err := tx.TaskByOrigin(ctx, origin)
				if err != nil {
					return fmt.Errorf("create task: look for the task made for %q: %w", origin, err)
				}
				if n != 0 {
					existing, err = tx.LockTask(ctx, n)
					return err
				}
			}
			if err := checkLimits(ctx, tx, &row, in.MaxActive); err != nil {
				return err
			}
			if err := insertTask(ctx, tx, &row, actor, domain.CleanText(in.Context)); err != nil {
				return err
			}
			if origin == "" {
				return nil
			}
			ok, err := tx.InsertOrigin(ctx, origin, row.Number)
			switch {
			case err != nil:
				return fmt.Errorf("create task #%d: record its origin: %w", row.Number, err)
			case !ok:
				return errOriginTaken
			}
			return nil
		})
		if !errors.Is(err, errOriginTaken) || attempt == 3 {
			break
		}
	}
	switch {
	case err != nil:
		return domain.Task{}, err
	case existing.Number != 0:
		return domain.Task{}, &domain.ExistingTaskError{Task: existing}
	}
	return row, nil
}

// errOriginTaken rolls back a create whose origin another create took
// meanwhile.
var errOriginTaken = errors.New("create task: another create took its origin meanwhile")

// insertTask numbers and writes row, checked against the limits already,
// with its "created" event (and, for a retry, the files of the task it
// continues).
func insertTask(ctx context.Context, tx Tx, row *domain.Task, actor, context string) error {
	var err error
	row.EventSeq = 1
	if row.Number, err = tx.InsertTask(ctx, *row); err != nil {
		return fmt.Errorf("create task: %w", err)
	}
	m, err := domain.Created(*row, actor, context)
	if err != nil {
		return err
	}
	if m.Task.EventSeq != row.EventSeq {
		return fmt.Errorf("create task #%d: the created event has sequence %d", row.Number, m.Task.EventSeq)
	}
	if row.ContinuesNumber != 0 {
		if err := tx.CopyFiles(ctx, row.ContinuesNumber, row.Number); err != nil {
			return fmt.Errorf("create task #%d: copy the files of task #%d: %w", row.Number, row.ContinuesNumber, err)
		}
	}
	if err := insertEvent(ctx, tx, m.Event); err != nil {
		return fmt.Errorf("create task #%d: %w", row.Number, err)
	}
	return nil
}

// createSubtasks creates the children m's step asked for (m.Subtasks), in
// the transaction that commits m, so that a commit refused (a lost lease,
// an ended task) creates none and a re-run iteration cannot make a second
// child. Each is checked against the limits of subtasks here, with m's
// task, locked by this transaction, as its parent: a child past one is
// not created, and the step's result says why, as it says the number of
// each child created. A task that comes to wait on subtasks none of which
// was created is resumed at once (settleSubtasks).
func createSubtasks(ctx context.Context, tx Tx, m *domain.Mutation) error {
	if len(m.Subtasks) == 0 {
		return nil
	}
	parent := m.Task
	actor := fmt.Sprintf("task #%d", parent.Number)
	shares, err := subtaskShares(ctx, tx, parent, m.Subtasks)
	if err != nil {
		return err
	}
	lines := make([]string, 0, len(m.Subtasks))
	for i, in := range m.Subtasks {
		in.ParentNumber, in.ContinuesNumber = parent.Number, 0
		if shares != nil {
			in.MaxTokens = &shares[i]
		}
		if in.Now.IsZero() {
			in.Now = m.Event.Time
		}
		row, err := domain.NewTaskRow(in)
		if err == nil {
			domain.CleanTask(&row)
			if err = checkParent(ctx, tx, parent, &row); err == nil {
				err = checkActive(ctx, tx, &row, in.MaxActive)
			}
		}
		switch {
		case errors.Is(err, domain.ErrLimit), errors.Is(err, domain.ErrInvalid):
			lines = append(lines, domain.SubtaskNotCreated(in, limitReason(err)))
			continue
		case err != nil:
			return fmt.Errorf("subtask of #%d: %w", parent.Number, err)
		}
		if err := insertTask(ctx, tx, &row, actor, ""); err != nil {
			return fmt.Errorf("subtask of #%d: %w", parent.Number, err)
		}
		lines = append(lines, domain.SubtaskCreated(row))
	}
	if m.Step != nil {
		asked := domain.SubtaskStep(m.Step, m.Steps)
		asked.Result = domain.WithSubtaskLines(asked.Result, lines)
	}
	return nil
}

// subtaskShares is the budget of each child of parent asked for in one
// commit (domain.SubtaskBudgets), from what parent has left before any
// of them is created; nil when parent has no budget.
func subtaskShares(ctx context.Context, tx Tx, parent domain.Task, subs []domain.NewTask) ([]int64, error) {
	if parent.MaxTokens <= 0 {
		return nil, nil
	}
	children, err := tx.Children(ctx, parent.Number)
	if err != nil {
		return nil, fmt.Errorf("subtasks of #%d: %w", parent.Number, err)
	}
	asked := make([]int64, len(subs))
	for i, in := range subs {
		if in.MaxTokens != nil {
			asked[i] = *in.MaxTokens
		}
	}
	return domain.SubtaskBudgets(domain.TokensLeft(parent, children), asked), nil
}

// limitReason is the sentence of a limit or validation error, without the
// operation and the sentinel before it.
func limitReason(err error) string {
	s := err.Error()
	for _, sentinel := range []error{domain.ErrInvalid, domain.ErrLimit} {
		if _, after, ok := strings.Cut(s, sentinel.Error()+": "); ok {
			return after
		}
	}
	return s
}

// checkLimits refuses, inside the creating transaction, a task past a
// limit of the requestor's (their active tasks, subtasks included) or of
// its parent (see checkParent, which locks the parent first, so that
// locks are taken in one order: a task's row, then its requestor's).
func checkLimits(ctx context.Context, tx Tx, row *domain.Task, maxActive int) error {
	if row.ParentNumber != 0 {
		parent, err := tx.LockTask(ctx, row.ParentNumber)
		if errors.Is(err, ErrNoRows) {
			return fmt.Errorf("create task: %w: parent task #%d does not exist", domain.ErrInvalid, row.ParentNumber)
		}
		if err != nil {
			return fmt.Errorf("create task: parent: %w", err)
		}
		if err := checkParent(ctx, tx, parent, row); err != nil {
			return fmt.Errorf("create task: %w", err)
		}
	}
	return checkActive(ctx, tx, row, maxActive)
}

// checkActive refuses a task whose requestor has maxActive tasks (or
// more) that have not ended, subtasks included. The requestor's lock
// makes two creators at the limit wait for each other.
func checkActive(ctx context.Context, tx Tx, row *domain.Task, maxActive int) error {
	if row.RequestorID == "" || maxActive <= 0 {
		return nil
	}
	if err := tx.LockRequestor(ctx, row.RequestorID); err != nil {
		return fmt.Errorf("create task: %w", err)
	}
	n, err := tx.CountActive(ctx, row.RequestorID)
	if err != nil {
		return fmt.Errorf("create task: count active tasks: %w", err)
	}
	if n >= maxActive {
		return fmt.Errorf("create task: %w: you already have %d tasks that have not ended (the limit is %d)", domain.ErrLimit, n, maxActive)
	}
	return nil
}

// checkParent refuses a subtask of parent, a row this transaction has
// locked, past the limits of subtasks: domain.MaxSubtasks children,
// domain.MaxSubtaskDepth levels, and the parent's token budget.
//
// A subtask's budget is reserved from what its parent has left: the
// parent's budget less the tokens it has spent (its own and those of its
// children that ended) and less the budgets its children that have not
// ended hold. row's budget is capped at that remainder (a subtask asking
// for none gets a quarter of it: createSubtasks has set the budgets of
// the children asked together, domain.SubtaskBudgets), and a parent with
// nothing left has no room for another subtask. When a child ends, its tokens count toward the
// parent and its reservation ends with it: what it did not spend is the
// parent's again. So the tokens a tree spends stay within its root's
// budget, but for the call that takes a task past its own budget.
func checkParent(ctx context.Context, tx Tx, parent domain.Task, row *domain.Task) error {
	if parent.Status.Terminal() {
		return fmt.Errorf("%w: parent task #%d has ended", domain.ErrInvalid, parent.Number)
	}
	children, err := tx.Children(ctx, parent.Number)
	if err != nil {
		return fmt.Errorf("subtasks of #%d: %w", parent.Number, err)
	}
	if len(children) >= domain.MaxSubtasks {
		return fmt.Errorf("%w: task #%d already has %d subtasks (the limit is %d)", domain.ErrLimit, parent.Number, len(children), domain.MaxSubtasks)
	}
	depth := 1
	for up := parent; up.ParentNumber != 0; depth++ {
		if depth >= domain.MaxSubtaskDepth {
			return fmt.Errorf("%w: subtasks nest at most %d levels deep", domain.ErrLimit, domain.MaxSubtaskDepth)
		}
		if up, err = tx.LockTask(ctx, up.ParentNumber); err != nil {
			return fmt.Errorf("ancestor of #%d: %w", parent.Number, err)
		}
	}
	if parent.MaxTokens <= 0 {
		return nil
	}
	left := domain.TokensLeft(parent, children)
	if left <= 0 {
		return fmt.Errorf("%w: task #%d has no token budget left for a subtask (%d of its %d tokens spent, %d held by its running subtasks)",
			domain.ErrLimit, parent.Number, parent.Tokens(), parent.MaxTokens, domain.TokensReserved(children))
	}
	if row.MaxTokens == 0 {
		row.MaxTokens = domain.SubtaskBudgets(left, []int64{0})[0]
	}
	row.MaxTokens = min(row.MaxTokens, left)
	return nil
}

// ClaimTask takes the head of the queue with the dialect's claim statement
// and records the claim with the event domain.Claimed builds from the row
// before, in the same transaction, after checking that the statement and
// the domain agree on what a claim is.
func (c Core) ClaimTask(ctx context.Context, cl domain.Claim) (domain.Task, error) {
	cl, err := cleanClaim(cl)
	if err != nil {
		return domain.Task{}, err
	}
	var after domain.Task
	err = c.D.Write(ctx, func(tx Tx) error {
		var err error
		if c.D.ClaimsAlone() {
			// The statement writes the event too: one round trip.
			after, err = checkedClaim(claimAlone(ctx, tx, cl))
			return err
		}
		after, err = claimHead(ctx, tx, cl, 0)
		return err
	})
	if err != nil {
		return domain.Task{}, err
	}
	return after, nil
}

// UpdateTaskAndClaim implements domain.NextClaimer: the claim, then
// UpdateTask, in one transaction. The claim of a dialect that ClaimsAlone
// commits alone; one whose Tx is also an AheadClaimer may take it in the update's
// transaction instead (ClaimAhead), and when it cannot, the claim follows
// the commit as ClaimTask.
func (c Core) UpdateTaskAndClaim(ctx context.Context, number int64, fn domain.MutateFunc, next domain.Claim) (after, claimed domain.Task, err error) {
	next, err = cleanClaim(next)
	if err != nil {
		return domain.Task{}, domain.Task{}, err
	}
	var ahead func() (ClaimResult, error)
	separate := false
	err = c.D.Write(ctx, func(tx Tx) error {
		// Write may run this more than once: each run starts afresh.
		ahead, separate, claimed = nil, false, domain.Task{}
		var err error
		// A claim that commits alone joins this transaction only
		// when ClaimAhead takes it in.
		alone := c.D.ClaimsAlone()
		if !alone {
			// The task committed is not the claim's, even when its
			// lease has run out: a late commit nobody contested is
			// taken (the fence decides, not the clock), and claiming
			// the task first would move its fence and refuse it.
			claimed, err = claimHead(ctx, tx, next, number)
			if errors.Is(err, domain.ErrNoTask) {
				claimed, err = domain.Task{}, nil
			}
			if err != nil {
				return err
			}
		}
		if after, err = updateTask(ctx, tx, number, fn); err != nil {
			return err
		}
		if alone {
			if ac, ok := tx.(AheadClaimer); ok {
				ahead = ac.ClaimAhead(ctx, eventClaim(next))
			}
			separate = ahead == nil
		}
		return nil
	})
	if err != nil {
		return domain.Task{}, domain.Task{}, err
	}
	switch {
	case ahead != nil:
		r, aerr := ahead()
		claimed, err = checkedClaim(eventClaim(next), r, aerr)
	case separate:
		claimed, err = c.ClaimTask(ctx, next)
	}
	if errors.Is(err, domain.ErrNoTask) {
		return after, domain.Task{}, nil
	}
	if err != nil {
		// The update has committed: after says so, err why nothing was
		// claimed.
		return after, domain.Task{}, err
	}
	return after, claimed, nil
}

// cleanClaim checks a claim and cleans its owner.
func cleanClaim(cl domain.Claim) (domain.Claim, error) {
	if cl.Owner == "" || (cl.Now.IsZero() && !cl.StoreClock) {
		return cl, fmt.Errorf("claim task: %w: a claim needs an owner and a time", domain.ErrInvalid)
	}
	cl.Owner = domain.CleanText(cl.Owner)
	return cl, nil
}

// eventClaim is cl as a claim that writes its event takes it: a lease on the store's
// clock in whole microseconds, as the database keeps times.
func eventClaim(cl domain.Claim) domain.Claim {
	if cl.StoreClock {
		cl.Lease = cl.Lease.Truncate(time.Microsecond)
	}
	return cl
}

// claimAlone claims with the statement of a dialect that ClaimsAlone.
func claimAlone(ctx context.Context, tx Tx, cl domain.Claim) (domain.Claim, ClaimResult, error) {
	cl = eventClaim(cl)
	r, err := tx.ClaimHead(ctx, cl, 0)
	return cl, r, err
}

// checkedClaim is the task a claim cl that wrote its event took, once
// checkClaim agrees with its row and event.
func checkedClaim(cl domain.Claim, r ClaimResult, err error) (domain.Task, error) {
	if errors.Is(err, ErrNoRows) {
		return domain.Task{}, fmt.Errorf("claim task: %w", domain.ErrNoTask)
	}
	if err != nil {
		return domain.Task{}, fmt.Errorf("claim task: %w", err)
	}
	cl.Now = r.Now
	if _, err := checkClaim(r.Before, r.After, &r.Event, cl); err != nil {
		return domain.Task{}, err
	}
	return r.After, nil
}

// claimHead claims with the statement of a dialect that claims in its
// transaction and writes the event, in tx, passing over task except (0
// for none).
func claimHead(ctx context.Context, tx Tx, cl domain.Claim, except int64) (domain.Task, error) {
	if err := onStoreClock(ctx, tx, cl.StoreClock, &cl.Now); err != nil {
		return domain.Task{}, fmt.Errorf("claim task: %w", err)
	}
	at := cl
	at.Now, at.StoreClock = domain.UTC(cl.Now), false
	r, err := tx.ClaimHead(ctx, at, except)
	before, after := r.Before, r.After
	if errors.Is(err, ErrNoRows) {
		return domain.Task{}, fmt.Errorf("claim task: %w", domain.ErrNoTask)
	}
	if err != nil {
		return domain.Task{}, fmt.Errorf("claim task: %w", err)
	}
	m, err := checkClaim(before, after, nil, cl)
	if err != nil {
		return domain.Task{}, err
	}
	if err := insertEvent(ctx, tx, m.Event); err != nil {
		return domain.Task{}, fmt.Errorf("claim task #%d: %w", after.Number, err)
	}
	return after, nil
}

// checkClaim checks that the claim statement and the domain agree on what
// a claim is: that domain.Claimed turns before into after and, when the
// statement wrote the event too (written), into that event. It returns
// domain.Claimed's mutation.
func checkClaim(before, after domain.Task, written *domain.TaskEvent, cl domain.Claim) (domain.Mutation, error) {
	m, err := domain.Claimed(before, cl)
	if err != nil {
		return m, err
	}
	// (== is the quick check; times from both sides are normalized UTC.)
	if m.Task != after {
		d, err := domain.DifferingColumns(m.Task, after)
		if err != nil {
			return m, fmt.Errorf("claim task #%d: %w", after.Number, err)
		}
		if len(d) > 0 {
			return m, fmt.Errorf("claim task #%d: the claim statement and domain.Claimed disagree on %v", after.Number, d)
		}
	}
	if written == nil {
		return m, nil
	}
	want := m.Event
	if err := domain.CleanEvent(&want); err != nil {
		return m, fmt.Errorf("claim task #%d: event: %w", after.Number, err)
	}
	if same, err := sameEvent(want, *written); err != nil || !same {
		return m, fmt.Errorf("claim task #%d: the claim statement wrote the event %d %s %s by %s at fence %d, %v; domain.Claimed makes %d %s %s by %s at fence %d, %v (%v)",
			after.Number, written.Sequence, written.Type, written.Payload, written.Actor, written.Fence, written.Time,
			want.Sequence, want.Type, want.Payload, want.Actor, want.Fence, want.Time, err)
	}
	return m, nil
}

// sameEvent says whether a and b are the same event but for their IDs:
// their payloads the same JSON value, however each is spaced and ordered.
func sameEvent(a, b domain.TaskEvent) (bool, error) {
	if a.TaskNumber != b.TaskNumber || a.Sequence != b.Sequence || a.Type != b.Type ||
		a.Actor != b.Actor || a.Fence != b.Fence || !a.Time.Equal(b.Time) {
		return false, nil
	}
	return sameJSON(a.Payload, b.Payload)
}

// onStoreClock sets *now to the database's clock when asked: leases are
// then measured on the clock every replica shares (docs/security.md), whatever
// each replica's own clock says.
func onStoreClock(ctx context.Context, tx Tx, asked bool, now *time.Time) error {
	if !asked {
		return nil
	}
	t, err := tx.Now(ctx)
	if err != nil {
		return fmt.Errorf("read the database's clock: %w", err)
	}
	*now = domain.UTC(t)
	return nil
}

// UpdateTask locks the task, lets fn compute the change, checks it and
// writes it.
func (c Core) UpdateTask(ctx context.Context, number int64, fn domain.MutateFunc) (domain.Task, error) {
	var out domain.Task
	err := c.D.Write(ctx, func(tx Tx) error {
		var err error
		out, err = updateTask(ctx, tx, number, fn)
		return err
	})
	if err != nil {
		return domain.Task{}, err
	}
	return out, nil
}

// updateTask is UpdateTask in tx.
func updateTask(ctx context.Context, tx Tx, number int64, fn domain.MutateFunc) (domain.Task, error) {
	cur, err := lockToWrite(ctx, tx, number)
	if errors.Is(err, ErrNoRows) {
		return domain.Task{}, &domain.TaskError{Op: "update", Number: number, Err: domain.ErrNotFound}
	}
	if err != nil {
		return domain.Task{}, fmt.Errorf("update task #%d: %w", number, err)
	}
	m, err := fn(cur)
	if err != nil {
		return domain.Task{}, err
	}
	if err := domain.CheckMutation(cur, m); err != nil {
		return domain.Task{}, err
	}
	// Children first: their numbers go into the step's result.
	if err := createSubtasks(ctx, tx, &m); err != nil {
		return domain.Task{}, fmt.Errorf("update task #%d: %w", number, err)
	}
	if err := writeMutation(ctx, tx, cur, &m); err != nil {
		return domain.Task{}, fmt.Errorf("update task #%d: %w", number, err)
	}
	if err := settleSubtasks(ctx, tx, cur, m); err != nil {
		return domain.Task{}, fmt.Errorf("update task #%d: %w", number, err)
	}
	return m.Task, nil
}

// lockToWrite is LockTask for a row the transaction goes on to write, or
// to roll back: a Tx that knows the row (RowCache) hands it over unread,
// and writes it only if it has not changed meanwhile.
func lockToWrite(ctx context.Context, tx Tx, number int64) (domain.Task, error) {
	if c, ok := tx.(RowCache); ok {
		if row, ok := c.CachedTask(number); ok {
			return row, nil
		}
	}
	return tx.LockTask(ctx, number)
}

// settleSubtasks applies, in the transaction of mutation m of task cur,
// what it means for subtasks (docs/tasks.md): a subtask that ends adds its
// tokens to its parent and, if it was the last, resumes a parent waiting on
// its subtasks; a task that comes to wait on subtasks that have all ended
// already is resumed at once. Either way the resumption commits with the
// change that caused it, so no crash can come between them.
func settleSubtasks(ctx context.Context, tx Tx, cur domain.Task, m domain.Mutation) error {
	now := m.Event.Time
	t := m.Task
	if t.Status.Terminal() && !cur.Status.Terminal() && t.ParentNumber != 0 {
		parent, err := tx.LockTask(ctx, t.ParentNumber)
		if err != nil {
			return fmt.Errorf("parent #%d: %w", t.ParentNumber, err)
		}
		if parent.Status.Terminal() {
			return nil
		}
		return resumeParent(ctx, tx, parent, &t, now, false)
	}
	if t.WaitingOn == domain.WaitSubtasks && cur.WaitingOn != domain.WaitSubtasks {
		return resumeParent(ctx, tx, t, nil, now, len(m.Subtasks) > 0)
	}
	return nil
}

// resumeParent applies domain.SubtaskEnded to parent, a row locked by
// this transaction. With a nil child it writes nothing unless every
// subtask has ended, and there is one — or asked says the change that made
// the parent wait asked for its children itself (Mutation.Subtasks), so
// none is still to come.
func resumeParent(ctx context.Context, tx Tx, parent domain.Task, child *domain.Task, now time.Time, asked bool) error {
	children, err := tx.Children(ctx, parent.Number)
	if err != nil {
		return fmt.Errorf("subtasks of #%d: %w", parent.Number, err)
	}
	remaining := 0
	for _, c := range children {
		if !c.Status.Terminal() {
			remaining++
		}
	}
	if child == nil && (remaining > 0 || (len(children) == 0 && !asked)) {
		return nil
	}
	outcomes := domain.SubtaskOutcomes(children)
	if len(children) == 0 {
		// It asked for subtasks and none could be created (the step's
		// result says why): there is nothing to wait for.
		outcomes = "no subtask was created"
	}
	m, err := domain.SubtaskEnded(parent, child, remaining, outcomes, now)
	if err != nil {
		return err
	}
	if err := domain.CheckMutation(parent, m); err != nil {
		return err
	}
	return writeMutation(ctx, tx, parent, &m)
}

// writeMutation writes the row, the step, the notifications, the file
// changes and, last, the event of m to a row the transaction has locked,
// which was cur.
func writeMutation(ctx context.Context, tx Tx, cur domain.Task, m *domain.Mutation) error {
	domain.CleanTask(&m.Task)
	if err := tx.UpdateTask(ctx, cur, m.Task); err != nil {
		return err
	}
	if m.Step != nil {
		// The iteration's first step, then the further ones in the order
		// they ran (a tools reply's calls, plugin/toolsteps.go).
		for i, st := range append([]domain.Step{*m.Step}, m.Steps...) {
			if err := domain.CleanStep(&st); err != nil {
				return fmt.Errorf("step %d.%d: %w", st.Iteration, i, err)
			}
			if err := tx.InsertStep(ctx, st); err != nil {
				return fmt.Errorf("step %d.%d: %w", st.Iteration, i, err)
			}
		}
	}
	for _, n := range m.Notifications {
		if n.TaskNumber == 0 {
			n.TaskNumber = m.Task.Number
		}
		if n.CreatedAt.IsZero() {
			n.CreatedAt = m.Event.Time
		}
		n, err := PrepareNotification(n)
		if err != nil {
			return err
		}
		if err := tx.Enqueue(ctx, n); err != nil {
			return fmt.Errorf("notification for %s: %w", n.Room, err)
		}
	}
	if err := writeFiles(ctx, tx, m.Task.Number, m.Files, m.Event.Time); err != nil {
		return err
	}
	return insertEvent(ctx, tx, m.Event)
}

func insertEvent(ctx context.Context, tx Tx, e domain.TaskEvent) error {
	if err := domain.CleanEvent(&e); err != nil {
		return fmt.Errorf("event: %w", err)
	}
	if err := tx.InsertEvent(ctx, e); err != nil {
		return fmt.Errorf("event %d: %w", e.Sequence, err)
	}
	return nil
}

// MoveTask moves task number to room with domain.Moved, taking along the
// notifications still waiting for its old room that no send has begun on;
// the event says how many.
func (c Core) MoveTask(ctx context.Context, number int64, room, actor string, now time.Time) (domain.Task, error) {
	var out domain.Task
	err := c.D.Write(ctx, func(tx Tx) error {
		cur, err := tx.LockTask(ctx, number)
		if errors.Is(err, ErrNoRows) {
			return &domain.TaskError{Op: "move", Number: number, Err: domain.ErrNotFound}
		}
		if err != nil {
			return fmt.Errorf("move task #%d: %w", number, err)
		}
		// Moved refuses first, so a refused move moves no notification.
		m, err := domain.Moved(cur, room, domain.CleanText(actor), now, nil)
		if err != nil {
			return err
		}
		domain.CleanTask(&m.Task)
		moved, err := tx.MoveNotifications(ctx, number, cur.RoomID, m.Task.RoomID)
		if err != nil {
			return fmt.Errorf("move task #%d: its notifications: %w", number, err)
		}
		if m, err = domain.Moved(cur, m.Task.RoomID, domain.CleanText(actor), now, map[string]any{"notifications_moved": moved}); err != nil {
			return err
		}
		if err := domain.CheckMutation(cur, m); err != nil {
			return err
		}
		if err := writeMutation(ctx, tx, cur, &m); err != nil {
			return fmt.Errorf("move task #%d: %w", number, err)
		}
		out = m.Task
		return nil
	})
	if err != nil {
		return domain.Task{}, err
	}
	return out, nil
}
