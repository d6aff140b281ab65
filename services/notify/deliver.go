package notify

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/plugin"
)

// OnceSender is a platform that delivers a notification's message once,
// however often it is asked to (docs/security.md): a send that timed out, or
// whose sender crashed or lost its claim before marking it sent, is tried
// again — by this replica or another — with the same key, and the
// platform recognises what the earlier attempt delivered (a Discord
// nonce, Slack metadata found in the channel's history) instead of
// posting it twice. Platforms without it get Send, at least once.
//
// An error from Send or SendOnce that says the message can never be
// delivered where it was meant to go — the channel is gone, or the bot
// may not post in it — has a *plugin.UndeliverableError in its chain;
// the notifications it carried are then given up on at once instead of
// retried.
type OnceSender interface {
	plugin.Platform
	// SendOnce sends m to room as Send does, tagged with key, which is
	// the same on every attempt at this message. since is zero on the
	// first attempt; otherwise an earlier attempt began then and may have
	// delivered some or all of m, which is then not delivered again.
	SendOnce(ctx context.Context, room string, m plugin.Outgoing, key string, since time.Time) (plugin.SentMessage, error)
}

// errClaimLost ends a send whose claim could not be renewed.
var errClaimLost = errors.New("the claim on the notifications could not be renewed")

// undeliverable reports whether err says that no retry can deliver the
// message (see OnceSender).
func undeliverable(err error) bool {
	var u *plugin.UndeliverableError
	return errors.As(err, &u)
}

// deliver sends a room's claimed rows: one message, or, when some of them
// are already part of a message an earlier attempt began (they carry its
// key), that message first and the rest in another. It reports whether a
// message went out.
func (s *Service) deliver(ctx context.Context, room string, rows []domain.Notification) (bool, error) {
	if ed, ok := s.cardEditor(room); ok {
		return s.deliverCards(ctx, room, ed, rows)
	}
	sent := false
	var errs []error
	for _, msg := range byMessage(rows) {
		ok, err := s.deliverMessage(ctx, room, msg)
		sent = sent || ok
		if err != nil {
			errs = append(errs, err)
		}
	}
	return sent, errors.Join(errs...)
}

// byMessage groups rows by the message they go out in: the rows of each
// message an earlier attempt began (same key), each reply to a person
// alone, and the other rows no attempt has carried yet, in the order of
// their oldest row.
func byMessage(rows []domain.Notification) [][]domain.Notification {
	var keys []string
	groups := map[string][]domain.Notification{}
	for _, r := range rows {
		k := r.DeliveryKey
		if k == "" && r.Category == domain.NotifyReply {
			k = "\x00reply:" + strconv.FormatInt(r.ID, 10) // a reply goes alone (replyMessage)
		}
		if _, seen := groups[k]; !seen {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	out := make([][]domain.Notification, len(keys))
	for i, k := range keys {
		out[i] = groups[k]
	}
	return out
}

// deliverMessage sends rows as one message under their key (a new one
// for rows no attempt has carried), recorded on the rows before the send
// so that any later attempt sends the same message under the same key. A
// failed send leaves the rows to be retried, or gives them up (failed).
func (s *Service) deliverMessage(ctx context.Context, room string, rows []domain.Notification) (bool, error) {
	ids := idsOf(rows)
	platformName := domain.RoomPlatform(room)
	msg, shown, again := firstRendering(rows)
	if !again {
		var err error
		if msg, shown, err = s.compose(ctx, room, rows); err != nil {
			return false, s.failed(ctx, room, rows, err)
		}
	}
	if msg.Text == "" {
		return false, s.store.MarkSent(ctx, s.opts.Owner, ids, shown)
	}
	platform, ok := s.rt.Platform(room)
	if !ok {
		s.opts.Metrics.NotificationFailed(platformName)
		return false, s.failed(ctx, room, rows, fmt.Errorf("no platform is connected for room %s", room))
	}
	if err := s.pace(ctx, room, true); err != nil {
		return false, s.failed(ctx, room, rows, err)
	}
	key, since := rows[0].DeliveryKey, firstAttempt(rows)
	if key == "" {
		key, since = replyKey(rows)
	}
	if key == "" {
		key = deliveryKey(ids)
	}
	if err := s.store.BeginSend(ctx, s.opts.Owner, ids, key, s.now(), rendering(msg, shown)); err != nil {
		if errors.Is(err, domain.ErrStaleFence) {
			s.log.Warn("another sender took the notifications before they were sent", "room", room, "key", key, "err", err)
			return false, nil
		}
		return false, fmt.Errorf("begin sending to %s: %w", room, err)
	}
	if _, err := s.send(ctx, platform, room, msg, key, since, ids); err != nil {
		s.countFailure(ctx, platformName, err)
		if errors.Is(err, errClaimLost) {
			// The rows are another sender's now; it sends the message
			// under the same key.
			s.log.Warn("send canceled: its claim was lost", "room", room, "key", key, "err", err)
			return false, nil
		}
		return false, s.failed(ctx, room, rows, err)
	}
	s.opts.Metrics.NotificationSent(platformName)
	if err := s.store.MarkSent(ctx, s.opts.Owner, ids, shown); err != nil {
		if errors.Is(err, domain.ErrStaleFence) {
			// Delivered after the claim was lost: the sender holding the
			// rows now finds the message by its key and does not send
			// it again.
			s.log.Warn("message delivered after its claim was lost", "room", room, "key", key, "err", err)
			return true, nil
		}
		return true, fmt.Errorf("mark notifications of %s sent: %w", room, err)
	}
	return true, nil
}

// send makes one platform send under a deadline (SendTimeout, on the
// runtime's clock) while the claim on ids is renewed every Lease/3. When a
// renewal fails — another sender took the rows, or the store cannot say —
// the send is canceled with errClaimLost rather than risk two senders
// posting at once; whoever sends the rows next uses the same key.
func (s *Service) send(ctx context.Context, p plugin.Platform, room string, m plugin.Outgoing, key string, since time.Time, ids []int64) (plugin.SentMessage, error) {
	var out plugin.SentMessage
	err := s.guarded(ctx, "send to", room, ids, true, func(ctx context.Context) error {
		var err error
		if once, ok := p.(OnceSender); ok {
			out, err = once.SendOnce(ctx, room, m, key, since)
		} else {
			out, err = p.Send(ctx, room, m)
		}
		return err
	})
	return out, err
}

// guarded runs call, one platform call about the rows of ids (a send, a
// card's edit), as send describes: under a deadline, with the claim
// renewed, canceled with errClaimLost when a renewal fails. First it
// waits for its turn by the platform's pacer, the claim renewed meanwhile (a post's, or an edit's when
// post is false); a 429 pauses the room, or the whole platform, in the
// pacer for its Retry-After. what names the call in its errors ("send
// to").
func (s *Service) guarded(ctx context.Context, what, room string, ids []int64, post bool, call func(context.Context) error) error {
	sendCtx, lose := context.WithCancelCause(ctx)
	defer lose(nil)
	done := make(chan struct{})
	var wg sync.WaitGroup
	// The claim is renewed from before the wait for a turn: a wait longer
	// than the lease (a platform's global pause) keeps the room, and one
	// whose claim cannot be renewed ends as a send would.
	wg.Go(func() { s.renew(sendCtx, done, lose, room, ids) })
	if err := s.turn(sendCtx, room, post); err != nil {
		close(done)
		wg.Wait()
		if cause := context.Cause(sendCtx); errors.Is(cause, errClaimLost) {
			return fmt.Errorf("%s %s: waiting for its turn: %w: %w", what, room, cause, err)
		}
		return fmt.Errorf("%s %s: waiting for its turn: %w", what, room, err)
	}
	tctx, cancel := clock.WithTimeout(sendCtx, s.clk, s.opts.SendTimeout)
	err := call(tctx)
	timedOut := clock.TimedOut(tctx)
	cancel()
	close(done)
	wg.Wait()
	var rl *plugin.RateLimitedError
	if p := s.pacer(room); p != nil && errors.As(err, &rl) {
		p.pause(room, s.clk.Now().Add(max(rl.RetryAfter, time.Second)), rl.Global)
	}
	switch cause := context.Cause(sendCtx); {
	case err == nil:
		return nil
	case errors.Is(cause, errClaimLost):
		return fmt.Errorf("%s %s: %w: %w", what, room, cause, err)
	case timedOut:
		return fmt.Errorf("%s %s: no answer within %s: %w", what, room, s.opts.SendTimeout, err)
	}
	return err
}

// pacer is the pacer of room's platform, nil when the platform publishes
// no limits (or none is connected).
func (s *Service) pacer(room string) *pacer {
	name := domain.RoomPlatform(room)
	s.pacersMu.Lock()
	defer s.pacersMu.Unlock()
	if p, ok := s.pacers[name]; ok {
		return p
	}
	platform, ok := s.rt.Platform(room)
	if !ok {
		return nil
	}
	var p *pacer
	if l, ok := platform.(plugin.Limited); ok {
		lim := l.Limits()
		p = newPacer(lim, s.opts.MaxPaceWait)
		if s.opts.Shares != nil && lim.Bot != "" {
			// Shared: nothing goes before the first beat, which the
			// first request writes (beatIfDue).
			p.sh = &share{store: s.opts.Shares, platform: name, bot: lim.Bot, replica: s.opts.Owner}
			p.noShare = lim.Global.N > 0
		}
	}
	s.pacers[name] = p
	return p
}

// beatIfDue writes the beat of p's share when one is due (share.beat):
// the loop's beats keep it alive, and a sender writes one when the loop
// does not run or is late.
func (s *Service) beatIfDue(ctx context.Context, p *pacer) {
	if p == nil || p.sh == nil || p.lim.Global.N <= 0 {
		return // alone, or only rooms' windows to share
	}
	now := s.now()
	if !p.sh.beatDue(now) {
		return
	}
	if err := p.sh.beat(ctx, p, now, s.clk.Now()); err != nil && ctx.Err() == nil {
		s.log.Warn("cannot share the platform's pace with the other replicas; keeping the last share", "platform", p.sh.platform, "err", err)
	}
}

// sharedPacers lists the pacers that share their limits.
func (s *Service) sharedPacers() []*pacer {
	s.pacersMu.Lock()
	defer s.pacersMu.Unlock()
	var out []*pacer
	for _, p := range s.pacers {
		if p != nil && p.sh != nil {
			out = append(out, p)
		}
	}
	return out
}

// bookRoom books a post to room in the room's window the replicas share,
// when p is shared, and returns a *heldBack when another replica filled
// that window. A store that cannot say leaves the room to this
// replica's own window.
func (s *Service) bookRoom(ctx context.Context, p *pacer, room string) error {
	if p.sh == nil || p.lim.Room.N <= 0 {
		return nil
	}
	now := s.now()
	free, ok, err := p.sh.store.PaceRoom(ctx, p.sh.platform, p.sh.bot, p.bucket(room), now, p.lim.Room.N, p.lim.Room.Span)
	switch {
	case err != nil:
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.log.Warn("cannot book the room's pace with the other replicas; pacing it alone", "room", room, "err", err)
		return nil
	case ok:
		return nil
	}
	until := s.clk.Now().Add(free.Sub(now))
	p.pause(room, until, false)
	return &heldBack{room: room, until: until}
}

// saturated lists the platforms whose pacers hold every room beyond
// MaxPaceWait: a flush claims none of their rooms, and its loop wakes
// when the first of them has room again.
func (s *Service) saturated() []string {
	now := s.clk.Now()
	s.pacersMu.Lock()
	var names []string
	var ats []time.Time
	for name, p := range s.pacers {
		if p == nil {
			continue
		}
		if at, full := p.saturated(now); full {
			names = append(names, name)
			ats = append(ats, at)
		}
	}
	s.pacersMu.Unlock()
	for i, name := range names {
		s.holdUntil(name, true, ats[i])
	}
	return names
}

// pace asks the pacer of room's platform whether a request to room (a
// post, or an edit when post is false) may go soon, and returns a
// *heldBack when the room must be sent later. It is asked before a send
// is begun (BeginSend), so that a send held back is not taken for one
// that may have reached the platform; the request is booked when it is
// made (turn, from guarded).
func (s *Service) pace(ctx context.Context, room string, post bool) error {
	p := s.pacer(room)
	if p == nil {
		return nil
	}
	s.beatIfDue(ctx, p)
	if at, ok := p.admit(room, s.clk.Now(), post); !ok {
		return &heldBack{room: room, until: at}
	}
	return nil
}

// turn waits, on the clock, until the pacer of room's platform takes a
// request to room, and books it then. A wait in a flush of the loop that
// Stop interrupts gives the room back.
func (s *Service) turn(ctx context.Context, room string, post bool) error {
	p := s.pacer(room)
	if p == nil {
		return nil
	}
	if post {
		// The room's window shared with the other replicas is booked
		// first: it is a statement to the store, whose time (a busy
		// database's tens of milliseconds) must not fall between the
		// global booking and the request, where it would let requests
		// booked in one second reach the platform crowded into the next.
		if err := s.bookRoom(ctx, p, room); err != nil {
			return err
		}
	}
	for {
		s.beatIfDue(ctx, p)
		now := s.clk.Now()
		retry, ok, roomFull := p.take(room, now, post)
		switch {
		case ok:
			return nil
		case roomFull:
			return &heldBack{room: room, until: retry}
		}
		t := s.clk.NewTimer(retry.Sub(now))
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-haltOf(ctx):
			// The service is stopping: the rows go back due at once
			// rather than hold the shutdown for a turn.
			t.Stop()
			return &heldBack{room: room, until: now}
		}
	}
}

type haltKey struct{}

// withHalt carries halt, closed when the loop's flush is to stop, to the
// waits for a turn of the sends it makes.
func withHalt(ctx context.Context, halt <-chan struct{}) context.Context {
	if halt == nil {
		return ctx
	}
	return context.WithValue(ctx, haltKey{}, halt)
}

// haltOf is the halt ctx carries, nil (never ready) when none: Stop's own
// last flush waits for its turns.
func haltOf(ctx context.Context) <-chan struct{} {
	halt, _ := ctx.Value(haltKey{}).(<-chan struct{})
	return halt
}

// renew extends the claim on ids every Lease/3 until done, and cancels
// the send (lose) when it cannot.
func (s *Service) renew(ctx context.Context, done <-chan struct{}, lose context.CancelCauseFunc, room string, ids []int64) {
	every := max(s.opts.Lease/3, time.Millisecond)
	for {
		t := s.clk.NewTimer(every)
		select {
		case <-done:
			t.Stop()
			return
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		err := s.store.RenewClaim(ctx, s.opts.Owner, ids, s.now().Add(s.opts.Lease))
		if err == nil {
			continue
		}
		select {
		case <-done: // the send is over; nothing to cancel
			return
		default:
		}
		if ctx.Err() == nil {
			s.log.Warn("cannot renew the claim on a message being sent; canceling the send", "room", room, "err", err)
		}
		lose(fmt.Errorf("%w: %w", errClaimLost, err))
		return
	}
}

// failed handles rows whose message was not delivered: when the platform
// says it never can be, or for rows that have kept failing for
// GiveUpAfter, they are given up on (failed, with the reason); the others
// are released to be retried after a backoff.
func (s *Service) failed(ctx context.Context, room string, rows []domain.Notification, cause error) error {
	var held *heldBack
	switch {
	case errors.As(cause, &held):
		s.holdUntil(held.room, false, held.until)
		return s.giveBack(ctx, room, rows, held.until)
	case ctx.Err() != nil:
		// Stopping: the send was canceled, not refused. Its rows are due
		// at once for the next start or another replica; one that may
		// have reached the platform carries its key.
		gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), giveBackTimeout)
		defer cancel()
		return s.giveBack(gctx, room, rows, s.clk.Now())
	}
	now := s.clk.Now()
	permanent := undeliverable(cause)
	var dead, retry []domain.Notification
	for _, r := range rows {
		if permanent || now.Sub(failingSince(r)) >= s.opts.GiveUpAfter {
			dead = append(dead, r)
		} else {
			retry = append(retry, r)
		}
	}
	var errs []error
	if len(dead) > 0 {
		reason := cause.Error()
		if !permanent {
			reason = fmt.Sprintf("not delivered in %s: %s", s.opts.GiveUpAfter, reason)
		}
		if err := s.store.MarkFailed(ctx, s.opts.Owner, idsOf(dead), now, reason); err != nil {
			errs = append(errs, fmt.Errorf("give up on notifications of %s: %w", room, err))
		} else {
			s.opts.Metrics.NotificationsDead(domain.RoomPlatform(room), len(dead))
			s.log.Error("notifications given up on; retry them once the room can take them", "room", room,
				"notifications", idsOf(dead), "reason", reason)
		}
	}
	if len(retry) > 0 {
		if err := s.release(ctx, room, retry, cause); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// release gives rows back, to be retried after a backoff that grows with
// their attempts, or after the platform's Retry-After.
func (s *Service) release(ctx context.Context, room string, rows []domain.Notification, cause error) error {
	attempts := 0
	for _, r := range rows {
		attempts = max(attempts, r.Attempts)
	}
	wait := min(time.Second<<min(attempts, 20), s.opts.MaxBackoff)
	var rl *plugin.RateLimitedError
	if errors.As(cause, &rl) {
		wait = max(rl.RetryAfter, time.Second)
	}
	s.log.Warn("notification not delivered; will retry", "room", room, "rows", len(rows), "attempts", attempts+1, "retry_in", wait, "err", cause)
	if err := s.store.Release(ctx, s.opts.Owner, idsOf(rows), s.now().Add(wait), cause.Error()); err != nil {
		return fmt.Errorf("release notifications of %s: %w", room, err)
	}
	return nil
}

// countFailure counts a send that failed in Metrics, unless it was held
// back by the pacer or canceled by a shutdown: neither is a failure.
func (s *Service) countFailure(ctx context.Context, platform string, err error) {
	var held *heldBack
	if errors.As(err, &held) || ctx.Err() != nil {
		return
	}
	s.opts.Metrics.NotificationFailed(platform)
}

// giveBack gives rows back unsent, due at due on the runtime's clock,
// counting no attempt (domain.Outbox.GiveBack).
func (s *Service) giveBack(ctx context.Context, room string, rows []domain.Notification, due time.Time) error {
	at := s.now().Add(due.Sub(s.clk.Now()))
	if err := s.store.GiveBack(ctx, s.opts.Owner, idsOf(rows), at); err != nil {
		return fmt.Errorf("give back notifications of %s: %w", room, err)
	}
	return nil
}

// failingSince is when a notification's failures started to count: its
// creation, or its last retry by hand.
func failingSince(n domain.Notification) time.Time {
	if n.RetriedAt.After(n.CreatedAt) {
		return n.RetriedAt
	}
	return n.CreatedAt
}

// firstAttempt is when the first attempt at the rows' message began, zero
// when none has.
func firstAttempt(rows []domain.Notification) time.Time {
	var first time.Time
	for _, r := range rows {
		if !r.SendingAt.IsZero() && (first.IsZero() || r.SendingAt.Before(first)) {
			first = r.SendingAt
		}
	}
	return first
}

func idsOf(rows []domain.Notification) []int64 {
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids
}

// deliveryKey names the message of the notifications ids, before its
// first attempt: the lowest ID and a digest of them all, in base 36, at
// most 21 characters, so that the key and a part number fit the 25 of a
// Discord nonce. IDs are never reused and a row belongs to one message,
// so no two messages get the same key.
func deliveryKey(ids []int64) string {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	h := fnv.New32a()
	var b [8]byte
	for _, id := range ids {
		binary.BigEndian.PutUint64(b[:], uint64(id))
		h.Write(b[:])
	}
	return strconv.FormatInt(ids[0], 36) + "-" + strconv.FormatUint(uint64(h.Sum32()), 36)
}

// rendered is a message as the first send under its key made it, kept on
// one of its rows (domain.Notification.Rendered) by BeginSend: every later
// attempt sends these very bytes, whatever the task has done since, so a
// platform that knows an earlier attempt only by its text (Discord's
// history once the nonce is forgotten) finds it.
type rendered struct {
	Text      string                `json:"text"`
	Tasks     []int64               `json:"tasks,omitempty"`
	Ended     []int64               `json:"ended,omitempty"`
	Approvals []plugin.ApprovalRef  `json:"approvals,omitempty"`
	ReplyTo   string                `json:"reply_to,omitempty"`
	Shown     []domain.RoomProgress `json:"shown,omitempty"`
}

// rendering encodes m and the progress it shows for BeginSend.
func rendering(m plugin.Outgoing, shown []domain.RoomProgress) string {
	b, err := json.Marshal(rendered{Text: m.Text, Tasks: m.Tasks, Ended: m.Ended, Approvals: m.Approvals, ReplyTo: m.ReplyTo, Shown: shown})
	if err != nil {
		return "" // unreachable: plain values
	}
	return string(b)
}

// firstRendering is the message an earlier attempt at rows rendered, if
// one did (and left it readable).
func firstRendering(rows []domain.Notification) (plugin.Outgoing, []domain.RoomProgress, bool) {
	for _, r := range rows {
		if r.Rendered == "" || r.DeliveryKey == "" {
			continue
		}
		var m rendered
		if json.Unmarshal([]byte(r.Rendered), &m) != nil || m.Text == "" {
			return plugin.Outgoing{}, nil, false
		}
		return plugin.Outgoing{Text: m.Text, Tasks: m.Tasks, Ended: m.Ended, Approvals: m.Approvals, ReplyTo: m.ReplyTo}, m.Shown, true
	}
	return plugin.Outgoing{}, nil, false
}
