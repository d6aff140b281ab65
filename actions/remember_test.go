package actions_test

import (
	"strings"
	"testing"

	"github.com/taskloom/taskloom/internal/testkit/teststore"
)

// TestHelpIsNotRemembered: the bot's help, shown to the person who asked
// (an ephemeral reply), is not kept as a memory, so it neither fills the
// Memory tab nor comes back in the chat model's conversation each time
// someone asks; the person's own message is kept, and a reply the room
// saw (the queue) is too. A person wants the room's memory to hold what
// was said in the room, not the same command list again and again.
func TestHelpIsNotRemembered(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		k := newChat(t, open)
		k.expect("ann", "help", "Commands")
		k.expect("ann", "list tasks", "Task Queue")
		mems, err := k.store.RecentMemories(k.ctx, "discord:C1", 10)
		if err != nil {
			t.Fatal(err)
		}
		var said []string
		for _, m := range mems {
			if m.FromBot && strings.Contains(m.Text, "Commands") {
				t.Errorf("the help was remembered: %q", m.Text)
			}
			said = append(said, m.Text)
		}
		if len(mems) != 3 || !strings.Contains(strings.Join(said, "\n"), "Task Queue") {
			t.Errorf("memories of the room: %q; want the two messages and the queue", said)
		}
	})
}
