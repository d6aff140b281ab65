package slack

import (
	"context"
	"errors"
	"fmt"

	slackapi "github.com/slack-go/slack"

	"github.com/taskloom/taskloom/internal/render"
	"github.com/taskloom/taskloom/plugin"
)

// goneCodes are chat.update's answers for a message that cannot be edited
// any more: deleted, not the app's own, or past the workspace's edit
// window. The card is then posted again.
var goneCodes = map[string]bool{"message_not_found": true, "cant_update_message": true, "edit_window_closed": true}

// Edit replaces the text and blocks of the app's message ts (messageID)
// in room with m's, with the controls of the tasks m is about, through
// chat.update — as a task card is updated (services/notify's Editor). m
// must fit one message. Blocks are always sent, so buttons the new
// message has none of are removed. A rate limit is a
// *plugin.RateLimitedError.
//
// A message that is gone, not the app's, or past the edit window is an
// *plugin.MessageGoneError, after which the card is posted again; a channel
// that is gone or closed to the app is a *plugin.UndeliverableError, as for
// a send.
func (a *Adapter) Edit(ctx context.Context, roomName, messageID string, m plugin.Outgoing) error {
	r, err := parseRoom(roomName)
	if err != nil {
		return fmt.Errorf("slack: edit: %w", err)
	}
	if parts := render.Split(m.Text, render.SlackTextLimit); len(parts) != 1 {
		return fmt.Errorf("slack: edit %s in %s: the text takes %d messages; an edit replaces one", messageID, roomName, len(parts))
	}
	blocks := messageBlocks(m.Text, m.Tasks, buttons{ended: m.Ended, approvals: m.Approvals}, nil)
	_, _, _, err = a.api.UpdateMessageContext(ctx, r.Channel, messageID,
		slackapi.MsgOptionText(m.Text, false),
		slackapi.MsgOptionBlocks(blocks...),
	)
	if err != nil {
		return fmt.Errorf("slack: edit %s in %s: %w", messageID, roomName, editError(apiError("chat.update", err)))
	}
	return nil
}

// editError marks err gone when Slack answered one of goneCodes, and
// otherwise as undeliverable does.
func editError(err error) error {
	var se slackapi.SlackErrorResponse
	if errors.As(err, &se) && goneCodes[se.Err] {
		return &plugin.MessageGoneError{Err: err}
	}
	return undeliverable(err)
}
