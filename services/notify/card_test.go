package notify_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/discord"
	"github.com/taskloom/taskloom/adapters/slack"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit/discordfake"
	"github.com/taskloom/taskloom/internal/testkit/slackfake"
	"github.com/taskloom/taskloom/internal/testkit/teststore"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/services/notify"
)

// Both chat adapters edit task cards.
var (
	_ notify.Editor = (*discord.Adapter)(nil)
	_ notify.Editor = (*slack.Adapter)(nil)
)

// cardPlatform is a chat adapter as task cards use it.
type cardPlatform interface {
	notify.OnceSender
	notify.Editor
}

// posted is a message the bot posted in a room, as the fake shows it.
type posted struct {
	id, text string
	edits    int
	deleted  bool
	buttons  []string // custom IDs (Discord) or action IDs (Slack)
}

// cardChat is a room on a fake chat platform, with the real adapter.
type cardChat struct {
	name, room string
	adapter    func(t *testing.T, rt *plugin.Runtime) cardPlatform
	// posts are the bot's messages in the room, deleted ones included.
	posts func() []posted
	// remove deletes a message as a person in the chat client would.
	remove func(id string)
	// failEdit makes the next edit of id fail as a passing server error
	// does; rateLimitEdit makes it meet a rate limit and returns how long
	// the outbox waits before it tries again.
	failEdit      func(id string)
	rateLimitEdit func(id string) time.Duration
	// edits counts the edit requests made.
	edits func() int
	// failPosts makes the platform answer the room's new messages with a
	// 500 until the fake clock reaches until.
	failPosts func(until time.Time)
}

const threadID = "1300000000000000030"

// cardChats starts, on clk's time, a fake Discord for a room in a
// channel and one for a room in a thread, and a fake Slack for a channel
// and one for a thread: a fake each, as two deployments of Taskloom do
// not share a bot (their delivery keys, made from notification IDs,
// would meet in one bot's nonces).
func cardChats(t *testing.T, clk *clock.Fake) []cardChat {
	discordChat := func(name string, thread bool) cardChat {
		dc := discordfake.New(t, discordfake.WithNow(clk.Now),
			discordfake.WithGuild(discordfake.Guild{ID: guildID, ChannelIDs: []string{channelID}}))
		channel, room := channelID, "discord:"+channelID
		if thread {
			dc.AddThread(threadID, channelID, "1300000000000000099", "#1 Build auth")
			channel, room = threadID, room+":"+threadID
		}
		return cardChat{
			name: name, room: room,
			adapter: func(t *testing.T, rt *plugin.Runtime) cardPlatform {
				ad, err := discord.New(discord.Options{Token: dc.Token(), APIURL: dc.URL(), Runtime: rt})
				if err != nil {
					t.Fatal(err)
				}
				return ad
			},
			posts: func() []posted {
				var out []posted
				for _, m := range dc.Messages(channel) {
					out = append(out, posted{id: m.ID, text: m.Content, edits: m.Edits, deleted: m.Deleted, buttons: m.CustomIDs()})
				}
				return out
			},
			remove: func(id string) {
				if !dc.DeleteMessage(id) {
					t.Fatalf("no message %s to delete", id)
				}
			},
			failEdit: func(id string) {
				dc.FailNext("PATCH", "/channels/"+channel+"/messages/"+id, 1, http.StatusInternalServerError)
			},
			// discordgo keeps the bucket shut for Retry-After on the
			// wall clock: a short one, which the outbox waits at least a
			// second for.
			rateLimitEdit: func(id string) time.Duration {
				dc.RateLimitNext("PATCH", "/channels/"+channel+"/messages/"+id, 1, time.Millisecond, false)
				return time.Second
			},
			edits: func() int { return len(dc.CallsTo("PATCH", "/channels/"+channel+"/messages/")) },
			failPosts: func(until time.Time) {
				dc.FailUntil(http.MethodPost, "/channels/"+channel+"/messages", until, http.StatusInternalServerError)
			},
		}
	}
	slackChat := func(name string, thread bool) cardChat {
		sl := slackfake.New(t, slackfake.WithNow(clk.Now))
		room, threadTS := "slack:C1", ""
		if thread {
			threadTS = sl.TS() // a person's message the bot answers in
			room += ":" + threadTS
		}
		return cardChat{
			name: name, room: room,
			adapter: func(t *testing.T, rt *plugin.Runtime) cardPlatform {
				ad, err := slack.New(slack.Options{BotToken: sl.BotToken(), SigningSecret: sl.SigningSecret(), APIURL: sl.APIURL(), Runtime: rt})
				if err != nil {
					t.Fatal(err)
				}
				return ad
			},
			posts: func() []posted {
				var out []posted
				for _, m := range sl.Messages() {
					if m.Kind != slackfake.KindPost || m.Channel != "C1" || m.ThreadTS != threadTS {
						continue
					}
					p := posted{id: m.TS, text: m.Text, edits: m.Edits, deleted: m.Deleted}
					for _, b := range m.Blocks {
						for _, e := range b.Elements {
							if e.ActionID != "" {
								p.buttons = append(p.buttons, e.ActionID)
							}
						}
					}
					out = append(out, p)
				}
				return out
			},
			remove: func(ts string) {
				if !sl.DeleteMessage("C1", ts) {
					t.Fatalf("no message %s to delete", ts)
				}
			},
			failEdit: func(string) { sl.FailNext("chat.update", "internal_error") },
			rateLimitEdit: func(string) time.Duration {
				sl.RateLimitNext("chat.update", 3*time.Second)
				return 3 * time.Second
			},
			edits: func() int { return len(sl.CallsTo("chat.update")) },
			failPosts: func(until time.Time) {
				sl.FailUntil("chat.postMessage", until, http.StatusInternalServerError, "internal_error")
			},
		}
	}
	return []cardChat{
		discordChat("discord", false),
		discordChat("discord thread", true),
		slackChat("slack", false),
		slackChat("slack thread", true),
	}
}

// cardFixture is a notification service with task cards on c's platform.
func cardFixture(t *testing.T, st domain.Store, owner string, clk *clock.Fake, platform func(rt *plugin.Runtime) plugin.Platform) *fixture {
	return newFixture(t, st, owner, func(su *setup) {
		su.clk = clk
		su.platforms = func(rt *plugin.Runtime) []plugin.Platform { return []plugin.Platform{platform(rt)} }
		su.opts = func(o *notify.Options) { o.Style = notify.StyleCard }
	})
}

func live(ps []posted) []posted {
	var out []posted
	for _, p := range ps {
		if !p.deleted {
			out = append(out, p)
		}
	}
	return out
}

func mustContain(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s: want %q in\n%s", what, w, got)
		}
	}
}

func cardOf(t *testing.T, st domain.Store, room string, task int64) domain.TaskCard {
	t.Helper()
	c, err := st.TaskCard(t.Context(), room, task)
	if err != nil {
		t.Fatalf("TaskCard(%s, #%d): %v", room, task, err)
	}
	return c
}

func noPending(t *testing.T, st domain.Store) {
	t.Helper()
	if n, err := st.Pending(t.Context()); err != nil || n != 0 {
		t.Fatalf("pending = %d, %v; want every notification delivered", n, err)
	}
}

// TestCardsAreEditedInPlace: with task cards, three flushes with progress
// make one message, edited twice to show where the task is; its
// completion posts the terminal message at once and gives the card its
// final state, without buttons.
func TestCardsAreEditedInPlace(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		clk := clock.NewFake(t0)
		for _, c := range cardChats(t, clk) {
			t.Run(c.name, func(t *testing.T) {
				st := open(t)
				f := cardFixture(t, st, "a", clk, func(rt *plugin.Runtime) plugin.Platform { return c.adapter(t, rt) })
				n := f.create(c.room, "Build auth").Number
				for _, p := range []int{20, 45, 70} {
					f.iterate(n, p, domain.VerdictContinue, true)
					if got := f.flush(); got != 1 {
						t.Fatalf("flush at %d%% delivered %d", p, got)
					}
					clk.Advance(notify.DefaultInterval)
				}
				ps := c.posts()
				if len(ps) != 1 || ps[0].edits != 2 {
					t.Fatalf("posts = %+v; want one card edited twice", ps)
				}
				card := ps[0]
				mustContain(t, "the card", card.text, `📋 Task #1 "Build auth"`, "[███████░░░] 70%  Running", "Iteration: 3",
					"Last action: `write_file part70.go` ✓")
				if strings.Contains(card.text, "→") || len(card.buttons) == 0 {
					t.Errorf("the card shows a delta or has no buttons: %+v", card)
				}
				if got := cardOf(t, st, c.room, n); got.MessageID != card.id {
					t.Errorf("the store names %s as the card; the room has %s", got.MessageID, card.id)
				}

				f.iterate(n, 100, domain.VerdictDone, true)
				if got, err := f.svc.FlushUrgent(f.ctx); err != nil || got != 1 {
					t.Fatalf("urgent flush = %d, %v; want the room served", got, err)
				}
				ps = c.posts()
				if len(ps) != 2 || ps[0].id != card.id || ps[0].edits != 3 {
					t.Fatalf("posts after completion = %+v; want the card edited once more, then the completion", ps)
				}
				mustContain(t, "the final card", ps[0].text, "[██████████] 100%  Completed", "Iteration: 4")
				if len(ps[0].buttons) != 0 {
					t.Errorf("the final card has buttons %v", ps[0].buttons)
				}
				mustContain(t, "the completion", ps[1].text, `✅ Task #1 "Build auth" completed!`, "Total steps: 4")
				noPending(t, st)
				if f.flush() != 0 || len(c.posts()) != 2 {
					t.Error("a flush with nothing new changed the room")
				}
			})
		}
	})
}

// TestDeletedCardIsPostedAgain: a card someone deleted is posted again at
// the next flush, once, and later edits go to the new card.
func TestDeletedCardIsPostedAgain(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		clk := clock.NewFake(t0)
		for _, c := range cardChats(t, clk) {
			t.Run(c.name, func(t *testing.T) {
				st := open(t)
				f := cardFixture(t, st, "a", clk, func(rt *plugin.Runtime) plugin.Platform { return c.adapter(t, rt) })
				n := f.create(c.room, "Build auth").Number
				f.iterate(n, 10, domain.VerdictContinue, true)
				f.flush()
				first := c.posts()[0]
				c.remove(first.id)

				f.iterate(n, 30, domain.VerdictContinue, true)
				if got := f.flush(); got != 1 {
					t.Fatalf("flush after the deletion delivered %d", got)
				}
				ps := live(c.posts())
				if len(ps) != 1 || ps[0].id == first.id || ps[0].edits != 0 {
					t.Fatalf("live posts = %+v; want one new card", ps)
				}
				again := ps[0]
				mustContain(t, "the new card", again.text, "30%  Running", "Iteration: 2")
				if got := cardOf(t, st, c.room, n); got.MessageID != again.id {
					t.Fatalf("the store names %s; want the new card %s", got.MessageID, again.id)
				}

				f.iterate(n, 50, domain.VerdictContinue, true)
				f.flush()
				ps = live(c.posts())
				if len(ps) != 1 || ps[0].id != again.id || ps[0].edits != 1 {
					t.Fatalf("live posts = %+v; want the new card edited once", ps)
				}
				mustContain(t, "the new card", ps[0].text, "50%  Running")
				if all := c.posts(); len(all) != 2 || all[0].edits != 0 {
					t.Errorf("posts = %+v; want the deleted card untouched and one new card", all)
				}
				noPending(t, st)
			})
		}
	})
}

// TestSlackCardTheAppMayNotEditIsPostedAgain: chat.update's
// cant_update_message (and message_not_found) make a new card, as a
// deletion does.
func TestSlackCardTheAppMayNotEditIsPostedAgain(t *testing.T) {
	st := teststore.SQLite(t)
	clk := clock.NewFake(t0)
	sl := slackfake.New(t, slackfake.WithNow(clk.Now))
	f := cardFixture(t, st, "a", clk, func(rt *plugin.Runtime) plugin.Platform {
		ad, err := slack.New(slack.Options{BotToken: sl.BotToken(), SigningSecret: sl.SigningSecret(), APIURL: sl.APIURL(), Runtime: rt})
		if err != nil {
			t.Fatal(err)
		}
		return ad
	})
	n := f.create("slack:C1", "Build auth").Number
	f.iterate(n, 10, domain.VerdictContinue, true)
	f.flush()
	f.iterate(n, 20, domain.VerdictContinue, true)
	sl.FailNext("chat.update", "cant_update_message")
	if got := f.flush(); got != 1 {
		t.Fatalf("flush delivered %d", got)
	}
	ms := sl.Messages()
	if len(ms) != 2 || !strings.Contains(ms[1].Text, "20%") || cardOf(t, st, "slack:C1", n).MessageID != ms[1].TS {
		t.Fatalf("messages = %+v; want a second card, recorded", ms)
	}
}

// crashAfterCard is crashAfterSend on a platform that edits its cards.
type crashAfterCard struct {
	crashAfterSend
	notify.Editor
}

// crashedCardPost makes a task at 10% in c's room and flushes its first
// card in a process that dies once the platform took the post, before
// recording it; it returns that process's fixture and the task.
func crashedCardPost(t *testing.T, st domain.Store, clk *clock.Fake, c cardChat) (*fixture, int64) {
	t.Helper()
	crash := &crashAfterCard{crashAfterSend: crashAfterSend{sent: make(chan struct{})}}
	old := cardFixture(t, st, "old", clk, func(rt *plugin.Runtime) plugin.Platform {
		p := c.adapter(t, rt)
		crash.OnceSender, crash.Editor = p, p
		return crash
	})
	n := old.create(c.room, "Build auth").Number
	old.iterate(n, 10, domain.VerdictContinue, true)
	crashFlush(t, old.svc, crash.sent, "the card's post")
	return old, n
}

// TestCrashBetweenCardPostAndItsRecord: the platform took a task's first
// card and the process died before recording it. The next process finds
// the card's rows with their key after the claim expires and posts under
// the same key: Discord's nonce answers with the card already posted,
// Slack's history has it by its metadata. The room still has one card,
// recorded, and what arrived meanwhile is an edit of it.
func TestCrashBetweenCardPostAndItsRecord(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		clk := clock.NewFake(t0)
		for _, c := range cardChats(t, clk) {
			t.Run(c.name, func(t *testing.T) {
				st := open(t)
				_, n := crashedCardPost(t, st, clk, c)
				if ps := c.posts(); len(ps) != 1 {
					t.Fatalf("before the restart the room has %+v", ps)
				}
				if _, err := st.TaskCard(t.Context(), c.room, n); !errors.Is(err, domain.ErrNotFound) {
					t.Fatalf("the card was recorded before the crash: %v", err)
				}

				clk.Advance(notify.DefaultLease) // the dead process's claim expires
				restarted := cardFixture(t, st, "new", clk, func(rt *plugin.Runtime) plugin.Platform { return c.adapter(t, rt) })
				restarted.iterate(n, 25, domain.VerdictContinue, true)
				if _, err := restarted.svc.Flush(ctxFor(t)); err != nil {
					t.Fatal(err)
				}
				ps := c.posts()
				if len(ps) != 1 || ps[0].edits != 1 {
					t.Fatalf("after the restart the room has %+v; want the one card, edited once", ps)
				}
				mustContain(t, "the card", ps[0].text, "25%  Running", "Iteration: 2")
				if got := cardOf(t, st, c.room, n); got.MessageID != ps[0].id {
					t.Fatalf("the store names %s; the card is %s", got.MessageID, ps[0].id)
				}
				noPending(t, st)
			})
		}
	})
}

// claimStolen is a platform whose card post outlives its claim: once the
// card is out, the lease runs out and another sender (which then dies)
// claims the rows, so the first sender may not record the card.
type claimStolen struct {
	cardPlatform
	st  domain.Store
	clk *clock.Fake
}

func (c *claimStolen) SendOnce(ctx context.Context, room string, m plugin.Outgoing, key string, since time.Time) (plugin.SentMessage, error) {
	out, err := c.cardPlatform.SendOnce(ctx, room, m, key, since)
	if err == nil {
		later := c.clk.Now().Add(notify.DefaultLease + time.Second)
		if r, _, err := c.st.ClaimRoom(ctx, domain.RoomClaim{Owner: "thief", Now: later, Lease: notify.DefaultLease}); err != nil || r != room {
			return out, errors.Join(err, errors.New("the thief claimed nothing"))
		}
	}
	return out, err
}

// TestCardPostedAfterItsClaimWasLost: a sender that posted a card after
// its claim was taken records nothing; whoever sends the rows next finds
// the card by its key and records it: one card.
func TestCardPostedAfterItsClaimWasLost(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		clk := clock.NewFake(t0)
		for _, c := range cardChats(t, clk) {
			t.Run(c.name, func(t *testing.T) {
				st := open(t)
				a := cardFixture(t, st, "a", clk, func(rt *plugin.Runtime) plugin.Platform {
					return &claimStolen{cardPlatform: c.adapter(t, rt), st: st, clk: clk}
				})
				n := a.create(c.room, "Build auth").Number
				a.iterate(n, 10, domain.VerdictContinue, true)
				a.flush()
				if _, err := st.TaskCard(t.Context(), c.room, n); !errors.Is(err, domain.ErrNotFound) {
					t.Fatalf("a sender without its claim recorded the card: %v", err)
				}
				clk.Advance(2*notify.DefaultLease + 2*time.Second) // the thief's claim expires too
				b := cardFixture(t, st, "b", clk, func(rt *plugin.Runtime) plugin.Platform { return c.adapter(t, rt) })
				if got := b.flush(); got != 1 {
					t.Fatalf("b's flush delivered %d", got)
				}
				ps := c.posts()
				if len(ps) != 1 || cardOf(t, st, c.room, n).MessageID != ps[0].id {
					t.Fatalf("posts = %+v; want one card, recorded", ps)
				}
				noPending(t, st)
			})
		}
	})
}

// TestCardEditFailingIsRetried: an edit that fails in passing, or meets a
// rate limit, leaves its rows pending; they are retried after the backoff
// or Retry-After, and the edit lands on the same card.
func TestCardEditFailingIsRetried(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		clk := clock.NewFake(t0)
		for _, c := range cardChats(t, clk) {
			t.Run(c.name, func(t *testing.T) {
				st := open(t)
				f := cardFixture(t, st, "a", clk, func(rt *plugin.Runtime) plugin.Platform { return c.adapter(t, rt) })
				n := f.create(c.room, "Build auth").Number
				f.iterate(n, 10, domain.VerdictContinue, true)
				f.flush()
				card := c.posts()[0]

				f.iterate(n, 30, domain.VerdictContinue, true)
				c.failEdit(card.id)
				if got := f.flush(); got != 0 {
					t.Fatalf("a failed edit counted as %d delivered", got)
				}
				pending := list(t, st, domain.NotificationPending)
				if len(pending) == 0 || pending[0].Attempts != 1 {
					t.Fatalf("after the failed edit, pending = %+v", pending)
				}
				clk.Advance(time.Second)
				if got := f.flush(); got != 1 {
					t.Fatalf("the retry delivered %d", got)
				}
				if ps := c.posts(); len(ps) != 1 || ps[0].edits != 1 || !strings.Contains(ps[0].text, "30%") {
					t.Fatalf("posts after the retry = %+v", ps)
				}

				f.iterate(n, 60, domain.VerdictContinue, true)
				wait := c.rateLimitEdit(card.id)
				f.flush()
				before := c.edits()
				clk.Advance(wait - time.Millisecond)
				if f.flush() != 0 || c.edits() != before {
					t.Fatal("the edit was tried again before Retry-After")
				}
				clk.Advance(time.Millisecond)
				// discordgo also keeps the bucket shut for the 429's
				// Retry-After (1 ms) on the wall clock: an attempt before
				// that is refused at once, and retried a second later.
				delivered := f.flush()
				for i := 0; i < 50 && delivered == 0; i++ {
					clk.Advance(time.Second)
					delivered = f.flush()
				}
				if delivered != 1 {
					t.Fatalf("the edit after Retry-After was not delivered (pending %+v)", list(t, st, domain.NotificationPending))
				}
				ps := c.posts()
				if len(ps) != 1 || ps[0].edits != 2 || !strings.Contains(ps[0].text, "60%") {
					t.Fatalf("posts after the rate limit = %+v", ps)
				}
				noPending(t, st)
			})
		}
	})
}

// TestCardsFallBackToBatchesWithoutEditor: a platform that cannot edit
// gets batched messages whatever the style; an ended task's final card
// row is folded into its terminal message.
func TestCardsFallBackToBatchesWithoutEditor(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		st := open(t)
		f := newFixture(t, st, "a", func(su *setup) { su.opts = func(o *notify.Options) { o.Style = notify.StyleCard } })
		n := f.create("chat:C1", "Build auth").Number
		f.iterate(n, 10, domain.VerdictContinue, true)
		f.flush()
		f.iterate(n, 30, domain.VerdictContinue, true)
		f.flush()
		f.iterate(n, 100, domain.VerdictDone, true)
		if _, err := f.svc.FlushUrgent(f.ctx); err != nil {
			t.Fatal(err)
		}
		msgs := f.out.messages()
		if len(msgs) != 3 || !strings.Contains(msgs[0], "0% → 10%") || !strings.Contains(msgs[1], "10% → 30%") ||
			!strings.Contains(msgs[2], "completed!") {
			t.Fatalf("messages = %q; want two batched messages and the completion", msgs)
		}
		noPending(t, st)
	})
}

// TestTaskEndedWithoutACardGetsNoCard: a task that ends before any card
// was posted gets its terminal message only.
func TestTaskEndedWithoutACardGetsNoCard(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open teststore.Opener) {
		clk := clock.NewFake(t0)
		c := cardChats(t, clk)[0]
		st := open(t)
		f := cardFixture(t, st, "a", clk, func(rt *plugin.Runtime) plugin.Platform { return c.adapter(t, rt) })
		n := f.create(c.room, "Old idea").Number
		if _, err := f.tasks.Cancel(f.ctx, n, "u1"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.FlushUrgent(f.ctx); err != nil {
			t.Fatal(err)
		}
		ps := c.posts()
		if len(ps) != 1 || !strings.Contains(ps[0].text, `🛑 Task #1 "Old idea" canceled`) {
			t.Fatalf("posts = %+v; want the cancellation only", ps)
		}
		if _, err := st.TaskCard(t.Context(), c.room, n); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("a card was recorded: %v", err)
		}
		noPending(t, st)
	})
}

// TestBatchIsTheDefault: without a style, progress goes out in new
// messages and nothing is edited.
func TestBatchIsTheDefault(t *testing.T) {
	st := teststore.SQLite(t)
	clk := clock.NewFake(t0)
	c := cardChats(t, clk)[0]
	f := newFixture(t, st, "a", func(su *setup) {
		su.clk = clk
		su.platforms = func(rt *plugin.Runtime) []plugin.Platform { return []plugin.Platform{c.adapter(t, rt)} }
	})
	n := f.create(c.room, "Build auth").Number
	for _, p := range []int{10, 20} {
		f.iterate(n, p, domain.VerdictContinue, true)
		f.flush()
	}
	if ps := c.posts(); len(ps) != 2 || c.edits() != 0 || !slices.ContainsFunc(ps, func(p posted) bool { return strings.Contains(p.text, "10% → 20%") }) {
		t.Fatalf("posts = %+v, %d edits; want two batched messages", ps, c.edits())
	}
}
