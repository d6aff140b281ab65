package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
)

// A store outage and a platform's failure to take a reply (docs/chat.md).
//
// A message is persisted first (its memory row is what makes a platform's
// redelivery a no-op). When the store cannot be reached, the message
// waits for it in this process, trying again with backoff on the
// runtime's clock for StoreOutageWait, and is handled as usual when the
// store answers. After that it is answered with sorryNoStore — a reply
// that needs no store — and nothing is done. While it waits, and for
// refusedTTL after it was answered so, a redelivery of the same message to
// this process is ignored: it would do the thing twice, or, after the
// sentence, do what the person was told was not done.
//
// A platform that delivers a message again until it is acknowledged
// (Slack's Events API) acknowledges it only once it is persisted
// (Receive with ReceiveOptions.Redelivered): it waits for the store only
// briefly, within the platform's window, and on giving up answers nothing
// and leaves the message unacknowledged, to be delivered again — to this
// process or another — and such a receipt holds nothing against the
// redelivery. The platform's last retry is taken as above.
//
// The reply that answers a message is sent directly, tagged with its key
// (Response.Key); when that send fails and the reply can be sent by
// someone else later (it is not ephemeral, the room exists), it goes to
// the outbox as a domain.NotifyReply under the same key, and the
// notification service sends it with its retries and exactly-once
// delivery.
const (
	// DefaultStoreOutageWait is Options.StoreOutageWait's default.
	DefaultStoreOutageWait = 30 * time.Second
	// storeRetryFirst and storeRetryMax bound the backoff between
	// attempts to persist a message while the store is unreachable.
	storeRetryFirst = 250 * time.Millisecond
	storeRetryMax   = 4 * time.Second
	// refusedTTL is how long a message answered with sorryNoStore is
	// remembered, so that a redelivery of it is ignored.
	refusedTTL = 10 * time.Minute
)

// sorryNoStore answers a message that could not be persisted in time.
const sorryNoStore = "I could not reach my database, so nothing was done: say it again in a minute."

var (
	// errStoreDown: the store did not answer within StoreOutageWait.
	errStoreDown = errors.New("the store could not be reached")
	// errInFlight: the same message is being handled by this process,
	// or was answered with sorryNoStore.
	errInFlight = errors.New("the message is being handled already")
)

// unsavedMessage is a message this process has not persisted: being
// persisted (refusedAt zero), or given up on at refusedAt.
type unsavedMessage struct {
	refusedAt time.Time
}

// ReplyKey is the delivery key of the reply to msg: the same on every
// attempt at it, by any replica. "" for a message without an ID.
func ReplyKey(msg *Message) string {
	if msg.ID == "" {
		return ""
	}
	return "reply:" + msg.Platform + ":" + msg.ID
}

// saveIncoming persists msg as mem, waiting up to StoreOutageWait for a
// store that cannot be reached (see above). It returns errInFlight for a
// redelivery of a message this process holds, and errStoreDown when the
// store did not answer in time.
func (rt *Runtime) saveIncoming(ctx context.Context, msg *Message, mem domain.Memory, wait time.Duration, final bool, log *slog.Logger) (domain.Memory, bool, error) {
	key := ""
	if msg.ID != "" {
		key = msg.Platform + "\x00" + msg.ID
		if !rt.holdUnsaved(key, final) {
			return domain.Memory{}, false, errInFlight
		}
		if !final {
			// Not held: a receipt that gives up answers nothing, and
			// one of the same message beside it (a redelivery the
			// platform sent because this one was not acknowledged yet)
			// is told apart by the store, by its receipt.
			key = ""
		}
	}
	refused := false
	defer func() {
		if key != "" {
			rt.releaseUnsaved(key, refused)
		}
	}()
	st := rt.opts.Store
	deadline := rt.clk.Now().Add(wait)
	delay := storeRetryFirst
	for attempt := 1; ; attempt++ {
		saved, inserted, err := st.SaveMemory(ctx, mem)
		if err == nil && !inserted && attempt > 1 && sameReceipt(saved, mem) {
			// An earlier attempt's insert committed and only its answer
			// was lost (a connection cut after the commit): the row is
			// this receipt's, not a redelivery's, which another receipt
			// would have stored at its own time. Taking it for a
			// redelivery would drop the message without a word.
			log.Info("the message was stored by an attempt whose answer was lost; handling it", "message", msg.ID, "attempts", attempt)
			inserted = true
		}
		if err == nil || ctx.Err() != nil || errors.Is(err, domain.ErrInvalid) {
			if err == nil && attempt > 1 {
				log.Info("the store answers again; handling the message that waited for it", "attempts", attempt)
			}
			return saved, inserted, err
		}
		left := deadline.Sub(rt.clk.Now())
		if left <= 0 {
			refused = final
			return domain.Memory{}, false, fmt.Errorf("%w for %s (%d attempts): %w", errStoreDown, wait, attempt, err)
		}
		if attempt == 1 {
			log.Warn("the store cannot be reached; the message waits for it", "message", msg.ID, "up_to", wait, "err", err)
		}
		if err := clock.Sleep(ctx, rt.clk, min(delay, left)); err != nil {
			return domain.Memory{}, false, fmt.Errorf("waiting for the store: %w", err)
		}
		delay = min(2*delay, storeRetryMax)
	}
}

// sameReceipt reports whether stored is the row of mem's receipt: the same
// author, room and text, received at the same microsecond (both stores
// keep microseconds, as domain.UTC does). A platform's redelivery is
// received at a time of its own, and so is each replica's copy of an
// event every replica hears (a Discord gateway event): one replica's
// insert whose answer was lost is not confused with another's, which
// received it microseconds apart. Only a copy received in the very same
// microsecond by another replica, whose own insert failed, could be.
func sameReceipt(stored, mem domain.Memory) bool {
	domain.CleanMemory(&mem) // as the store saved it
	return stored.AuthorID == mem.AuthorID && stored.Room == mem.Room && stored.Text == mem.Text &&
		stored.CreatedAt.Equal(domain.UTC(mem.CreatedAt))
}

// holdUnsaved marks the message key as being persisted by this process
// (only checks, when !hold); false when it is already, or was given up on
// within refusedTTL.
func (rt *Runtime) holdUnsaved(key string, hold bool) bool {
	now := rt.clk.Now()
	rt.unsavedMu.Lock()
	defer rt.unsavedMu.Unlock()
	for k, u := range rt.unsaved {
		if !u.refusedAt.IsZero() && now.Sub(u.refusedAt) > refusedTTL {
			delete(rt.unsaved, k)
		}
	}
	if _, ok := rt.unsaved[key]; ok {
		return false
	}
	if hold {
		rt.unsaved[key] = unsavedMessage{}
	}
	return true
}

// releaseUnsaved forgets the message key once persisted, or remembers it
// as given up on.
func (rt *Runtime) releaseUnsaved(key string, refused bool) {
	rt.unsavedMu.Lock()
	defer rt.unsavedMu.Unlock()
	if refused {
		rt.unsaved[key] = unsavedMessage{refusedAt: rt.clk.Now()}
		return
	}
	delete(rt.unsaved, key)
}

// replyGrace is how long a reply queued ahead of its direct send waits
// before the outbox may send it: longer than that send can take (a
// platform's client gives up after 20 s a request), so the outbox sends it
// only when its replica died sending it, under its key.
const replyGrace = time.Minute

// replyPayload is the outbox's payload of resp, the reply to msg whose
// send began at at.
func replyPayload(msg *Message, resp Response, at time.Time) ([]byte, error) {
	p := domain.ReplyPayload{Text: resp.Text, Key: resp.Key, At: domain.UTC(at)}
	if !msg.Command {
		p.ReplyTo = msg.ID // a command or a button answers no message
	}
	return json.Marshal(p)
}

// heldReply is a reply queued in the outbox ahead of its direct send, due
// only replyGrace later: a replica killed while sending it leaves it to
// the others, who send it under its key (the platform recognises a copy
// that did arrive). nil when the reply could not be held; its methods do
// nothing then.
type heldReply struct {
	rt  *Runtime
	msg *Message
	id  int64
	log *slog.Logger
}

// holdReply queues resp ahead of its direct send, begun at at, when the
// outbox can send it (queueReply says which can), trying the store once:
// a store that fails now leaves the reply to be queued if its send fails,
// as before.
func (rt *Runtime) holdReply(ctx context.Context, msg *Message, resp Response, at time.Time, log *slog.Logger) *heldReply {
	st := rt.opts.Store
	if st == nil || resp.Ephemeral || msg.Room == "" {
		return nil
	}
	payload, err := replyPayload(msg, resp, at)
	if err != nil {
		return nil
	}
	n, err := st.Enqueue(ctx, domain.Notification{
		Room: msg.Room, TaskNumber: resp.TaskNumber, Category: domain.NotifyReply, Payload: payload,
		CreatedAt: rt.clk.Now(), NextAttemptAt: at.Add(replyGrace),
	})
	if err != nil {
		log.Warn("cannot hold the reply in the outbox before sending it; it is queued only if its send fails", "message", msg.ID, "err", err)
		return nil
	}
	return &heldReply{rt: rt, msg: msg, id: n.ID, log: log}
}

// sent settles a held reply delivered: its row is deleted. Should that
// fail, the row comes due later and the outbox finds the message by its
// key instead of sending it again.
func (h *heldReply) sent(ctx context.Context) {
	if h == nil {
		return
	}
	err := h.rt.opts.Store.SettleQueued(context.WithoutCancel(ctx), h.id, true, time.Time{})
	if err != nil && !errors.Is(err, domain.ErrNotFound) {
		h.log.Warn("a reply was sent, but its copy in the outbox could not be dropped; the outbox will find it sent", "message", h.msg.ID, "err", err)
	}
}

// failed settles a held reply whose send failed with sendErr, reporting
// whether the outbox has it: due again (replyDue), or dropped when the
// platform says it can never be delivered. A store that cannot say
// leaves it due at its later time, still queued.
func (h *heldReply) failed(ctx context.Context, sendErr error) (bool, error) {
	if h == nil {
		return false, nil
	}
	ctx = context.WithoutCancel(ctx)
	var gone *UndeliverableError
	if errors.As(sendErr, &gone) {
		if err := h.rt.opts.Store.SettleQueued(ctx, h.id, true, time.Time{}); err != nil && !errors.Is(err, domain.ErrNotFound) {
			return false, fmt.Errorf("drop the reply the platform refused: %w", err)
		}
		return false, nil
	}
	err := h.rt.opts.Store.SettleQueued(ctx, h.id, false, h.rt.replyLimited(h.msg.Room, sendErr))
	switch {
	case errors.Is(err, domain.ErrNotFound):
		// A sender took it already.
	case err != nil:
		h.log.Warn("the reply could not be sent, and the store cannot make it due now; the outbox sends it a minute after it began", "message", h.msg.ID, "err", err)
	case errors.Is(sendErr, ErrPaced):
		h.log.Info("the room is at the platform's limit; the reply is left to the outbox, which sends it in turn", "message", h.msg.ID, "err", sendErr)
	default:
		h.log.Warn("the reply could not be sent; it is queued in the outbox and will be retried", "message", h.msg.ID, "err", sendErr)
	}
	h.rt.Emit(ctx, Event{Type: ReplyQueued, Message: h.msg})
	return true, nil
}

// replyDue is when the outbox should try a reply whose direct send failed
// with sendErr: when the ReplyPacer said the room has room again, after
// the platform's Retry-After when it answered 429 (the outbox's pacer did
// not see that answer, and sending sooner earns another 429), otherwise
// at once.
func replyDue(now time.Time, sendErr error) time.Time {
	var rl *RateLimitedError
	switch {
	case !errors.As(sendErr, &rl):
		return now
	case !rl.Until.IsZero():
		return rl.Until // the pacer wakes the outbox then
	}
	return now.Add(max(rl.RetryAfter, time.Second))
}

// queueReply puts resp, the reply to msg whose direct send (begun at at)
// failed with sendErr, in the outbox, and reports whether it did. An
// ephemeral reply is not queued: only its author may see it, and only the
// interaction or event it answers can show it so — a later message would
// show it to the whole room. Nor is a reply the platform says can never
// be delivered there (the room is gone or forbidden).
func (rt *Runtime) queueReply(ctx context.Context, msg *Message, resp Response, at time.Time, sendErr error, log *slog.Logger) (bool, error) {
	var gone *UndeliverableError
	st := rt.opts.Store
	if st == nil || resp.Ephemeral || errors.As(sendErr, &gone) || msg.Room == "" {
		return false, nil
	}
	payload, err := replyPayload(msg, resp, at)
	if err != nil {
		return false, fmt.Errorf("queue the reply: %w", err)
	}
	// The reply is owed even when the message's context ends (a
	// shutdown): it is queued regardless. A store that cannot be reached
	// (the platform and the database failing together) is waited for as
	// an incoming message waits, up to StoreOutageWait; a shutdown ends
	// the wait. A queueing whose answer was lost may queue the reply
	// twice: both go under its key, which the platform recognises.
	wait := ctx
	ctx = context.WithoutCancel(ctx)
	deadline := rt.clk.Now().Add(rt.opts.StoreOutageWait)
	delay := storeRetryFirst
	due := rt.replyLimited(msg.Room, sendErr)
	for attempt := 1; ; attempt++ {
		_, err := st.Enqueue(ctx, domain.Notification{
			Room: msg.Room, TaskNumber: resp.TaskNumber, Category: domain.NotifyReply, Payload: payload, CreatedAt: rt.clk.Now(),
			NextAttemptAt: due,
		})
		if err == nil {
			break
		}
		left := deadline.Sub(rt.clk.Now())
		if left <= 0 || errors.Is(err, domain.ErrInvalid) {
			return false, fmt.Errorf("queue the reply (%d attempts): %w", attempt, err)
		}
		if attempt == 1 {
			log.Warn("the store cannot be reached; the reply waits for it to be queued", "message", msg.ID, "up_to", rt.opts.StoreOutageWait, "err", err)
		}
		if err := clock.Sleep(wait, rt.clk, min(delay, left)); err != nil {
			return false, fmt.Errorf("queue the reply: waiting for the store: %w", err)
		}
		delay = min(2*delay, storeRetryMax)
	}
	log.Warn("the reply could not be sent; it is queued in the outbox and will be retried", "message", msg.ID, "key", resp.Key, "err", sendErr)
	rt.Emit(ctx, Event{Type: ReplyQueued, Message: msg})
	return true, nil
}
