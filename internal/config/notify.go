package config

import "strings"

// Notification styles (TASKLOOM_NOTIFY_STYLE, docs/discord.md, docs/slack.md).
const (
	// NotifyBatch sends each room one message of what changed at every
	// flush.
	NotifyBatch = "batch"
	// NotifyCard gives each task one message per room, edited in place
	// at every flush.
	NotifyCard = "card"
)

// notifyStyle reads TASKLOOM_NOTIFY_STYLE: batch (the default) or card.
func (r *reader) notifyStyle(name string) string {
	raw := strings.TrimSpace(r.getenv(name))
	v := strings.ToLower(raw)
	switch v {
	case "":
		return NotifyBatch
	case NotifyBatch, NotifyCard:
		return v
	}
	r.fail(&Error{Var: name, Value: raw, Reason: "want batch or card"})
	return NotifyBatch
}
