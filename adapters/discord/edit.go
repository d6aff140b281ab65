package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/bwmarrin/discordgo"

	"github.com/taskloom/taskloom/plugin"
)

// Edit replaces the text and buttons of the bot's message messageID in
// room — in its thread, for a thread's room — as a task card is updated
// (services/notify's Editor): no mentions, and the controls of the tasks
// m is about (Pause or Resume, and Cancel) or none. m must fit one
// message. A rate limit is a *plugin.RateLimitedError, returned at once
// when discordgo knows the bucket to be exhausted.
//
// A message that is gone (404 Unknown Message) or that the bot may not
// edit (50005) is a *plugin.MessageGoneError, after which the card is
// posted again; a channel that is gone or forbidden is a *plugin.UndeliverableError, as
// for a send.
func (a *Adapter) Edit(ctx context.Context, room, messageID string, m plugin.Outgoing) error {
	channel, err := channelOf(room)
	if err != nil {
		return err
	}
	parts := splitText(m.Text)
	if len(parts) != 1 {
		return fmt.Errorf("discord: edit message %s in %s: the text takes %d messages; an edit replaces one", messageID, room, len(parts))
	}
	// Discord's bucket for edits is the channel's messages route with no
	// message ID, as discordgo keys it.
	if wait := a.bucketWait(discordgo.EndpointChannelMessage(channel, "")); wait > 0 {
		return a.markGlobal(&plugin.RateLimitedError{RetryAfter: wait, Err: errors.New("discord: the channel's rate limit for edits is exhausted")})
	}
	comps := a.controls(ctx, m.Approvals, slices.Concat(m.Tasks, m.Ended))
	if comps == nil {
		comps = []discordgo.MessageComponent{} // an empty list removes the buttons; none would keep them
	}
	content := parts[0]
	_, err = a.sess.ChannelMessageEditComplex(&discordgo.MessageEdit{
		ID: messageID, Channel: channel, Content: &content, Components: &comps, AllowedMentions: noMentions(),
	}, discordgo.WithContext(ctx))
	if err != nil {
		return a.markGlobal(fmt.Errorf("discord: edit message %s in %s: %w", messageID, room, editError(err)))
	}
	return nil
}

// editError classifies an edit's error: a rate limit, the message gone
// (404 Unknown Message; 403 Cannot edit a message authored by another
// user), or what undeliverable makes of it.
func editError(err error) error {
	err = rateLimited(err)
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil && re.Message != nil {
		switch {
		case re.Response.StatusCode == http.StatusNotFound && re.Message.Code == discordgo.ErrCodeUnknownMessage,
			re.Response.StatusCode == http.StatusForbidden && re.Message.Code == discordgo.ErrCodeCannotEditFromAnotherUser:
			return &plugin.MessageGoneError{Err: err}
		}
	}
	return undeliverable(err)
}
