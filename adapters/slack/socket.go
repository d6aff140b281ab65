package slack

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

// socketLoop is one Socket Mode session: slack-go's client, which connects
// and reconnects, and the loop that reads what it receives.
type socketLoop struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when both the client and the reader have returned
}

func (l *socketLoop) stop() {
	l.cancel()
	<-l.done
}

// startSocket connects over Socket Mode and reads envelopes until stopped.
func (a *Adapter) startSocket() *socketLoop {
	ctx, cancel := context.WithCancel(context.Background())
	client := socketmode.New(a.api, socketmode.OptionLog(slog.NewLogLogger(a.log.Handler(), slog.LevelDebug)))
	l := &socketLoop{cancel: cancel, done: make(chan struct{})}
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		if err := client.RunContext(ctx); err != nil && !errors.Is(err, context.Canceled) {
			// Only a refused token ends it: anything else is retried.
			a.log.Error("Socket Mode stopped; check SLACK_APP_TOKEN (an xapp- token with connections:write)", "err", err)
		}
	}()
	go func() {
		defer close(l.done)
		defer func() { <-ran }()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ran:
				return
			case ev := <-client.Events:
				a.onSocketEvent(ctx, client, ev)
			}
		}
	}()
	return l
}

// onSocketEvent acknowledges what Slack sent — at once, or, for a slash
// command, with its answer when that is ready within AckWindow — and
// hands it on.
func (a *Adapter) onSocketEvent(ctx context.Context, client *socketmode.Client, ev socketmode.Event) {
	ack := func(payload any) {
		if ev.Request == nil {
			return
		}
		if err := client.AckCtx(ctx, ev.Request.EnvelopeID, payload); err != nil {
			a.log.Error("Socket Mode ack failed", "envelope", ev.Request.EnvelopeID, "err", err)
		}
	}
	switch ev.Type {
	case socketmode.EventTypeConnecting:
		a.log.Debug("Socket Mode connecting")
	case socketmode.EventTypeConnected:
		a.log.Info("Socket Mode connected")
	case socketmode.EventTypeConnectionError, socketmode.EventTypeIncomingError, socketmode.EventTypeErrorWriteFailed, socketmode.EventTypeErrorBadMessage:
		a.log.Warn("Socket Mode trouble; slack-go reconnects", "event", ev.Type, "detail", ev.Data)
	case socketmode.EventTypeInvalidAuth:
		a.log.Error("Socket Mode refused the app-level token (SLACK_APP_TOKEN)")
	case socketmode.EventTypeEventsAPI:
		// onEvent stores the event's message before it is acknowledged
		// (and leaves it unacknowledged, for Slack to deliver again, when
		// the store does not take it in time); waiting for that must not
		// hold up other envelopes.
		data, ok := ev.Data.(slackevents.EventsAPIEvent)
		if !ok {
			ack(nil)
			return
		}
		attempt, reason := 0, ""
		if ev.Request != nil {
			attempt, reason = ev.Request.RetryAttempt, ev.Request.RetryReason
		}
		a.goTracked(func() {
			if a.onEvent(data, attempt, reason) {
				ack(nil)
			}
		})
	case socketmode.EventTypeSlashCommand:
		cmd, ok := ev.Data.(slackapi.SlashCommand)
		if !ok {
			ack(nil)
			return
		}
		// Waiting for the answer must not hold up other envelopes.
		a.goTracked(func() {
			a.onCommand(cmd, func(body []byte) {
				if len(body) == 0 {
					ack(nil)
					return
				}
				ack(json.RawMessage(body))
			})
		})
	case socketmode.EventTypeInteractive:
		cb, ok := ev.Data.(slackapi.InteractionCallback)
		if ok && cb.Type == slackapi.InteractionTypeViewSubmission {
			// Its answer, which may be errors for the modal, rides in the
			// ack; waiting for it must not hold up other envelopes.
			a.goTracked(func() {
				a.onViewSubmission(cb, func(body []byte) {
					if len(body) == 0 {
						ack(nil)
						return
					}
					ack(json.RawMessage(body))
				})
			})
			return
		}
		if ok {
			a.onInteraction(cb) // as quick as onEvent
		}
		ack(nil)
	}
}
