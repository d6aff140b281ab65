package providers

import (
	"context"
	"fmt"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/plugin"
)

// RelevantMemory gives the model what the runtime remembers that bears on
// the message: the best passages of knowledge, facts and earlier messages
// of the room's scope, each with its source, within
// plugin.MemorySectionChars (docs/memory.md). The messages RecentMessages
// shows are left out, so the section spends its room on older ones.
type RelevantMemory struct {
	Store    domain.Store
	Recaller *plugin.Recaller
}

var _ plugin.Provider = RelevantMemory{}

func (RelevantMemory) Info() plugin.ProviderInfo {
	return plugin.ProviderInfo{Name: "relevant_memory", Description: "what is remembered that bears on the message", Position: 30}
}

func (p RelevantMemory) Get(ctx context.Context, msg *plugin.Message, _ *plugin.State) (plugin.ProviderResult, error) {
	if msg == nil || p.Recaller == nil {
		return plugin.ProviderResult{}, nil
	}
	ask := plugin.MemoryAsk{Room: msg.Room, Text: msg.Text, BeforeID: msg.MemoryID}
	if msg.Room != "" && p.Store != nil {
		mems, err := p.Store.RecentMemories(ctx, msg.Room, RecentMessagesLimit+1)
		if err != nil {
			return plugin.ProviderResult{}, fmt.Errorf("relevant memory in %s: %w", msg.Room, err)
		}
		_, ask.Skip = ConversationLines(WithoutMessage(mems, msg), RecentMessagesLimit, RecentMessagesChars)
	}
	text, err := p.Recaller.Section(ctx, ask)
	if err != nil {
		return plugin.ProviderResult{}, err
	}
	return plugin.ProviderResult{Text: text}, nil
}
