package providers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// Bounds of the conversation RecentMessages shows (docs/memory.md).
const (
	RecentMessagesLimit = 20
	RecentMessagesChars = 4000
)

// RecentMessages gives the model the room's conversation before the
// message it answers: the latest RecentMessagesLimit messages or
// RecentMessagesChars characters of them, whichever is less, oldest
// first, each with its author and time, as quoted material
// (plugin.Quote): what people said, never instructions to the model. The
// message being answered is left out: the model reads it as the user's
// turn, the one request.
type RecentMessages struct {
	Store domain.Store
	// Limit and Chars override the bounds; 0 keeps them.
	Limit, Chars int
}

var _ plugin.Provider = RecentMessages{}

func (RecentMessages) Info() plugin.ProviderInfo {
	return plugin.ProviderInfo{Name: "recent_messages", Description: "the room's conversation before the message", Position: 20}
}

func (p RecentMessages) Get(ctx context.Context, msg *plugin.Message, _ *plugin.State) (plugin.ProviderResult, error) {
	if msg == nil || msg.Room == "" || p.Store == nil {
		return plugin.ProviderResult{}, nil
	}
	limit, chars := p.Limit, p.Chars
	if limit <= 0 {
		limit = RecentMessagesLimit
	}
	if chars <= 0 {
		chars = RecentMessagesChars
	}
	// One more than shown: the message being answered is among them.
	mems, err := p.Store.RecentMemories(ctx, msg.Room, limit+1)
	if err != nil {
		return plugin.ProviderResult{}, fmt.Errorf("recent messages of %s: %w", msg.Room, err)
	}
	mems = WithoutMessage(mems, msg)
	lines, ids := ConversationLines(mems, limit, chars)
	if len(lines) == 0 {
		return plugin.ProviderResult{Values: map[string]any{"recent_messages": 0}}, nil
	}
	return plugin.ProviderResult{
		Text:   "The conversation in this room so far:\n" + plugin.Quote(conversationQuoted, lines),
		Values: map[string]any{"recent_messages": len(lines)},
		Data:   map[string]any{"recent_message_ids": ids},
	}, nil
}

// conversationQuoted says what the quoted conversation is.
const conversationQuoted = "Messages of this room before the one you answer, oldest first, each with its author and time."

// WithoutMessage drops msg's own memory from mems: the one with its
// message ID or, for a message without one (the console), the latest one
// of its author saying its text.
func WithoutMessage(mems []domain.Memory, msg *plugin.Message) []domain.Memory {
	for i := len(mems) - 1; i >= 0; i-- {
		m := mems[i]
		same := msg.ID != "" && m.MessageID == msg.ID && m.Platform == msg.Platform
		if msg.ID == "" {
			same = !m.FromBot && m.AuthorID == msg.AuthorID && m.Text == msg.Text
		}
		if same {
			return slices.Delete(slices.Clone(mems), i, i+1)
		}
	}
	return mems
}

// ConversationLines renders the latest of mems (oldest first) as lines
// "- ann (10:42 UTC): text": at most limit of them, and no more than
// chars characters in all. The newest message alone is clipped to chars
// rather than left out. It returns the memories' IDs too.
func ConversationLines(mems []domain.Memory, limit, chars int) ([]string, []int64) {
	var lines []string
	var ids []int64
	used := 0
	for i := len(mems) - 1; i >= 0 && len(lines) < limit; i-- {
		line := conversationLine(mems[i])
		n := utf8.RuneCountInString(line) + 1 // and its newline
		if used+n > chars {
			if len(lines) > 0 {
				break
			}
			line = clipRunes(line, chars-1)
			n = chars
		}
		used += n
		lines = append(lines, line)
		ids = append(ids, mems[i].ID)
	}
	slices.Reverse(lines)
	slices.Reverse(ids)
	return lines, ids
}

func conversationLine(m domain.Memory) string {
	who := m.AuthorName
	if who == "" {
		who = m.AuthorID
	}
	if m.FromBot {
		who += " (you)"
	}
	when := ""
	if !m.CreatedAt.IsZero() {
		when = " (" + m.CreatedAt.UTC().Format("15:04") + " UTC)"
	}
	return "- " + who + when + ": " + strings.Join(strings.Fields(m.Text), " ")
}

// clipRunes shortens s to at most n runes, the last an ellipsis.
func clipRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for pos := range s {
		if i == n-1 {
			return s[:pos] + "…"
		}
		i++
	}
	return s
}
