package evaluators

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/plugin"
	"github.com/taskloom/taskloom/prompts"
)

// Defaults of the facts evaluator (docs/memory.md).
const (
	// FactsQuiet is how long a room stays quiet before its new messages
	// are read for facts.
	FactsQuiet = time.Minute
	// FactsEvery is how many new messages are read for facts without
	// waiting for quiet.
	FactsEvery = 10
	// FactsBatch is the most messages one request for facts carries.
	FactsBatch = 50
	// FactsAttempts is how many times one batch is asked about before it
	// is passed over: a model that keeps failing on it (down, wrong,
	// answering garbage) is not asked forever.
	FactsAttempts = 3
	// maxFactsPerBatch bounds what one answer may store.
	maxFactsPerBatch = 20
)

// Facts draws durable facts ("the staging database is ORCA-7 in
// Frankfurt") from the rooms' conversations and stores them
// (domain.MemoryStore.SaveFacts), each with its room, the messages it comes
// from and the person it is about, for recall to find later. It is an
// evaluator that notes every message, and a service that asks the model
// once a room has been quiet for Quiet, or has Every new messages.
//
// What it has not yet read it reads from the store (MemoriesAfter), not
// from memory of its own, so a message deleted by `forget me` before its
// turn is never read. A failed request (model down, wrong, an answer that
// is not the JSON asked for) is logged and the messages are kept for the
// next attempt, after a pause that doubles each time; after Attempts
// failures on the same batch it is passed over, so nothing loops.
//
// Each replica reads the rooms whose messages it handled, from the first
// such message on: two replicas sharing a room may both read a message,
// and SaveFacts stores a fact they both draw once.
type Facts struct {
	Runtime *plugin.Runtime
	// Quiet, Every and Batch override FactsQuiet, FactsEvery and
	// FactsBatch.
	Quiet time.Duration
	Every int
	Batch int

	mu    sync.Mutex
	rooms map[string]*factsRoom
	wake  chan struct{}
	loop  plugin.Loop
}

// factsRoom is where the evaluator stands in one room.
type factsRoom struct {
	cursor   int64     // the last memory ID read (or passed over)
	pending  int       // messages noted since cursor
	last     time.Time // when the latest was noted
	failures int       // failed attempts on the batch after cursor
	retryAt  time.Time // no attempt before this after a failure
}

var (
	_ plugin.Evaluator = (*Facts)(nil)
	_ plugin.Service   = (*Facts)(nil)
)

func (*Facts) Info() plugin.EvaluatorInfo {
	return plugin.EvaluatorInfo{
		Name:        "facts",
		Description: "Draw durable facts from a room's conversation once it goes quiet, for recall.",
		AlwaysRun:   true,
		Examples:    []string{"the staging database is ORCA-7 in Frankfurt"},
	}
}

func (f *Facts) quiet() time.Duration { return cmpOr(f.Quiet, FactsQuiet) }
func (f *Facts) every() int           { return cmpOr(f.Every, FactsEvery) }
func (f *Facts) batch() int           { return cmpOr(f.Batch, FactsBatch) }

func cmpOr[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Evaluate notes a stored message of a room; the service reads it later.
func (f *Facts) Evaluate(_ context.Context, ev *plugin.Evaluation) error {
	msg := ev.Message
	if msg == nil || msg.MemoryID == 0 || msg.Room == "" {
		return nil
	}
	now := f.Runtime.Clock().Now()
	f.mu.Lock()
	if f.rooms == nil {
		f.rooms = map[string]*factsRoom{}
	}
	r, ok := f.rooms[msg.Room]
	if !ok {
		r = &factsRoom{cursor: msg.MemoryID - 1}
		f.rooms[msg.Room] = r
	}
	r.pending++
	r.last = now
	full := r.pending >= f.every()
	f.mu.Unlock()
	if full || !ok {
		f.nudge()
	}
	return nil
}

func (f *Facts) nudge() {
	f.mu.Lock()
	wake := f.wake
	f.mu.Unlock()
	if wake == nil {
		return
	}
	select {
	case wake <- struct{}{}:
	default:
	}
}

func (f *Facts) Name() string { return "facts" }

// Start runs the loop that reads rooms when they are due.
func (f *Facts) Start(ctx context.Context) error {
	f.mu.Lock()
	f.wake = make(chan struct{}, 1)
	f.mu.Unlock()
	if err := f.loop.Go(ctx, func(ctx context.Context, ready func()) { ready(); f.run(ctx) }); err != nil {
		return fmt.Errorf("start facts: %w", err)
	}
	return nil
}

// Stop ends the loop, waiting for a request under way to give up.
func (f *Facts) Stop(ctx context.Context) error {
	if err := f.loop.Stop(ctx); err != nil {
		return fmt.Errorf("stop facts: %w", err)
	}
	return nil
}

func (f *Facts) run(ctx context.Context) {
	clk := f.Runtime.Clock()
	for {
		due, next := f.due(clk.Now())
		for _, room := range due {
			f.read(ctx, room)
		}
		if len(due) > 0 {
			continue // reading took time: look again
		}
		var timer clock.Timer
		var fire <-chan time.Time
		if !next.IsZero() {
			timer = clk.NewTimer(next.Sub(clk.Now()))
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-f.wake:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// due lists the rooms to read now, and when the next one is due (zero
// for none).
func (f *Facts) due(now time.Time) (rooms []string, next time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for name, r := range f.rooms {
		if r.pending == 0 {
			continue
		}
		at := r.last.Add(f.quiet())
		if r.pending >= f.every() {
			at = r.last
		}
		if r.retryAt.After(at) {
			at = r.retryAt
		}
		if !at.After(now) {
			rooms = append(rooms, name)
		} else if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	slices.Sort(rooms)
	return rooms, next
}

// read asks the model for the facts of one room's messages after its
// cursor, and stores them.
func (f *Facts) read(ctx context.Context, room string) {
	log := f.Runtime.Logger().With("evaluator", "facts", "room", room)
	f.mu.Lock()
	r := f.rooms[room]
	cursor, noted := r.cursor, r.pending
	f.mu.Unlock()

	st := f.Runtime.Store()
	mems, err := st.MemoriesAfter(ctx, room, cursor, f.batch())
	if err != nil {
		f.failed(ctx, room, log, fmt.Errorf("read the messages after %d: %w", cursor, err), false)
		return
	}
	more := len(mems) == f.batch()
	if len(mems) == 0 {
		f.advance(room, cursor, noted, false)
		return
	}
	last := mems[len(mems)-1].ID
	ask := factsAsk(room, mems)
	if len(ask.Messages) == 0 {
		f.advance(room, last, noted, more)
		return
	}
	drawn, err := f.draw(ctx, ask)
	if err != nil {
		f.failed(ctx, room, log, err, true)
		return
	}
	// A source forgotten while the model thought is not stored from:
	// read the batch again and keep the facts all of whose sources are
	// still there. (A forget between this read and the save is the
	// store's to refuse: SaveFacts checks in its transaction.)
	var facts []domain.Fact
	if len(drawn) > 0 {
		again, err := st.MemoriesAfter(ctx, room, cursor, f.batch())
		if err != nil {
			f.failed(ctx, room, log, fmt.Errorf("read the messages after %d again: %w", cursor, err), false)
			return
		}
		facts = storable(room, drawn, again)
	}
	if len(facts) > 0 {
		saved, err := st.SaveFacts(ctx, facts)
		if err != nil {
			f.failed(ctx, room, log, fmt.Errorf("save %d facts: %w", len(facts), err), false)
			return
		}
		log.Info("facts drawn from the conversation", "messages", len(mems), "facts", len(saved))
	}
	f.advance(room, last, noted, more)
}

// factsAsk is the conversation the model is asked about: the messages
// that say something, commands left out (they ask, they state nothing).
func factsAsk(room string, mems []domain.Memory) plugin.FactsAsk {
	ask := plugin.FactsAsk{Room: room}
	people := 0
	for _, m := range mems {
		text := strings.TrimSpace(m.Text)
		if text == "" {
			continue
		}
		if _, isCommand := actions.ParseCommand(text); isCommand && !m.FromBot {
			continue
		}
		if !m.FromBot {
			people++
		}
		ask.Messages = append(ask.Messages, plugin.FactsMessage{ID: m.ID, AuthorID: m.AuthorID, Author: m.AuthorName, FromBot: m.FromBot, Text: clipRunes(text, 4000)})
	}
	if people == 0 {
		ask.Messages = nil // only the bot spoke: nothing to learn
	}
	return ask
}

// draw makes the request for facts and reads its answer.
func (f *Facts) draw(ctx context.Context, ask plugin.FactsAsk) ([]plugin.DrawnFact, error) {
	sys, err := prompts.Render("facts_system.tmpl", map[string]any{"System": f.Runtime.Character().SystemPrompt()})
	if err != nil {
		return nil, err
	}
	user, err := json.Marshal(ask)
	if err != nil {
		return nil, fmt.Errorf("encode the conversation: %w", err)
	}
	resp, err := f.Runtime.UseModel(ctx, plugin.ModelText, plugin.ModelRequest{
		Messages: []plugin.ChatMessage{{Role: plugin.RoleSystem, Content: sys}, {Role: plugin.RoleUser, Content: string(user)}},
		Schema:   &plugin.JSONSchema{Name: plugin.FactsSchemaName, Schema: plugin.FactsSchema, Strict: true},
	})
	if err != nil {
		return nil, fmt.Errorf("ask for facts: %w", err)
	}
	var ans plugin.FactsAnswer
	if err := domain.DecodeJSONObject(resp.Text, &ans); err != nil {
		return nil, fmt.Errorf("the model's facts: %w", err)
	}
	return ans.Facts, nil
}

// storable turns the model's facts into facts to store: sources kept to
// the batch's messages still stored (a fact none of whose sources is
// left is dropped), the person it is about named as memory names people
// ("<platform>:<user id>"). A fact about no one the model names is taken
// to be about the person who said it, so `forget me` takes it with their
// words; one only the bot said is about no one.
func storable(room string, drawn []plugin.DrawnFact, mems []domain.Memory) []domain.Fact {
	byID := map[int64]domain.Memory{}
	authors := map[string]domain.Memory{}
	for _, m := range mems {
		byID[m.ID] = m
		if !m.FromBot {
			authors[m.AuthorID] = m
		}
	}
	var out []domain.Fact
	for _, d := range drawn {
		text := strings.Join(strings.Fields(d.Text), " ")
		if text == "" || utf8.RuneCountInString(text) > domain.MaxFactChars {
			continue
		}
		var sources []int64
		cited := true
		for _, id := range d.Sources {
			if _, ok := byID[id]; !ok {
				cited = false // cites what is not (or no longer) there
			} else if !slices.Contains(sources, id) {
				sources = append(sources, id)
			}
		}
		if !cited || len(sources) == 0 {
			continue
		}
		about := ""
		if m, ok := authorOf(authors, d.About); ok {
			about = m.Platform + ":" + m.AuthorID
		} else if m := byID[sources[0]]; !m.FromBot && m.AuthorID != "" {
			about = m.Platform + ":" + m.AuthorID
		}
		out = append(out, domain.Fact{Room: room, About: about, Text: text, Sources: sources})
		if len(out) == maxFactsPerBatch {
			break
		}
	}
	return out
}

// authorOf finds the author a fact is about as the model named them: by
// author ID, or as memory names people ("discord:U1").
func authorOf(authors map[string]domain.Memory, about string) (domain.Memory, bool) {
	about = strings.TrimSpace(about)
	if m, ok := authors[about]; ok {
		return m, true
	}
	if platform, id, ok := strings.Cut(about, ":"); ok {
		if m, ok := authors[id]; ok && m.Platform == platform {
			return m, true
		}
	}
	return domain.Memory{}, false
}

// advance moves a room's cursor past a batch read (or passed over): the
// noted messages pending when it was read are done; those noted since
// are not. With more after the batch, the room is read again at once. A
// room with none pending is forgotten until its next message, whose ID
// starts its cursor again.
func (f *Facts) advance(room string, cursor int64, noted int, more bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.rooms[room]
	r.cursor, r.failures, r.retryAt = max(r.cursor, cursor), 0, time.Time{}
	r.pending = max(r.pending-noted, 0)
	if more {
		r.pending = max(r.pending, f.every())
	}
	if r.pending == 0 {
		delete(f.rooms, room)
	}
}

// failed logs a failed attempt and keeps the messages for the next one,
// after a pause that doubles with each failure. A batch the model failed
// on FactsAttempts times is passed over.
func (f *Facts) failed(ctx context.Context, room string, log *slog.Logger, err error, model bool) {
	now := f.Runtime.Clock().Now()
	f.mu.Lock()
	r := f.rooms[room]
	r.failures++
	failures := r.failures
	r.retryAt = now.Add(f.quiet() << min(failures-1, 6))
	f.mu.Unlock()
	if model && failures >= FactsAttempts {
		log.Error("no facts drawn; passing the messages over", "attempts", failures, "err", err)
		f.passOver(ctx, room)
		return
	}
	log.Warn("no facts drawn; the messages are kept for the next attempt", "attempt", failures, "err", err)
}

// passOver moves the cursor past the batch the model kept failing on.
func (f *Facts) passOver(ctx context.Context, room string) {
	f.mu.Lock()
	r := f.rooms[room]
	cursor, noted := r.cursor, r.pending
	f.mu.Unlock()
	mems, err := f.Runtime.Store().MemoriesAfter(ctx, room, cursor, f.batch())
	if err != nil || len(mems) == 0 {
		return // the next attempt reads them again
	}
	f.advance(room, mems[len(mems)-1].ID, noted, len(mems) == f.batch())
}

func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
