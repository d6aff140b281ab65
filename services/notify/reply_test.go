package notify_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
)

// onceRoom records what SendOnce is asked to send.
type onceRoom struct {
	mu   sync.Mutex
	sent []onceSend
}

type onceSend struct {
	msg   plugin.Outgoing
	key   string
	since time.Time
}

func (r *onceRoom) Name() string { return "chat" }
func (r *onceRoom) Send(ctx context.Context, room string, m plugin.Outgoing) (plugin.SentMessage, error) {
	return r.SendOnce(ctx, room, m, "", time.Time{})
}
func (r *onceRoom) SendOnce(_ context.Context, _ string, m plugin.Outgoing, key string, since time.Time) (plugin.SentMessage, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, onceSend{m, key, since})
	return plugin.SentMessage{IDs: []string{"1"}}, nil
}

// A reply to a person goes out at once, alone in its message — not folded
// into the room's other news, which would change what the direct attempt
// posted under its key — with its text as the pipeline wrote it, as an
// answer to the person's message, under the direct attempt's key and
// time, so a platform can find what that attempt posted.
func TestQueuedReplyGoesAloneUnderItsOwnKey(t *testing.T) {
	t.Parallel()
	st := teststore.SQLite(t)
	out := &onceRoom{}
	f := newFixture(t, st, "a", func(su *setup) {
		su.platforms = func(*plugin.Runtime) []plugin.Platform { return []plugin.Platform{out} }
	})
	at := f.clk.Now().Add(-time.Second)
	reply := func(id, text string) {
		t.Helper()
		payload, err := json.Marshal(domain.ReplyPayload{Text: text, ReplyTo: id, Key: "reply:chat:" + id, At: at})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Enqueue(t.Context(), domain.Notification{Room: "chat:1", Category: domain.NotifyReply,
			Payload: payload, CreatedAt: f.clk.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	// At once: the urgent flush takes a room whose only row is a reply.
	reply("m1", "Created *task* #1 <see>")
	if _, err := f.svc.FlushUrgent(t.Context()); err != nil {
		t.Fatal(err)
	}
	out.mu.Lock()
	n := len(out.sent)
	out.mu.Unlock()
	if n != 1 {
		t.Fatalf("the urgent flush sent %d messages, want the reply", n)
	}
	// Alone: a reply and a post pending together go out apart.
	post(t, st, "chat:1", "a post", f.clk.Now())
	reply("m2", "Created task #2")
	if _, err := f.svc.FlushUrgent(t.Context()); err != nil {
		t.Fatal(err)
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	if len(out.sent) != 3 {
		t.Fatalf("sent %+v, want the first reply, then the post and the second reply apart", out.sent)
	}
	first := out.sent[0]
	if first.msg.Text != "Created *task* #1 <see>" || first.msg.ReplyTo != "m1" || first.key != "reply:chat:m1" || !first.since.Equal(at) {
		t.Errorf("reply sent as %+v, want its text whole, answering m1, under its key and time", first)
	}
	for _, s := range out.sent[1:] {
		if s.msg.Text != "Created task #2" && !strings.Contains(s.msg.Text, "a post") || strings.Contains(s.msg.Text, "Created") && s.key != "reply:chat:m2" {
			t.Errorf("sent %+v, want the post and the second reply apart", s)
		}
	}
	if p, err := st.Pending(t.Context()); err != nil || p != 0 {
		t.Errorf("pending = %d, %v", p, err)
	}
}
