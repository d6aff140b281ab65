package providers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/providers"
)

// BenchmarkChatMemory measures what memory adds to composing a chat
// message's state, on a store holding 10,000 messages over 10 rooms,
// 1,000 facts and 20 documents of 50 KB: the relevant_memory provider
// (two reads and the section) beside recent_messages (one read), the
// baseline every chat already paid for before memory.
func BenchmarkChatMemory(b *testing.B) {
	for _, store := range []struct {
		name string
		open teststore.Opener
	}{{"sqlite", teststore.SQLite}, {"postgres", teststore.Postgres}} {
		b.Run(store.name, func(b *testing.B) {
			ctx := context.Background()
			st := store.open(b)
			words := strings.Fields("deploy staging database queue ingest runbook lunch release build cache metrics alert page owner region frankfurt backup restore token rotate")
			var facts []domain.Fact
			for i := range 10000 {
				text := fmt.Sprintf("message %d about %s and %s, %s", i, words[i%len(words)], words[(i*7)%len(words)], strings.Repeat("more words here ", 5))
				m, _, err := st.SaveMemory(ctx, domain.Memory{Platform: "discord", MessageID: fmt.Sprint(i), Room: fmt.Sprintf("discord:C%d", i%10),
					AuthorID: fmt.Sprintf("U%d", i%50), AuthorName: fmt.Sprintf("user%d", i%50), Text: text, CreatedAt: time.Unix(int64(i), 0)})
				if err != nil {
					b.Fatal(err)
				}
				if i%10 == 0 {
					facts = append(facts, domain.Fact{Room: m.Room, About: "discord:" + m.AuthorID, Text: "fact: " + text, Sources: []int64{m.ID}})
				}
			}
			if _, err := st.SaveFacts(ctx, facts); err != nil {
				b.Fatal(err)
			}
			for i := range 20 {
				var doc strings.Builder
				for doc.Len() < 50000 {
					fmt.Fprintf(&doc, "Section on the %s of the %s. %s\n\n", words[doc.Len()%len(words)], words[(doc.Len()/7)%len(words)], strings.Repeat("Filler prose. ", 20))
				}
				if _, err := st.AddDocument(ctx, domain.Document{Title: fmt.Sprintf("Doc %d", i), CreatedAt: time.Unix(0, 0)}, doc.String()); err != nil {
					b.Fatal(err)
				}
			}
			msg := &plugin.Message{ID: "x", Platform: "discord", Room: "discord:C3", AuthorID: "U9", Text: "which database does staging use for the ingest queue?", MemoryID: 1 << 40}
			recent := providers.RecentMessages{Store: st}
			relevant := providers.RelevantMemory{Store: st, Recaller: &plugin.Recaller{Store: st}}
			b.Run("recent_messages", func(b *testing.B) {
				for b.Loop() {
					if _, err := recent.Get(ctx, msg, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("relevant_memory", func(b *testing.B) {
				for b.Loop() {
					res, err := relevant.Get(ctx, msg, nil)
					if err != nil || res.Text == "" {
						b.Fatal(err, "nothing recalled")
					}
				}
			})
		})
	}
}
