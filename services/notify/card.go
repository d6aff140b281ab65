package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/render"
	"github.com/taskloom/taskloom/plugin"
)

// Notification styles (TASKLOOM_NOTIFY_STYLE, docs/discord.md, docs/slack.md).
const (
	// StyleBatch sends each room one message of what changed at every
	// flush (docs/chat.md).
	StyleBatch = "batch"
	// StyleCard gives each task one message per room, its card, edited
	// in place at every flush; posts, questions, approvals and terminal
	// messages still go out at once, as with StyleBatch.
	StyleCard = "card"
)

// demoNote labels what the demo model caused.
const demoNote = "\n\n(demo model — set OPENAI_API_KEY or OPENAI_BASE_URL for real work)"

// Editor is a platform that can replace a message it posted: with
// StyleCard, a task's card is posted once (through SendOnce when the
// platform is a OnceSender, under the delivery key of the rows it
// carries) and edited in place from then on. A platform without it gets
// batched messages whatever the style.
//
// An error from Edit that says the message is gone — someone deleted
// it, or the bot may no longer edit it — has a *plugin.MessageGoneError
// in its chain; the card is then posted again and the new message kept.
// *plugin.UndeliverableError and
// *plugin.RateLimitedError mean what they mean for a send.
type Editor interface {
	plugin.Platform
	// Edit replaces the text and buttons of the bot's message messageID
	// in room with m's; m fits one message. Editing twice with the same
	// m leaves the message as once.
	Edit(ctx context.Context, room, messageID string, m plugin.Outgoing) error
}

// messageGone reports whether err says the message to edit is gone (see
// Editor).
func messageGone(err error) bool {
	var g *plugin.MessageGoneError
	return errors.As(err, &g)
}

// cardEditor returns room's platform when its progress goes out as task
// cards: StyleCard, and a platform that can edit.
func (s *Service) cardEditor(room string) (Editor, bool) {
	if s.opts.Style != StyleCard {
		return nil, false
	}
	p, ok := s.rt.Platform(room)
	if !ok {
		return nil, false
	}
	ed, ok := p.(Editor)
	return ed, ok
}

// onCard reports whether a row is shown on its task's card: a task's
// progress, action or error.
func onCard(r domain.Notification) bool {
	switch r.Category {
	case domain.NotifyProgress, domain.NotifyAction, domain.NotifyError:
		return r.TaskNumber > 0
	}
	return false
}

// cardUnit is what one delivery of a room's rows with cards carries: the
// card of task, or, when task is 0, one message as StyleBatch composes
// it.
type cardUnit struct {
	task int64
	rows []domain.Notification
}

// cardUnits splits a room's claimed rows into deliveries. Rows an
// earlier attempt began to send (same key) go out as that attempt sent
// them: a card when they are one task's card rows, otherwise a message.
// Rows no attempt has carried make one message of the posts, questions,
// approvals and terminal rows (first: they are urgent), then one card
// per task.
func cardUnits(rows []domain.Notification) []cardUnit {
	var out []cardUnit
	for _, group := range byMessage(rows) {
		if group[0].DeliveryKey != "" {
			out = append(out, cardUnit{task: cardTask(group), rows: group})
			continue
		}
		var msg []domain.Notification
		var cards []cardUnit
		at := map[int64]int{}
		for _, r := range group {
			if !onCard(r) {
				msg = append(msg, r)
				continue
			}
			i, seen := at[r.TaskNumber]
			if !seen {
				i = len(cards)
				at[r.TaskNumber] = i
				cards = append(cards, cardUnit{task: r.TaskNumber})
			}
			cards[i].rows = append(cards[i].rows, r)
		}
		if len(msg) > 0 {
			out = append(out, cardUnit{rows: msg})
		}
		out = append(out, cards...)
	}
	return out
}

// cardTask is the task whose card rows are, 0 when they are not all card
// rows of one task.
func cardTask(rows []domain.Notification) int64 {
	n := rows[0].TaskNumber
	for _, r := range rows {
		if !onCard(r) || r.TaskNumber != n {
			return 0
		}
	}
	return n
}

// deliverCards delivers a room's rows with task cards (StyleCard): the
// messages as deliverMessage does, each task's card rows as an edit of
// its card.
func (s *Service) deliverCards(ctx context.Context, room string, ed Editor, rows []domain.Notification) (bool, error) {
	sent := false
	var errs []error
	for _, u := range cardUnits(rows) {
		var ok bool
		var err error
		if u.task == 0 {
			ok, err = s.deliverMessage(ctx, room, u.rows)
		} else {
			ok, err = s.deliverCard(ctx, room, ed, u.task, u.rows)
		}
		sent = sent || ok
		if err != nil {
			errs = append(errs, err)
		}
	}
	return sent, errors.Join(errs...)
}

// deliverCard shows task as it is now on its card in room: an edit of
// the card the store names, or, when it has none or the card is gone, a
// new card, posted under the rows' key and recorded with marking them
// sent, in one transaction (MarkCardSent). A crash between the post and
// the record leaves the rows with their key: the next attempt posts
// under the same key, and the platform answers with the card posted
// before (a Discord nonce, Slack metadata in the room's history), which
// is then recorded. An edit is the same whenever it is repeated, so one
// lost to a crash is simply made again. A card is not posted for a task
// that has ended: its terminal message is.
func (s *Service) deliverCard(ctx context.Context, room string, ed Editor, task int64, rows []domain.Notification) (bool, error) {
	ids := idsOf(rows)
	t, err := s.store.GetTask(ctx, task)
	if errors.Is(err, domain.ErrNotFound) {
		return false, s.markSent(ctx, room, ids, nil)
	}
	if err != nil {
		return false, s.failed(ctx, room, rows, fmt.Errorf("task #%d: %w", task, err))
	}
	msg, err := s.cardMessage(ctx, room, t, rows)
	if err != nil {
		return false, s.failed(ctx, room, rows, err)
	}
	shown := []domain.RoomProgress{{Room: room, TaskNumber: task, Progress: t.Progress}}
	platformName := domain.RoomPlatform(room)
	card, err := s.store.TaskCard(ctx, room, task)
	switch {
	case err == nil:
		if err := s.pace(ctx, room, false); err != nil {
			return false, s.failed(ctx, room, rows, err)
		}
		err := s.guarded(ctx, "edit the card in", room, ids, false, func(ctx context.Context) error {
			return ed.Edit(ctx, room, card.MessageID, msg)
		})
		switch {
		case err == nil:
			s.opts.Metrics.NotificationSent(platformName)
			return true, s.markSent(ctx, room, ids, shown)
		case errors.Is(err, errClaimLost):
			s.log.Warn("card edit canceled: its claim was lost", "room", room, "task", task, "err", err)
			return false, nil
		case !messageGone(err):
			s.countFailure(ctx, platformName, err)
			return false, s.failed(ctx, room, rows, fmt.Errorf("card of task #%d: %w", task, err))
		}
		s.log.Info("a task's card is gone; posting it again", "room", room, "task", task, "message", card.MessageID, "err", err)
	case !errors.Is(err, domain.ErrNotFound):
		return false, s.failed(ctx, room, rows, fmt.Errorf("card of task #%d in %s: %w", task, room, err))
	}
	if t.Status.Terminal() {
		return false, s.markSent(ctx, room, ids, shown)
	}
	return s.postCard(ctx, room, ed, task, rows, msg, shown)
}

// postCard posts task's card under the rows' key and records it.
func (s *Service) postCard(ctx context.Context, room string, ed Editor, task int64, rows []domain.Notification, msg plugin.Outgoing, shown []domain.RoomProgress) (bool, error) {
	ids := idsOf(rows)
	platformName := domain.RoomPlatform(room)
	if first, firstShown, again := firstRendering(rows); again {
		// An earlier attempt may have posted the card: post its bytes,
		// which the platform recognises; the next flush edits it.
		msg, shown = first, firstShown
	}
	if err := s.pace(ctx, room, true); err != nil {
		return false, s.failed(ctx, room, rows, err)
	}
	key, since := rows[0].DeliveryKey, firstAttempt(rows)
	if key == "" {
		key = deliveryKey(ids)
	}
	if err := s.store.BeginSend(ctx, s.opts.Owner, ids, key, s.now(), rendering(msg, shown)); err != nil {
		if errors.Is(err, domain.ErrStaleFence) {
			s.log.Warn("another sender took a card's notifications before it was posted", "room", room, "task", task, "err", err)
			return false, nil
		}
		return false, fmt.Errorf("begin posting the card of task #%d to %s: %w", task, room, err)
	}
	out, err := s.send(ctx, ed, room, msg, key, since, ids)
	if err != nil {
		s.countFailure(ctx, platformName, err)
		if errors.Is(err, errClaimLost) {
			s.log.Warn("card post canceled: its claim was lost", "room", room, "task", task, "key", key, "err", err)
			return false, nil
		}
		return false, s.failed(ctx, room, rows, fmt.Errorf("card of task #%d: %w", task, err))
	}
	s.opts.Metrics.NotificationSent(platformName)
	if len(out.IDs) == 0 {
		s.log.Warn("the platform gave no ID for a task's card; it cannot be edited", "room", room, "task", task)
		return true, s.markSent(ctx, room, ids, shown)
	}
	card := domain.TaskCard{Room: room, TaskNumber: task, MessageID: out.IDs[0], UpdatedAt: s.now()}
	if err := s.store.MarkCardSent(ctx, s.opts.Owner, ids, shown, card); err != nil {
		if errors.Is(err, domain.ErrStaleFence) {
			s.log.Warn("card posted after its claim was lost", "room", room, "task", task, "key", key, "err", err)
			return true, nil
		}
		return true, fmt.Errorf("record the card of task #%d in %s: %w", task, room, err)
	}
	return true, nil
}

// markSent marks rows sent, as deliverMessage does: rows another sender
// took meanwhile are its to send.
func (s *Service) markSent(ctx context.Context, room string, ids []int64, shown []domain.RoomProgress) error {
	err := s.store.MarkSent(ctx, s.opts.Owner, ids, shown)
	if errors.Is(err, domain.ErrStaleFence) {
		s.log.Warn("notifications delivered after their claim was lost", "room", room, "err", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("mark notifications of %s sent: %w", room, err)
	}
	return nil
}

// cardSteps is how many of a task's latest steps are read for its last
// action when the rows carry none (its final state, say).
const cardSteps = 5

// cardMessage renders t's card for room: where it is now, its latest
// action and the errors of rows. A task that has not ended gets its
// controls; an ended one's buttons are on its terminal message.
func (s *Service) cardMessage(ctx context.Context, room string, t domain.Task, rows []domain.Notification) (plugin.Outgoing, error) {
	u := render.Update{Task: t}
	for _, r := range rows {
		switch r.Category {
		case domain.NotifyAction:
			var p actionPayload
			if json.Unmarshal(r.Payload, &p) == nil && isAction(p.Step) {
				step := p.Step
				u.LastAction = &step
			}
		case domain.NotifyError:
			var p errorPayload
			if json.Unmarshal(r.Payload, &p) == nil && p.Error != "" {
				u.Errors = append(u.Errors, p.Error)
			}
		}
	}
	if u.LastAction == nil {
		steps, err := s.store.RecentSteps(ctx, t.Number, cardSteps)
		if err != nil {
			return plugin.Outgoing{}, fmt.Errorf("steps of task #%d: %w", t.Number, err)
		}
		for i := len(steps) - 1; i >= 0; i-- {
			if isAction(steps[i]) {
				step := steps[i]
				step.Result = ""
				u.LastAction = &step
				break
			}
		}
	}
	text := render.Card(render.ForPlatform(domain.RoomPlatform(room)), u)
	if s.opts.Demo {
		text += demoNote
	}
	if t.Status.Terminal() {
		return plugin.Outgoing{Text: text}, nil
	}
	return plugin.Outgoing{Text: text, Tasks: []int64{t.Number}}, nil
}

// isAction reports whether a step was an action taken, not a thought or
// an observation of a react task (docs/strategies.md).
func isAction(s domain.Step) bool {
	return s.Action != "" && s.Role != domain.RoleThought && s.Role != domain.RoleObservation
}
