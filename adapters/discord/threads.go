package discord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// Task threads (TASKLOOM_DISCORD_THREADS, docs/discord.md, docs/slack.md): a task created in
// a guild text channel gets a thread of its own, started from the bot's
// acknowledgement, and moves there (Store.MoveTask): its room becomes
// "discord:<channel>:<thread>", so its progress, questions, approvals and
// completion go to the thread, and a message there that addresses the bot
// is read as an answer to the task waiting in it. When the thread cannot
// be made (a DM, a channel that is a thread already, a missing
// permission), the task stays in the channel and one log line says why.

const (
	// maxThreadName is Discord's limit on a thread's name.
	maxThreadName = 100
	// threadArchiveAfter is how long, in minutes, a task's thread stays in
	// the channel list after its last message: a week, Discord's longest,
	// since a task may wait that long for an answer. A message to an
	// archived thread unarchives it.
	threadArchiveAfter = 10080
)

// createsTasks are the actions whose success creates a task (its number in
// the result) in the message's room.
var createsTasks = []string{actions.CreateTask{}.Info().Name, actions.RetryTask{}.Info().Name}

// noteCreated remembers which message created which task, so the reply
// that acknowledges it can start the task's thread. The runtime emits
// ACTION_COMPLETED before the reply is sent.
func (a *Adapter) noteCreated(_ context.Context, ev plugin.Event) {
	if !a.opts.Threads || ev.Message == nil || ev.Message.Platform != Name || ev.Message.ID == "" ||
		ev.Result == nil || !ev.Result.Success || ev.Result.TaskNumber <= 0 || ev.Err != nil {
		return
	}
	for _, name := range createsTasks {
		if ev.Action == name {
			a.mu.Lock()
			a.created[ev.Message.ID] = ev.Result.TaskNumber
			a.mu.Unlock()
		}
	}
}

// takeCreated returns and forgets the task the message created, 0 if none.
func (a *Adapter) takeCreated(messageID string) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.created[messageID]
	delete(a.created, messageID)
	return n
}

// acknowledged is told that the reply r to a message of room (a DM's
// when dm) went out. When the reply acknowledges the task the message
// created, the task gets its thread. ack returns the ID of the reply's
// first message (it may have to ask Discord).
func (a *Adapter) acknowledged(ctx context.Context, messageID string, r plugin.Response, room string, dm bool, ack func() (string, error)) {
	n := a.takeCreated(messageID)
	if n == 0 || n != r.TaskNumber {
		return
	}
	log := a.log.With("task", n, "room", room)
	channel, thread := splitRoom(room)
	switch {
	case dm:
		log.Info("the task stays where it was created: Discord has no threads in DMs")
		return
	case thread != "" || a.inThread(room):
		log.Info("the task stays where it was created: that is a thread already")
		return
	case r.Ephemeral:
		log.Info("the task stays in the channel: its acknowledgement is seen only by its creator, so no thread can start from it")
		return
	}
	id, err := ack()
	if err != nil {
		log.Warn("the task stays in the channel: cannot find its acknowledgement to start a thread from", "err", err)
		return
	}
	a.startTaskThread(ctx, n, channel, id, log)
}

// startTaskThread starts the thread of task n from its acknowledgement,
// message ackID in channel, and moves the task there.
func (a *Adapter) startTaskThread(ctx context.Context, n int64, channel, ackID string, log *slog.Logger) {
	st := a.rt.Store()
	t, err := st.GetTask(ctx, n)
	if err != nil {
		log.Warn("the task stays in the channel: cannot read it", "err", err)
		return
	}
	if t.RoomID != Name+":"+channel {
		log.Info("the task stays where it is: it has moved on already", "now", t.RoomID)
		return
	}
	th, err := a.sess.MessageThreadStartComplex(channel, ackID, &discordgo.ThreadStart{
		Name: threadName(t), AutoArchiveDuration: threadArchiveAfter,
	}, discordgo.WithContext(ctx))
	if err != nil {
		log.Warn("the task stays in the channel: Discord refused its thread", "reason", threadRefusal(err), "err", err)
		return
	}
	// The state keeps a copy: the THREAD_CREATE the gateway sends too is
	// written over the channel the state holds, in place, on discordgo's
	// event goroutine (State.ChannelAdd).
	kept := *th
	if err := a.sess.State.ChannelAdd(&kept); err != nil {
		log.Debug("the state does not keep the thread", "thread", th.ID, "err", err)
	}
	moved, err := st.MoveTask(ctx, n, Name+":"+channel+":"+th.ID, Name, a.clk.Now())
	if err != nil {
		log.Warn("the task stays in the channel: its thread was started but the task could not move to it", "thread", th.ID, "err", err)
		return
	}
	a.rt.Emit(ctx, plugin.Event{Type: plugin.TaskChanged, Task: &moved})
	log.Info("the task moved to its thread", "thread", th.ID)
}

// threadName is "#N <name>", cut to Discord's 100 characters, on one line.
func threadName(t domain.Task) string {
	name := fmt.Sprintf("#%d %s", t.Number, strings.Join(strings.Fields(t.Name), " "))
	if utf8.RuneCountInString(name) <= maxThreadName {
		return name
	}
	r := []rune(name)
	return strings.TrimSpace(string(r[:maxThreadName-1])) + "…"
}

// threadRefusal says in words why Discord would not start a thread.
func threadRefusal(err error) string {
	var re *discordgo.RESTError
	if !errors.As(err, &re) || re.Message == nil {
		return "the request failed"
	}
	switch re.Message.Code {
	case discordgo.ErrCodeMissingPermissions, discordgo.ErrCodeMissingAccess:
		return "the bot may not create public threads in this channel (Create Public Threads)"
	case discordgo.ErrCodeCannotExecuteActionOnThisChannelType:
		return "this kind of channel has no threads"
	case discordgo.ErrCodeThreadAlreadyCreatedForThisMessage:
		return "the acknowledgement has a thread already"
	}
	return re.Message.Message
}

// splitRoom returns the channel of a Discord room and, for a thread's
// room ("discord:<channel>:<thread>"), the thread.
func splitRoom(room string) (channel, thread string) {
	rest, _ := strings.CutPrefix(room, Name+":")
	channel, thread, _ = strings.Cut(rest, ":")
	return channel, thread
}

// roomOf names the room of a channel of a guild: "discord:<channel>";
// for a public or announcement thread, which everyone who reads its
// channel reads, "discord:<parent>:<thread>", in the channel's scope; for
// a private thread, read by its members only, "discord:<thread>", a scope
// of its own (domain.ThreadRoom), so what is said there is never recalled
// in the channel. The channel comes from the gateway's state (GUILD_CREATE
// lists the guild's channels and the active threads the bot may see;
// THREAD_CREATE adds new ones), or else from the REST API, once. When
// neither tells, the channel is a room of its own: were it a private
// thread, its words stay in it.
func (a *Adapter) roomOf(ctx context.Context, channelID, guildID string) string {
	if guildID == "" {
		return Name + ":" + channelID
	}
	var (
		kind   discordgo.ChannelType
		parent string
	)
	if ch, err := a.sess.State.Channel(channelID); err == nil {
		// The state's channels are written over in place by the gateway's
		// events (State.ChannelAdd): read under the state's lock.
		a.sess.State.RLock()
		kind, parent = ch.Type, ch.ParentID
		a.sess.State.RUnlock()
	} else {
		ch, err := a.sess.Channel(channelID, discordgo.WithContext(ctx))
		if err != nil {
			a.log.Warn("cannot tell whether a channel is a thread, nor who reads it; taking it for a room of its own", "channel", channelID, "err", err)
			return Name + ":" + channelID
		}
		kind, parent = ch.Type, ch.ParentID
		kept := *ch // the state's, from now on
		if err := a.sess.State.ChannelAdd(&kept); err != nil {
			a.log.Debug("the state does not keep the channel", "channel", channelID, "err", err)
		}
	}
	if !isThread(kind) || parent == "" {
		return Name + ":" + channelID
	}
	public := kind == discordgo.ChannelTypeGuildPublicThread || kind == discordgo.ChannelTypeGuildNewsThread
	room := domain.ThreadRoom(Name, parent, channelID, public)
	if !public {
		a.adoptPrivate(ctx, parent, channelID, room)
	}
	return room
}

// isThread says whether a channel type is a thread's: public,
// announcement or private.
func isThread(kind discordgo.ChannelType) bool {
	return kind == discordgo.ChannelTypeGuildPublicThread || kind == discordgo.ChannelTypeGuildNewsThread ||
		kind == discordgo.ChannelTypeGuildPrivateThread
}

// inThread says whether a room is a thread's: "discord:<parent>:<thread>",
// or a private thread's "discord:<thread>", which the state knows since
// roomOf named it.
func (a *Adapter) inThread(room string) bool {
	channel, thread := splitRoom(room)
	if thread != "" {
		return true
	}
	ch, err := a.sess.State.Channel(channel)
	if err != nil {
		return false
	}
	a.sess.State.RLock()
	defer a.sess.State.RUnlock()
	return isThread(ch.Type)
}

// taskReportsIn says whether a task reports in a thread's room, so that a
// message there addressing the bot answers it, as a reply would.
func (a *Adapter) taskReportsIn(ctx context.Context, room string) bool {
	if !a.inThread(room) {
		return false
	}
	tasks, err := a.rt.Store().ListTasks(ctx, domain.TaskFilter{RoomID: room, Limit: 1})
	if err != nil {
		a.log.Warn("cannot tell whether a thread is a task's", "room", room, "err", err)
		return false
	}
	return len(tasks) > 0
}
