package slack

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// onEvent takes an Events API event callback — from Socket Mode or HTTP,
// not yet acknowledged — and says whether to acknowledge it. A message for
// the bot is stored before it is acknowledged (Slack keeps an event until
// then, and delivers it again when it is not acknowledged): onEvent waits
// up to EventStoreWait for it, then handles it in the background. When the
// store has not taken it by then, the event is not acknowledged, and
// Slack's redelivery — to this replica or another — takes it again; its
// last retry (attempt lastRetry) is acknowledged anyway, and the message
// waits for the store in this process as a Discord message does, or is
// answered that nothing was done (plugin.Runtime.Receive). attempt is the
// delivery's retry number, 0 for the first; reason Slack's retry reason.
func (a *Adapter) onEvent(ev slackevents.EventsAPIEvent, attempt int, reason string) bool {
	self, ok := a.identity()
	if !ok {
		a.log.Warn("event before start; ignored")
		return true
	}
	var eventID string
	if cb, isCallback := ev.Data.(*slackevents.EventsAPICallbackEvent); isCallback {
		eventID = cb.EventID
	}
	switch e := ev.InnerEvent.Data.(type) {
	case *slackevents.AppHomeOpenedEvent:
		a.onHomeOpened(ev.TeamID, e)
		return true
	case *slackevents.AssistantThreadStartedEvent:
		a.onAssistantThreadStarted(e)
		return true
	}
	in, ok := inboundFromEvent(ev.InnerEvent.Data, self)
	if !ok {
		a.log.Debug("event ignored", "type", ev.InnerEvent.Type, "event", eventID)
		return true
	}
	in.team = ev.TeamID
	if in.id == "" {
		in.id = eventID
	}
	if attempt > 0 {
		a.log.Info("Slack redelivered an event; it is acted on once", "event", eventID, "message", in.id, "retry", attempt, "reason", reason)
	}
	final := attempt >= lastRetry
	stored := make(chan bool, 1)
	a.goTracked(func() { a.handleChat(in, final, stored) })
	t := a.clk.NewTimer(EventStoreWait)
	defer t.Stop()
	select {
	case ack := <-stored:
		return ack || final
	case <-t.C():
		if !final {
			a.log.Warn("a message was not stored within the ack window; Slack will deliver it again", "message", in.id, "window", EventStoreWait)
		}
		return final
	}
}

// inbound is a chat message for the bot, before the pipeline sees it.
type inbound struct {
	id, team, user string
	channel, ts    string
	thread         string // the thread it was posted in, "" at the top level
	text           string // as Slack wrote it
	dm, mentioned  bool
	// chatter is a channel message not addressed to the bot: a reply in a
	// thread, taken only when a task reports in that thread.
	chatter bool
}

// inboundFromEvent reads an app_mention, a direct message, or a reply in
// a channel thread; anything else — the bot's own or other bots' messages,
// edits, deletions, joins and other subtypes, other channel chatter — is
// not for the bot.
func inboundFromEvent(data any, self identity) (inbound, bool) {
	switch ev := data.(type) {
	case *slackevents.AppMentionEvent:
		if ev.User == "" || ev.User == self.UserID || ev.BotID != "" || ev.Edited != nil {
			return inbound{}, false
		}
		return inbound{
			id: messageID(ev.Channel, ev.TimeStamp), user: ev.User, channel: ev.Channel, ts: ev.TimeStamp,
			thread: threadOf(ev.ThreadTimeStamp, ev.TimeStamp), text: ev.Text, mentioned: true,
			dm: isDMChannel(ev.Channel),
		}, true
	case *slackevents.MessageEvent:
		if ev.User == "" || ev.User == self.UserID || ev.BotID != "" {
			return inbound{}, false
		}
		in := inbound{
			id: messageID(ev.Channel, ev.TimeStamp), user: ev.User, channel: ev.Channel, ts: ev.TimeStamp,
			thread: threadOf(ev.ThreadTimeStamp, ev.TimeStamp), text: ev.Text,
			mentioned: strings.Contains(ev.Text, "<@"+self.UserID),
		}
		switch ev.ChannelType {
		case "im":
			in.dm = true
			return in, ev.SubType == ""
		case "channel", "group":
			// A reply in a thread, which may answer a task's question there
			// (the answer_questions evaluator); a mention of the bot comes
			// as an app_mention too, and is taken from that.
			ok := (ev.SubType == "" || ev.SubType == "thread_broadcast") && in.thread != "" && !in.mentioned
			in.chatter = true
			return in, ok
		}
	}
	return inbound{}, false
}

// messageID names a Slack message: its channel and ts, which Slack keeps
// across retries and redeliveries, and which an app_mention and a message
// event of the same message share.
func messageID(channel, ts string) string {
	if channel == "" || ts == "" {
		return ""
	}
	return channel + ":" + ts
}

// threadOf is the thread a message was posted in: its thread_ts, unless
// that is its own ts (a thread's parent).
func threadOf(threadTS, ts string) string {
	if threadTS == ts {
		return ""
	}
	return threadTS
}

// isDMChannel says whether a channel ID is a direct-message channel.
func isDMChannel(id string) bool { return strings.HasPrefix(id, "D") }

// room is where a message is answered and where the tasks it creates
// report: its thread in a channel (the message's own ts starting one), and
// the conversation itself in a DM unless the message was in a thread.
func (in inbound) room() room {
	switch {
	case in.thread != "":
		return room{Channel: in.channel, Thread: in.thread}
	case in.dm:
		return room{Channel: in.channel}
	}
	return room{Channel: in.channel, Thread: in.ts}
}

// handleChat takes one message: it stores it (plugin.Runtime.Receive),
// says on stored whether to acknowledge its event — true once it is
// stored (or is a redelivery of one stored), false when the store did not
// take it and Slack will deliver it again (not final) — and then runs it
// through the pipeline, answering in its room: ephemerally (to its author
// only) in a channel when the reply is a refusal or help, in the open
// otherwise. What it needs before storing it (whether its thread is a
// task's, its author's name) is bounded so as to fit in Slack's window.
func (a *Adapter) handleChat(in inbound, final bool, stored chan<- bool) {
	ctx := a.base
	r := in.room()
	taskThread := false
	if in.thread != "" {
		var err error
		taskThread, err = a.botReportsIn(ctx, r)
		if err != nil && in.chatter && !final {
			// Whether it is a reply to a task cannot be told: Slack
			// delivers it again.
			stored <- false
			return
		}
	}
	if in.chatter && !taskThread {
		stored <- true
		return // not a thread the bot reports in: none of its business
	}
	self, _ := a.identity()
	lookup, cancel := context.WithTimeout(ctx, userLookupWait)
	msg, known := a.message(lookup, in.id, in.team, in.user, r, plainText(in.text, self.UserID))
	cancel()
	msg.DM, msg.Mentioned = in.dm, in.mentioned
	if in.thread != "" {
		msg.ReplyToID = in.thread
		// Addressing the bot in a task's thread is replying to it; plain
		// chatter there stays unaddressed, for the evaluators.
		msg.ReplyToBot = taskThread && !in.chatter
	}
	opts := plugin.ReceiveOptions{}
	if !final {
		opts = plugin.ReceiveOptions{Wait: EventStoreWait, Redelivered: true}
	}
	rcv, err := a.rt.Receive(ctx, msg, opts)
	switch {
	case rcv == nil:
		stored <- ctx.Err() == nil // a message the store refuses is not taken again
		a.log.Error("storing a Slack message failed", "message", in.id, "room", r.String(), "err", err)
		return
	case errors.Is(err, plugin.ErrNotStored) && !final:
		stored <- false
		return
	}
	stored <- true
	if !known && rcv.Stored() {
		// Who the author is was not known in time: asked again, now
		// that the event is acknowledged.
		info := a.userInfo(ctx, in.user)
		m := rcv.Message()
		m.AuthorName, m.Admin = info.name, info.admin
	}
	reply := func(ctx context.Context, resp plugin.Response) error {
		if resp.Ephemeral && !in.dm {
			return a.retryRateLimited(ctx, func() error { return a.postEphemeral(ctx, r, in.user, resp.Text) })
		}
		return a.replyOnce(ctx, resp, func() error { return a.postReply(ctx, r, resp) })
	}
	if err := rcv.Handle(ctx, reply); err != nil {
		a.log.Error("handling a Slack message failed", "message", in.id, "room", r.String(), "err", err)
	}
}

// postReply posts a reply in the open, in its room, with the buttons of
// the task it is about. With resp.Key its parts carry a notification's
// metadata of that key, as SendOnce's do: when this post fails, the
// outbox sends the reply under the same key, first looking in the room
// for a part this attempt posted after all.
//
// It is booked first with the room's other messages (plugin.ReplyPacer):
// a channel at its limit leaves the reply to the outbox, due when the
// channel has room, rather than earn a 429 for it or for what follows.
func (a *Adapter) postReply(ctx context.Context, r room, resp plugin.Response) error {
	if err := a.rt.ReplyTurn(ctx, r.String()); err != nil {
		return err
	}
	var d *delivery
	if resp.Key != "" {
		d = &delivery{key: resp.Key}
	}
	_, err := a.postTagged(ctx, r, resp.Text, replyTasks(resp), buttons{}, d)
	return err
}

// replyTasks is the task a reply gets buttons for: the one it is about,
// unless it is a refusal or help (ephemeral).
func replyTasks(resp plugin.Response) []int64 {
	if resp.Ephemeral || resp.TaskNumber <= 0 {
		return nil
	}
	return []int64{resp.TaskNumber}
}

// botReportsIn says whether r is a thread a task reports in, so a message
// there is a reply to the bot (an answer to a task's question, say); false
// with the error when the store cannot say.
func (a *Adapter) botReportsIn(ctx context.Context, r room) (bool, error) {
	tasks, err := a.rt.Store().ListTasks(ctx, domain.TaskFilter{RoomID: r.String(), Limit: 1})
	if err != nil {
		a.log.Warn("cannot tell whether a thread is a task's", "room", r.String(), "err", err)
		return false, err
	}
	return len(tasks) > 0, nil
}

// message is the plugin.Message for a person's message, with whether they
// administer the workspace, and whether Slack said who they are.
func (a *Adapter) message(ctx context.Context, id, team, user string, r room, text string) (plugin.Message, bool) {
	info := a.userInfo(ctx, user)
	return plugin.Message{
		ID: id, Platform: Platform, Room: r.String(), WorkspaceID: team,
		AuthorID: user, AuthorName: info.name, Text: text, Admin: info.admin,
	}, !info.fetched.IsZero()
}

// onCommand takes a slash command. It waits up to AckWindow for the
// answer and acknowledges with it (ack is called exactly once, with the
// answer's body or nil); an answer that comes later, and any after the
// first, go to the command's response URL.
func (a *Adapter) onCommand(cmd slackapi.SlashCommand, ack func(body []byte)) {
	self, ok := a.identity()
	if !ok {
		ack(nil)
		return
	}
	if cmd.TriggerID != "" && isBareCreate(plainText(cmd.Text, self.UserID)) {
		a.openCreateModal(cmd, ack)
		return
	}
	r := room{Channel: cmd.ChannelID}
	id := "command:" + cmd.TriggerID
	if cmd.TriggerID == "" {
		id = "" // unnamed: not de-duplicated
	}
	text := strings.TrimSpace("/task " + plainText(cmd.Text, self.UserID))

	var (
		mu      sync.Mutex
		decided bool // whether the ack has gone (or is going) out
	)
	first := make(chan plugin.Response, 1)
	done := make(chan struct{})
	reply := func(ctx context.Context, resp plugin.Response) error {
		mu.Lock()
		if !decided {
			decided = true
			mu.Unlock()
			first <- resp
			return nil
		}
		mu.Unlock()
		return a.retryRateLimited(ctx, func() error { return a.respondOrPost(ctx, cmd, r, resp) })
	}
	a.goTracked(func() {
		defer close(done)
		ctx := a.base
		msg, _ := a.message(ctx, id, cmd.TeamID, cmd.UserID, r, text)
		msg.Command = true
		msg.DM = isDMChannel(cmd.ChannelID) || cmd.ChannelName == "directmessage"
		if err := a.rt.HandleMessage(ctx, msg, reply); err != nil {
			a.log.Error("handling a slash command failed", "command", cmd.Command, "channel", cmd.ChannelID, "err", err)
		}
	})

	t := a.clk.NewTimer(AckWindow)
	defer t.Stop()
	var resp plugin.Response
	select {
	case resp = <-first:
	case <-done:
		mu.Lock()
		decided = true
		mu.Unlock()
		select {
		case resp = <-first:
		default:
			ack(nil) // handled without a word: nothing to show
			return
		}
	case <-t.C():
		mu.Lock()
		late := decided
		decided = true
		mu.Unlock()
		if !late {
			a.log.Info("slash command not answered within the ack window; the answer follows by its response URL", "command", cmd.Command, "window", AckWindow)
			ack(nil)
			return
		}
		resp = <-first
	}
	body, rest, fits := ackBody(resp)
	if !fits {
		ack(nil)
		a.goTracked(func() {
			if err := a.retryRateLimited(a.base, func() error { return a.respondOrPost(a.base, cmd, r, resp) }); err != nil {
				a.log.Error("answering a slash command failed", "command", cmd.Command, "err", err)
			}
		})
		return
	}
	ack(body)
	if len(rest) > 0 {
		a.goTracked(func() {
			if err := a.sendResponses(a.base, cmd.ResponseURL, rest); err != nil {
				a.log.Error("answering a slash command failed", "command", cmd.Command, "err", err)
			}
		})
	}
}

// respondOrPost answers a command through its response URL, or, without
// one, in its channel.
func (a *Adapter) respondOrPost(ctx context.Context, cmd slackapi.SlashCommand, r room, resp plugin.Response) error {
	if cmd.ResponseURL != "" {
		return a.respond(ctx, cmd.ResponseURL, resp)
	}
	if resp.Ephemeral {
		return a.postEphemeral(ctx, r, cmd.UserID, resp.Text)
	}
	_, err := a.post(ctx, r, resp.Text, replyTasks(resp), buttons{})
	return err
}

func (a *Adapter) sendResponses(ctx context.Context, responseURL string, msgs []commandResponse) error {
	for _, m := range msgs {
		err := a.retryRateLimited(ctx, func() error {
			opts := []slackapi.MsgOption{
				slackapi.MsgOptionResponseURL(responseURL, m.ResponseType),
				slackapi.MsgOptionText(m.Text, false),
			}
			if len(m.Blocks) > 0 {
				opts = append(opts, slackapi.MsgOptionBlocks(m.Blocks...))
			}
			_, _, err := a.api.PostMessageContext(ctx, "", opts...)
			if err != nil {
				return apiError("response_url", err)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// staleButton answers a press of an Approve or Deny button whose value
// names no call (a message from before requests carried their id).
func staleButton(value string) string {
	num, _, _ := strings.Cut(value, ":")
	if _, err := strconv.ParseInt(num, 10, 64); err != nil {
		num = "N"
	}
	return "That button is from an older message and names no call; say `status #" + num + "` to see what the task asks now."
}

// onInteraction takes an interaction, already acknowledged: a press of one
// of the task buttons becomes "pause #N" (or resume, cancel) from the
// person who pressed it. A press in the Home tab, which has no channel, is
// answered in the person's direct messages with the app, and is about the
// task as they see it there: a direct-message task of theirs as from their
// direct messages.
func (a *Adapter) onInteraction(cb slackapi.InteractionCallback) {
	if _, ok := a.identity(); !ok || cb.Type != slackapi.InteractionTypeBlockActions {
		return
	}
	home := cb.View.Type == slackapi.VTHomeTab
	channel := cb.Container.ChannelID
	if channel == "" {
		channel = cb.Channel.ID
	}
	thread := cb.Container.ThreadTs
	if thread == "" {
		thread = cb.Message.ThreadTimestamp
	}
	r := room{Channel: channel, Thread: thread}
	for _, act := range cb.ActionCallback.BlockActions {
		text, n, ok := pressText(act.ActionID, act.Value)
		if !ok {
			a.log.Debug("interaction ignored", "action", act.ActionID, "value", act.Value)
			if (act.ActionID == ActionApprove || act.ActionID == ActionDeny) && !home {
				a.goTracked(func() {
					if err := a.postEphemeral(a.base, r, cb.User.ID, staleButton(act.Value)); err != nil {
						a.log.Warn("cannot answer an old approval button", "err", err)
					}
				})
			}
			continue
		}
		id := "action:" + cb.TriggerID + ":" + act.ActionID
		if cb.TriggerID == "" {
			id = "action:" + cb.User.ID + ":" + act.ActionTs + ":" + act.ActionID
		}
		a.goTracked(func() {
			ctx := a.base
			r, dm := r, isDMChannel(channel)
			if home {
				var err error
				if r, err = a.homeRoom(ctx, cb.User.ID); err != nil {
					a.log.Error("cannot answer a press in the Home tab", "user", cb.User.ID, "task", n, "err", err)
					return
				}
				t, err := a.rt.Store().GetTask(ctx, n)
				dm = err == nil && t.WorkspaceID == dmWorkspace(cb.User.ID)
			}
			msg, _ := a.message(ctx, id, cb.Team.ID, cb.User.ID, r, text)
			msg.Command = true
			msg.DM = dm
			if msg.AuthorName == "" {
				msg.AuthorName = cb.User.Name
			}
			reply := func(ctx context.Context, resp plugin.Response) error {
				if resp.Ephemeral && !home {
					return a.retryRateLimited(ctx, func() error { return a.postEphemeral(ctx, r, cb.User.ID, resp.Text) })
				}
				return a.replyOnce(ctx, resp, func() error { return a.postReply(ctx, r, resp) })
			}
			if err := a.rt.HandleMessage(ctx, msg, reply); err != nil {
				a.log.Error("handling a button press failed", "action", act.ActionID, "task", n, "err", err)
			}
		})
	}
}

// userInfo is what users.info says about a person.
type userInfo struct {
	name    string
	admin   bool
	fetched time.Time
}

// userInfo returns a person's name and whether they are a workspace admin
// or owner, from a cache refreshed after AdminTTL. When Slack cannot say,
// they are not an admin.
func (a *Adapter) userInfo(ctx context.Context, id string) userInfo {
	now := a.clk.Now()
	a.mu.Lock()
	cached, ok := a.users[id]
	a.mu.Unlock()
	if ok && now.Sub(cached.fetched) < AdminTTL {
		return cached
	}
	u, err := a.api.GetUserInfoContext(ctx, id)
	if err != nil {
		a.log.Warn("users.info failed; treating the user as no admin", "user", id, "err", apiError("users.info", err))
		return userInfo{}
	}
	name := u.Profile.DisplayName
	if name == "" {
		name = u.Name
	}
	info := userInfo{name: name, admin: u.IsAdmin || u.IsOwner || u.IsPrimaryOwner, fetched: now}
	a.mu.Lock()
	a.users[id] = info
	a.mu.Unlock()
	return info
}

// Slack's markup in message text: <target|label> and <target>.
var reMarkup = regexp.MustCompile(`<([^<>|]*)(?:\|([^<>]*))?>`)

// plainText turns message text from Slack's markup into what the person
// typed: the bot's own mention dropped, links to their address (or label,
// for mailto:), <!channel> and the like to "@channel", user groups and
// channels to their labels (user mentions stay <@U…>), and &amp; &lt; &gt;
// decoded.
func plainText(s, botUserID string) string {
	s = reMarkup.ReplaceAllStringFunc(s, func(m string) string {
		sm := reMarkup.FindStringSubmatch(m)
		target, label := sm[1], sm[2]
		switch {
		case botUserID != "" && target == "@"+botUserID:
			return ""
		case strings.HasPrefix(target, "http://"), strings.HasPrefix(target, "https://"):
			return target
		case label != "":
			return label
		case strings.HasPrefix(target, "!"):
			word, _, _ := strings.Cut(target[1:], "^")
			return "@" + word
		}
		return m
	})
	s = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
	return strings.TrimSpace(s)
}
