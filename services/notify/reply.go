package notify

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// Replies to people (domain.NotifyReply): the runtime sends the reply to
// a message directly, tagged with a key of its own (plugin.ReplyKey), and
// queues it here when that send fails. It goes out at once, alone in its
// message (byMessage), as the pipeline wrote it — already in the
// platform's markup — with the buttons of the task it is about, as an
// answer to the person's message where the platform has such answers,
// and under the key of the failed attempt: its first attempt here is a
// retry of that one, so a send that failed after the platform had posted
// the reply (a 500 after the fact, a timeout) is recognised, not posted
// twice.

// replyMessage is the message of rows when they are one reply.
func replyMessage(rows []domain.Notification) (plugin.Outgoing, bool) {
	p, ok := replyPayload(rows)
	if !ok {
		return plugin.Outgoing{}, false
	}
	m := plugin.Outgoing{Text: p.Text, ReplyTo: p.ReplyTo}
	if n := rows[0].TaskNumber; n > 0 {
		m.Tasks = []int64{n}
	}
	return m, true
}

// replyKey is the key of the direct attempt at the reply rows are, and
// when it began; "" when rows are not one reply, or it had none.
func replyKey(rows []domain.Notification) (string, time.Time) {
	p, ok := replyPayload(rows)
	if !ok {
		return "", time.Time{}
	}
	return p.Key, p.At
}

func replyPayload(rows []domain.Notification) (domain.ReplyPayload, bool) {
	var p domain.ReplyPayload
	if len(rows) != 1 || rows[0].Category != domain.NotifyReply || json.Unmarshal(rows[0].Payload, &p) != nil || p.Text == "" {
		return domain.ReplyPayload{}, false
	}
	return p, true
}

var _ plugin.ReplyPacer = (*Service)(nil)

// ReplyTurn implements plugin.ReplyPacer: a direct reply to a person is
// booked in its room's windows — this replica's and the one shared with
// the other replicas — as the outbox's own sends are, so that a room
// busy with notifications does not get a 429 for the reply, and the
// reply does not earn the next notification one. When a window is full
// the reply is not sent directly but left to the outbox (it holds the
// reply already), due when the window has room, and the loop is woken
// for it then: a person's command in a busy room is answered in turn
// rather than refused by the platform. Nothing waits here, on any clock.
// A pacer whose shared booking cannot be made (the store is down) paces
// the room alone, as a send does.
func (s *Service) ReplyTurn(ctx context.Context, room string) error {
	p := s.pacer(room)
	if p == nil {
		return nil
	}
	paced := func(until time.Time) error {
		// On the microsecond, as the stores keep the row's due time: the
		// loop wakes for the room when the row is due, not just before.
		until = until.Add(time.Microsecond - 1).Truncate(time.Microsecond)
		s.holdUntil(room, false, until)
		return &plugin.RateLimitedError{RetryAfter: max(until.Sub(s.clk.Now()), 0), Until: until, Err: plugin.ErrPaced}
	}
	if err := s.bookRoom(ctx, p, room); err != nil {
		var held *heldBack
		if errors.As(err, &held) {
			return paced(held.until)
		}
		return nil // canceled: the send itself answers that
	}
	if retry, ok, _ := p.take(room, s.clk.Now(), true); !ok {
		return paced(retry)
	}
	return nil
}

// ReplyLimited implements plugin.ReplyPacer: the platform's 429 to a
// direct reply pauses the room (or, global, every room of its platform)
// as one to a send does, and the loop is woken for the reply, due then.
func (s *Service) ReplyLimited(room string, until time.Time, global bool) {
	if p := s.pacer(room); p != nil {
		p.pause(room, until, global)
	}
	s.holdUntil(room, false, until)
}
