package notify

import (
	"encoding/json"
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
