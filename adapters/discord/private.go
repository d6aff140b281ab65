package discord

import (
	"context"

	"github.com/bwmarrin/discordgo"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// maxAdopted bounds how many private threads the adapter remembers having
// adopted; past it, it forgets them all and adopts again, which finds
// nothing left to move.
const maxAdopted = 4096

// adoptPrivate moves what the store keeps under a private thread's former
// name, "discord:<parent>:<thread>" — every thread's room before private
// threads were rooms of their own — to its room: the messages said there,
// the facts learnt there and the knowledge of that room leave the
// channel's scope for the thread's (domain.MemoryStore.MoveRoom), and the
// tasks that have not ended move too, so that they go on recalling the
// thread's words and a mention there answers them. Once per thread while
// the adapter runs; a failure is tried again on the next message.
func (a *Adapter) adoptPrivate(ctx context.Context, parent, thread, room string) {
	a.mu.Lock()
	if a.adopted[thread] {
		a.mu.Unlock()
		return
	}
	if len(a.adopted) >= maxAdopted {
		clear(a.adopted)
	}
	a.adopted[thread] = true
	a.mu.Unlock()

	former := Name + ":" + parent + ":" + thread
	log := a.log.With("thread", thread, "from", former, "to", room)
	retry := func() {
		a.mu.Lock()
		delete(a.adopted, thread)
		a.mu.Unlock()
	}
	st := a.rt.Store()
	msgs, facts, err := st.MoveRoom(ctx, former, room)
	if err != nil {
		log.Warn("cannot move a private thread's memory out of its channel's scope; trying again on its next message", "err", err)
		retry()
		return
	}
	tasks, err := st.ListTasks(ctx, domain.TaskFilter{RoomID: former,
		Statuses: []domain.Status{domain.StatusQueued, domain.StatusRunning, domain.StatusPaused, domain.StatusWaiting}})
	if err != nil {
		log.Warn("cannot list a private thread's tasks to move them to its room; trying again on its next message", "err", err)
		retry()
		return
	}
	n := 0
	for _, t := range tasks {
		moved, err := st.MoveTask(ctx, t.Number, room, Name, a.clk.Now())
		if err != nil {
			log.Warn("a task of a private thread stays under its former room", "task", t.Number, "err", err)
			continue
		}
		n++
		a.rt.Emit(ctx, plugin.Event{Type: plugin.TaskChanged, Task: &moved})
	}
	if msgs > 0 || facts > 0 || n > 0 {
		log.Info("a private thread's memory and tasks moved to a room of its own, out of its channel's scope",
			"messages", msgs, "facts", facts, "tasks", n)
	}
}

// onGuildCreate adopts the private threads among the guild's active
// threads (GUILD_CREATE lists those the bot may see), so what was said in
// them before they were rooms of their own leaves the channel's scope
// without waiting for their next message.
func (a *Adapter) onGuildCreate(_ *discordgo.Session, g *discordgo.GuildCreate) {
	ctx, ok := a.begin()
	if !ok {
		return
	}
	defer a.inflight.Done()
	// The event's guild and threads are the state's, which the gateway's
	// later events write over (State.GuildAdd, ChannelAdd): read them
	// under the state's lock.
	type thread struct{ id, parent string }
	var private []thread
	a.sess.State.RLock()
	for _, th := range g.Threads {
		if th != nil && th.Type == discordgo.ChannelTypeGuildPrivateThread && th.ParentID != "" {
			private = append(private, thread{th.ID, th.ParentID})
		}
	}
	a.sess.State.RUnlock()
	for _, th := range private {
		a.adoptPrivate(ctx, th.parent, th.id, domain.ThreadRoom(Name, th.parent, th.id, false))
	}
}
