package sqlstore

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/taskloom/taskloom/domain"
)

// TxDB is a DB that can also run several statements in one write
// transaction.
type TxDB interface {
	DB
	// InTx runs fn in one write transaction, whose statements fn runs on
	// the DB it is given, and commits when fn returns nil. fn's error is
	// returned unchanged.
	InTx(ctx context.Context, fn func(DB) error) error
}

// RecallSQL is a dialect's text of the statements of facts, knowledge and
// recall (docs/memory.md). Each Recall statement reads RecallColumns: id,
// room, text, label, extra, rank (higher is better), created_at.
type RecallSQL struct {
	// Match is the dialect's full-text query of terms (at least one): each
	// term quoted, so no text of a user is read as query syntax, and OR-ed.
	Match func(terms []string) string

	// InsertFact: $1 room, $2 scope, $3 about, $4 text, $5 sources (JSON),
	// $6 created_at; returning the id, none when the fact is stored
	// already.
	InsertFact string
	// InsertDocument: $1 title, $2 room, $3 scope, $4 bytes, $5
	// passages, $6 created_at; returning the id. InsertPassage: $1
	// document, $2 its position, $3 scope, $4 text.
	InsertDocument, InsertPassage string
	// Documents: $1 room ("" for every room), newest first:
	// DocumentColumns. DeletePassages, DeleteDocument: $1 document.
	Documents, DeletePassages, DeleteDocument string

	// Holding: $1 a scope ("" for none); one row of three booleans:
	// whether any message, any fact, and any document of the scope or of
	// every room (scope "") is stored.
	Holding string

	// Frequencies by kind: $1 Terms(terms), $2 a cap; each term and in
	// how many rows of the kind it is, counting no further than the cap.
	Frequencies map[string]string
	// Terms is a list parameter of terms.
	Terms func([]string) any

	// Each Recall statement ranks, of the rows matching Match in the
	// scope, the newest candidates only (its last parameter): its cost
	// is bounded however many rows match. Selective runs when Match is of
	// uncommon words, which few rows have; Common when it is of common
	// words, which most rows have (a dialect may read them differently).
	//
	// RecallMessages: $1 Match, $2 scope, $3 the ID below which (0 for
	// any), $4 limit, $5 candidates; label the author's name, extra the
	// author's "<platform>:<id>". RecallFacts: $1 Match, $2 scope, $3
	// limit, $4 candidates; label the person, extra the sources (JSON).
	// RecallPassages: $1 Match, $2 scope (passages of scope "" match every
	// scope), $3 limit, $4 candidates; label the document's title, extra
	// the passage's position.
	RecallMessages, RecallFacts, RecallPassages RecallStatements

	// MemoriesAfter: $1 room, $2 the ID after which, $3 Limit(limit),
	// oldest first. ListMemories: $1 room ("" every room), $2 the ID below
	// which (0 any), $3 Limit(limit), newest first. SearchMemories: $1
	// Match, $2 room ("" every room), $3 the ID below which (0 any), $4
	// Limit(limit), best first. All read MemoryColumns.
	MemoriesAfter, ListMemories, SearchMemories string

	// Forgetting a person (Forget) and the facts saved around it
	// (SaveFacts), in one transaction each:
	//
	// LockPerson: $1 person; held to the transaction's end, so that a
	// Forget and a SaveFacts of facts about the same person run one after
	// the other ("" when the dialect's write transactions are serial
	// anyway). ForgetThrough: the highest memory ID. MarkForgotten: $1
	// person, $2 that ID: the person's forget mark, kept or raised.
	// ForgottenThrough: $1 person; the mark's ID, no row when none.
	// ForgetMessageIDs: $1 platform, $2 author ID; keeps the platform's
	// message IDs of what they wrote, so that a retry is not stored again.
	// ForgetMessages: $1 platform, $2 author ID; returning the ID, scope
	// and text of each deleted. BotMessagesAfter: $1 scope, $2 a memory
	// ID; the bot's messages of the scope after it: id, scope, text.
	// DeleteMemories: $1 List(memory IDs), returning their IDs. ForgetReplies: $1 List(memory IDs); deletes the replies to
	// them, returning their IDs. ForgetFacts: $1 person, $2 List(memory
	// IDs); deletes the facts about the person or drawn from any of the
	// memories. LiveSources: $1 List(memory IDs); those still stored,
	// locked against deletion to the transaction's end. InsertFactSource:
	// $1 fact ID, $2 memory ID.
	LockPerson, ForgetThrough, MarkForgotten, ForgottenThrough   string
	ForgetMessageIDs, ForgetMessages, ForgetReplies, ForgetFacts string
	LiveSources, InsertFactSource                                string
	BotMessagesAfter, DeleteMemories                             string

	// MoveRoom's statements, in order: MoveMessages and MoveFacts: $1
	// from, $2 to, $3 to's scope. DropKnownFacts deletes the facts of room
	// $1 that scope $2 holds already (another row: the same person and
	// text). MovePassages: $1 from, $2 to's scope (the passages of room
	// $1's documents). MoveDocuments: $1 from, $2 to, $3 to's scope.
	MoveMessages, DropKnownFacts, MoveFacts, MovePassages, MoveDocuments string

	// SaveEmbedding and Embeddings by kind (domain.RecallFact,
	// domain.RecallPassage). SaveEmbedding: $1 id, $2 the vector's bytes,
	// only where none is stored. Embeddings: $1 List(ids); id and bytes.
	SaveEmbedding, Embeddings map[string]string

	// Limit is a LIMIT parameter: limit, or the dialect's "none" when
	// limit <= 0.
	Limit func(limit int) any
	// List is a list parameter of IDs.
	List func([]int64) any
	// Time is how the dialect stores a time.
	Time TimeArg
}

// RecallStatements are a Recall statement for a selective query and for a
// query of common words (RecallSQL).
type RecallStatements struct{ Selective, Common string }

// DocumentColumns are the columns of a document scanDocument reads.
const DocumentColumns = `id, title, room, bytes, passages, created_at`

// MemoryStore is the facts, knowledge and recall of a SQL store, written once
// over its TxDB and RecallSQL. A store embeds the one NewMemoryStore makes
// and gets domain.MemoryStore.
type MemoryStore struct {
	DB  TxDB
	SQL RecallSQL
	// counts remembers in how many rows words are; nil remembers none.
	counts *wordCounts
}

// NewMemoryStore is the MemoryStore of db.
func NewMemoryStore(db TxDB, sql RecallSQL) MemoryStore {
	return MemoryStore{DB: db, SQL: sql, counts: &wordCounts{rows: map[string]int{}}}
}

// Wrote tells recall that rows of kind (domain.RecallMessage,
// RecallFact, RecallPassage) were written through this process: it
// forgets which scopes held none of them and which words were in none.
// The store's own writes call it; a store whose messages are saved apart
// (Records) passes it as Records.Wrote.
func (r MemoryStore) Wrote(kind string) { r.counts.wrote(kind) }

// SetClock sets the clock by which what recall remembers expires
// (absentFor); time.Now unless set.
func (r MemoryStore) SetClock(now func() time.Time) {
	if r.counts != nil {
		r.counts.mu.Lock()
		r.counts.now = now
		r.counts.mu.Unlock()
	}
}

// wordCounts remember in how many rows of each kind words are (up to
// selectAtMost): counting reads the rows, and the words of one query are
// mostly those of others. A count grows stale as rows are written, which
// only moves a word between selecting and not (recall's cost, not what it
// may find): the counts are forgotten every forgetAfter lookups.
//
// What is not there is remembered too, for absentFor: a word in no row of
// a kind, and a scope with no message, no fact or no document (a task's prompt recalls
// every iteration, mostly words nothing holds, often in a room with no
// memory at all). Rows only appear by a write: one through this process
// forgets what was remembered absent of its kind at once (Wrote), and one
// through another process (a replica, `taskloom knowledge add`) is found
// here absentFor later at most. A scope found holding rows is remembered
// until the counts are forgotten: one that no longer does only costs a
// recall that finds nothing.
type wordCounts struct {
	mu      sync.Mutex
	now     func() time.Time     // nil: time.Now
	rows    map[string]int       // kind + "\x00" + word
	absent  map[string]time.Time // kind + "\x00" + word → when its absence is counted again
	empty   map[string]time.Time // kind + "\x00" + scope → when it is looked at again
	holding map[string]bool      // kind + "\x00" + scope: it held rows
	// writes counts the writes of each kind (wrote): an absence read
	// before a write and remembered after it would hide the row written.
	writes  map[string]uint64
	lookups int
}

const forgetAfter = 20_000

// absentFor is how long a word found in no row of a kind, or a scope
// found with no row of a kind, is taken to be so without reading again.
const absentFor = 2 * time.Second

func (c *wordCounts) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// lookup counts a lookup, forgetting everything every forgetAfter.
func (c *wordCounts) lookup() {
	if c.lookups++; c.lookups > forgetAfter {
		clear(c.rows)
		clear(c.absent)
		clear(c.empty)
		clear(c.holding)
		c.lookups = 0
	}
}

func (c *wordCounts) get(kind, word string) (int, bool) {
	if c == nil {
		return 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lookup()
	key := kind + "\x00" + word
	if until, ok := c.absent[key]; ok {
		if c.clock().Before(until) {
			return 0, true
		}
		delete(c.absent, key)
	}
	n, ok := c.rows[key]
	return n, ok
}

// gen is how many writes of kind this process made: put and found take
// it as it was before the read they remember.
func (c *wordCounts) gen(kind string) uint64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes[kind]
}

// put remembers in how many rows of kind word is, counted by a read that
// began at gen (a word in none is not remembered when a row of the kind
// was written since).
func (c *wordCounts) put(kind, word string, rows int, gen uint64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	key := kind + "\x00" + word
	if rows == 0 {
		if c.writes[kind] != gen {
			return
		}
		if c.absent == nil {
			c.absent = map[string]time.Time{}
		}
		c.absent[key] = c.clock().Add(absentFor)
		return
	}
	c.rows[key] = rows
}

// holds says whether scope holds rows of kind, if that is known: known
// to hold some, or found with none less than absentFor ago.
func (c *wordCounts) holds(kind, scope string) (holds, known bool) {
	if c == nil {
		return false, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lookup()
	key := kind + "\x00" + scope
	if c.holding[key] {
		return true, true
	}
	if until, ok := c.empty[key]; ok {
		if c.clock().Before(until) {
			return false, true
		}
		delete(c.empty, key)
	}
	return false, false
}

// found remembers whether scope held rows of kind, read by a read that
// began at gen (none is not remembered when a row of the kind was written
// since).
func (c *wordCounts) found(kind, scope string, holds bool, gen uint64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !holds && c.writes[kind] != gen {
		return
	}
	key := kind + "\x00" + scope
	if holds {
		if c.holding == nil {
			c.holding = map[string]bool{}
		}
		c.holding[key] = true
		delete(c.empty, key)
		return
	}
	if c.empty == nil {
		c.empty = map[string]time.Time{}
	}
	c.empty[key] = c.clock().Add(absentFor)
}

// wrote forgets what was remembered absent of kind: rows of it were
// written.
func (c *wordCounts) wrote(kind string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.writes == nil {
		c.writes = map[string]uint64{}
	}
	c.writes[kind]++
	prefix := kind + "\x00"
	for k := range c.absent {
		if strings.HasPrefix(k, prefix) {
			delete(c.absent, k)
		}
	}
	for k := range c.empty {
		if strings.HasPrefix(k, prefix) {
			delete(c.empty, k)
		}
	}
}

// maxTerms is how many distinct words of a query are searched: enough for
// any question, few enough that a pasted page stays a cheap query.
const maxTerms = 32

// maxTermChars is the longest word searched: a longer one is no word.
const maxTermChars = 64

// Recall ranks few rows, whatever the query and however much is stored
// (docs/PERFORMANCE.md, "Recall"): ranking costs microseconds a row, and
// a common word matches most rows.
const (
	// commonAt is in how many rows of a kind a word is common: a query
	// selects by its uncommon words alone, which tell rows apart (a
	// common word's weight in the rank is near nothing anyway).
	commonAt = 200
	// selectAtMost is how many rows at most a query of common words only
	// selects by its least common words: the rows they are in are read.
	// When even its least common word is in more (and words are counted
	// up to this many), the newest rows with any of its words are read
	// instead, and they are near: at least one row in 25 has the word
	// (with 100,000 rows). Both ways read a few thousand rows at most.
	selectAtMost = 4000
	// candidates is how many of the rows selected are ranked at most: the
	// newest.
	candidates = 200
)

// stopWords are English words too common to tell passages apart. The
// PostgreSQL 'english' configuration drops its own; FTS5 has no such list,
// so they are dropped here, before either store sees the query.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for w := range strings.FieldsSeq(`a about above after again against all am an and any are as at be
because been before being below between both but by can could did do does doing down during each
few for from further had has have having he her here hers herself him himself his how i if in into
is it its itself just me more most my myself no nor not now of off on once only or other our ours
ourselves out over own same she should so some such than that the their theirs them themselves then
there these they this those through to too under until up very was we were what when where which
while who whom why will with would you your yours yourself yourselves s t don`) {
		m[w] = true
	}
	return m
}()

// QueryTerms are the words of a query that are searched: lowercased runs
// of letters and digits, stop words and repeats dropped, at most
// maxTerms. Everything else — quotes, operators, punctuation — separates
// words and is never passed to the store's query syntax.
func QueryTerms(text string) []string {
	var out []string
	seen := map[string]bool{}
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	for _, w := range words {
		if stopWords[w] || seen[w] || utf8.RuneCountInString(w) > maxTermChars {
			continue
		}
		seen[w] = true
		out = append(out, w)
		if len(out) == maxTerms {
			break
		}
	}
	return out
}

// SaveFacts stores facts in the scope of their rooms; see
// domain.MemoryStore.
func (r MemoryStore) SaveFacts(ctx context.Context, facts []domain.Fact) ([]domain.Fact, error) {
	for i := range facts {
		f := &facts[i]
		f.Room = strings.TrimSpace(f.Room)
		f.Text = strings.TrimSpace(domain.CleanText(f.Text))
		switch {
		case f.Room == "":
			return nil, fmt.Errorf("save facts: %w: fact %d has no room", domain.ErrInvalid, i+1)
		case f.Text == "":
			return nil, fmt.Errorf("save facts: %w: fact %d has no text", domain.ErrInvalid, i+1)
		case utf8.RuneCountInString(f.Text) > domain.MaxFactChars:
			return nil, fmt.Errorf("save facts: %w: fact %d is longer than %d characters", domain.ErrInvalid, i+1, domain.MaxFactChars)
		}
		if f.About != "" {
			if _, _, err := domain.ParsePerson(f.About); err != nil {
				return nil, fmt.Errorf("save facts: fact %d: %w", i+1, err)
			}
		}
		f.Scope = domain.RoomScope(f.Room)
		f.CreatedAt = domain.UTC(f.CreatedAt)
		if f.Sources == nil {
			f.Sources = []int64{}
		}
	}
	var out []domain.Fact
	err := r.DB.InTx(ctx, func(db DB) error {
		out = nil
		if err := r.lockPeople(ctx, db, facts); err != nil {
			return err
		}
		for _, f := range facts {
			if ok, err := r.unforgotten(ctx, db, f); err != nil || !ok {
				if err != nil {
					return err
				}
				continue
			}
			sources, err := json.Marshal(f.Sources)
			if err != nil {
				return err
			}
			err = db.WriteRow(ctx, r.SQL.InsertFact, f.Room, f.Scope, f.About, f.Text, string(sources),
				r.SQL.Time(f.CreatedAt)).Scan(&f.ID)
			if db.IsNoRows(err) {
				continue // stored already
			}
			if err != nil {
				return err
			}
			for _, m := range f.Sources {
				if _, err := db.Exec(ctx, r.SQL.InsertFactSource, f.ID, m); err != nil {
					return fmt.Errorf("source %d of fact %d: %w", m, f.ID, err)
				}
			}
			out = append(out, f)
		}
		return nil
	})
	// Even when the transaction failed: its answer may have been lost.
	r.counts.wrote(domain.RecallFact)
	if err != nil {
		return nil, fmt.Errorf("save facts: %w", err)
	}
	return out, nil
}

// AddDocument stores a document as its passages; see domain.MemoryStore.
func (r MemoryStore) AddDocument(ctx context.Context, d domain.Document, text string) (domain.Document, error) {
	if len(text) > domain.MaxDocumentBytes {
		return domain.Document{}, fmt.Errorf("add document %q: %w: it has %d bytes, more than %d",
			d.Title, domain.ErrLimit, len(text), domain.MaxDocumentBytes)
	}
	text = domain.CleanText(text)
	d.Title = strings.TrimSpace(domain.CleanText(d.Title))
	d.Room = strings.TrimSpace(d.Room)
	if d.Title == "" {
		return domain.Document{}, fmt.Errorf("add document: %w: it has no title", domain.ErrInvalid)
	}
	passages := domain.SplitPassages(text)
	if len(passages) == 0 {
		return domain.Document{}, fmt.Errorf("add document %q: %w: it has no text", d.Title, domain.ErrInvalid)
	}
	d.Bytes, d.Passages, d.CreatedAt = len(text), len(passages), domain.UTC(d.CreatedAt)
	scope := domain.RoomScope(d.Room)
	err := r.DB.InTx(ctx, func(db DB) error {
		err := db.WriteRow(ctx, r.SQL.InsertDocument, d.Title, d.Room, scope, d.Bytes, d.Passages,
			r.SQL.Time(d.CreatedAt)).Scan(&d.ID)
		if err != nil {
			return err
		}
		for i, p := range passages {
			if _, err := db.Exec(ctx, r.SQL.InsertPassage, d.ID, i+1, scope, p); err != nil {
				return fmt.Errorf("passage %d: %w", i+1, err)
			}
		}
		return nil
	})
	// Its words are no longer absent from knowledge (even when the
	// transaction failed: its answer may have been lost).
	r.counts.wrote(domain.RecallPassage)
	if err != nil {
		return domain.Document{}, fmt.Errorf("add document %q: %w", d.Title, err)
	}
	return d, nil
}

// Documents lists the documents of room ("" for every room), newest
// first.
func (r MemoryStore) Documents(ctx context.Context, room string) ([]domain.Document, error) {
	out, err := QueryAll(ctx, r.DB, r.SQL.Documents, []any{room}, scanDocument)
	if err != nil {
		return nil, fmt.Errorf("list documents: %w", err)
	}
	return out, nil
}

func scanDocument(row Row) (domain.Document, error) {
	var d domain.Document
	var at Time
	err := row.Scan(&d.ID, &d.Title, &d.Room, &d.Bytes, &d.Passages, &at)
	d.CreatedAt = at.T
	return d, err
}

// DeleteDocument deletes a document and its passages in one transaction.
func (r MemoryStore) DeleteDocument(ctx context.Context, id int64) error {
	err := r.DB.InTx(ctx, func(db DB) error {
		if _, err := db.Exec(ctx, r.SQL.DeletePassages, id); err != nil {
			return err
		}
		n, err := db.Exec(ctx, r.SQL.DeleteDocument, id)
		if err != nil {
			return err
		}
		if n == 0 {
			return domain.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete document %d: %w", id, err)
	}
	return nil
}

// Recall finds what matches q.Text in q.Room's scope, best first: each
// kind asked for is searched for its best q.Limit, and the best q.Limit of
// them all are returned.
func (r MemoryStore) Recall(ctx context.Context, q domain.RecallQuery) ([]domain.Recollection, error) {
	terms := QueryTerms(q.Text)
	if len(terms) == 0 {
		return nil, nil
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 10
	}
	limit = min(limit, domain.MaxRecall)
	kinds := q.Kinds
	if len(kinds) == 0 {
		kinds = []string{domain.RecallMessage, domain.RecallFact, domain.RecallPassage}
	}
	scope := domain.RoomScope(strings.TrimSpace(q.Room))
	for _, kind := range kinds {
		switch kind {
		case domain.RecallMessage, domain.RecallFact, domain.RecallPassage:
		default:
			return nil, fmt.Errorf("recall: %w: no kind %q", domain.ErrInvalid, kind)
		}
	}
	held, err := r.holding(ctx, scope, kinds)
	if err != nil {
		return nil, fmt.Errorf("recall in %s: %w", scope, err)
	}
	var out []domain.Recollection
	for _, kind := range kinds {
		if scope == "" && kind != domain.RecallPassage {
			continue // no room: only the knowledge of every room
		}
		if !held[kind] {
			// The room has no message, fact or document to recall:
			// nothing to count or read.
			continue
		}
		selecting, absent, err := r.selecting(ctx, kind, terms)
		if err != nil {
			return nil, fmt.Errorf("recall %ss in %s: %w", kind, scope, err)
		}
		if absent {
			// No word is in any row of the kind: nothing to read. (A
			// task's prompt recalls knowledge every iteration, mostly
			// from none: this is one round trip an iteration less.)
			continue
		}
		var stmts RecallStatements
		var args []any
		switch kind {
		case domain.RecallMessage:
			stmts, args = r.SQL.RecallMessages, []any{nil, scope, max(q.BeforeID, 0), limit, candidates}
		case domain.RecallFact:
			stmts, args = r.SQL.RecallFacts, []any{nil, scope, limit, candidates}
		case domain.RecallPassage:
			stmts, args = r.SQL.RecallPassages, []any{nil, scope, limit, candidates}
		}
		scan := func(row Row) (domain.Recollection, error) { return scanRecollection(row, kind) }
		var found []domain.Recollection
		if len(selecting) > 0 {
			args[0] = r.SQL.Match(selecting)
			found, err = QueryAll(ctx, r.DB, stmts.Selective, args, scan)
		}
		if err == nil && len(found) == 0 && len(selecting) < len(terms) {
			// Only very common words, or the words selecting are in no
			// row of the scope: the newest rows with any word.
			args[0] = r.SQL.Match(terms)
			found, err = QueryAll(ctx, r.DB, stmts.Common, args, scan)
		}
		if err != nil {
			return nil, fmt.Errorf("recall %ss in %s: %w", kind, scope, err)
		}
		out = append(out, found...)
	}
	slices.SortStableFunc(out, func(a, b domain.Recollection) int {
		if c := cmp.Compare(b.Rank, a.Rank); c != 0 {
			return c
		}
		return b.CreatedAt.Compare(a.CreatedAt)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// holding says, of kinds, whether scope holds any row of each (for
// passages, whether a document of the scope or of every room is stored):
// remembered (wordCounts.holds), or read for the three in one statement.
func (r MemoryStore) holding(ctx context.Context, scope string, kinds []string) (map[string]bool, error) {
	held := map[string]bool{}
	read := false
	for _, kind := range kinds {
		if scope == "" && kind != domain.RecallPassage {
			continue // no room: only the knowledge of every room
		}
		holds, known := r.counts.holds(kind, scope)
		held[kind] = holds
		read = read || !known
	}
	if !read {
		return held, nil
	}
	gens := map[string]uint64{}
	for _, kind := range []string{domain.RecallMessage, domain.RecallFact, domain.RecallPassage} {
		gens[kind] = r.counts.gen(kind)
	}
	var messages, facts, documents bool
	if err := r.DB.QueryRow(ctx, r.SQL.Holding, scope).Scan(&messages, &facts, &documents); err != nil {
		return nil, fmt.Errorf("look for memories: %w", err)
	}
	found := map[string]bool{domain.RecallMessage: messages, domain.RecallFact: facts, domain.RecallPassage: documents}
	for kind, holds := range found {
		if scope == "" && kind != domain.RecallPassage {
			continue
		}
		r.counts.found(kind, scope, holds, gens[kind])
		if _, asked := held[kind]; asked {
			held[kind] = holds
		}
	}
	return held, nil
}

// selecting are the words of terms a query of kind selects rows by: those
// in some but fewer than commonAt rows; or, when none is, the least common
// while the rows they are in add up to selectAtMost at most; or none, when
// every word is in more rows than that (Recall then reads the newest rows
// with any of them). absent reports that no word is in any row.
func (r MemoryStore) selecting(ctx context.Context, kind string, terms []string) (words []string, absent bool, err error) {
	type freq struct {
		term string
		rows int
	}
	var known []freq
	var unknown []string
	for _, t := range terms {
		if n, ok := r.counts.get(kind, t); ok {
			known = append(known, freq{t, n})
		} else {
			unknown = append(unknown, t)
		}
	}
	if len(unknown) > 0 {
		gen := r.counts.gen(kind)
		counted, err := QueryAll(ctx, r.DB, r.SQL.Frequencies[kind], []any{r.SQL.Terms(unknown), selectAtMost},
			func(row Row) (freq, error) {
				var f freq
				err := row.Scan(&f.term, &f.rows)
				return f, err
			})
		if err != nil {
			return nil, false, fmt.Errorf("count words: %w", err)
		}
		for _, f := range counted {
			r.counts.put(kind, f.term, f.rows, gen)
		}
		known = append(known, counted...)
	}
	var uncommon []string
	known = slices.DeleteFunc(known, func(f freq) bool { return f.rows == 0 })
	if len(known) == 0 {
		return nil, true, nil
	}
	for _, f := range known {
		if f.rows < commonAt {
			uncommon = append(uncommon, f.term)
		}
	}
	if len(uncommon) > 0 {
		return uncommon, false, nil
	}
	slices.SortFunc(known, func(a, b freq) int { return cmp.Compare(a.rows, b.rows) })
	var least []string
	total := 0
	for _, f := range known {
		if total += f.rows; total > selectAtMost || f.rows >= selectAtMost {
			break
		}
		least = append(least, f.term)
	}
	return least, false, nil
}

// scanRecollection reads RecallColumns and cites the source.
func scanRecollection(row Row, kind string) (domain.Recollection, error) {
	rc := domain.Recollection{Kind: kind}
	var label, extra string
	var at Time
	if err := row.Scan(&rc.ID, &rc.Room, &rc.Text, &label, &extra, &rc.Rank, &at); err != nil {
		return rc, err
	}
	rc.CreatedAt = at.T
	switch kind {
	case domain.RecallMessage:
		who := cmp.Or(label, extra)
		rc.Source = fmt.Sprintf("message %d from %s", rc.ID, who)
	case domain.RecallFact:
		var sources []int64
		_ = json.Unmarshal([]byte(extra), &sources) // a source list is only cited
		ids := make([]string, len(sources))
		for i, id := range sources {
			ids[i] = strconv.FormatInt(id, 10)
		}
		rc.Source = fmt.Sprintf("fact %d", rc.ID)
		if label != "" {
			rc.Source += " about " + label
		}
		if len(ids) > 0 {
			rc.Source += " (from messages " + strings.Join(ids, ", ") + ")"
		}
	case domain.RecallPassage:
		rc.Source = fmt.Sprintf("%q, passage %s", label, extra)
	}
	return rc, nil
}

// MemoriesAfter lists room's messages after afterID, oldest first.
func (r MemoryStore) MemoriesAfter(ctx context.Context, room string, afterID int64, limit int) ([]domain.Memory, error) {
	out, err := QueryAll(ctx, r.DB, r.SQL.MemoriesAfter, []any{room, afterID, r.SQL.Limit(limit)}, ScanMemory)
	if err != nil {
		return nil, fmt.Errorf("memories of %s after %d: %w", room, afterID, err)
	}
	return out, nil
}

// SearchMemories lists the messages of f, newest first, or with a query
// the messages matching any of its words, best first.
func (r MemoryStore) SearchMemories(ctx context.Context, f domain.MemoryFilter) ([]domain.Memory, error) {
	before := max(f.BeforeID, 0)
	stmt, args := r.SQL.ListMemories, []any{f.Room, before, r.SQL.Limit(f.Limit)}
	if strings.TrimSpace(f.Query) != "" {
		terms := QueryTerms(f.Query)
		if len(terms) == 0 {
			return nil, nil // only stop words: nothing tells messages apart
		}
		stmt, args = r.SQL.SearchMemories, []any{r.SQL.Match(terms), f.Room, before, r.SQL.Limit(f.Limit)}
	}
	out, err := QueryAll(ctx, r.DB, stmt, args, ScanMemory)
	if err != nil {
		return nil, fmt.Errorf("search memories: %w", err)
	}
	return out, nil
}

// lockPeople takes the lock of each person the facts are about, in one
// order whoever locks (and before any row lock, which a Forget holding a
// person's lock may wait for).
func (r MemoryStore) lockPeople(ctx context.Context, db DB, facts []domain.Fact) error {
	if r.SQL.LockPerson == "" {
		return nil
	}
	var people []string
	for _, f := range facts {
		if f.About != "" {
			people = append(people, f.About)
		}
	}
	slices.Sort(people)
	for _, p := range slices.Compact(people) {
		if _, err := db.Exec(ctx, r.SQL.LockPerson, p); err != nil {
			return fmt.Errorf("lock %s: %w", p, err)
		}
	}
	return nil
}

// unforgotten reports whether a fact may be stored: every message it was
// drawn from is still stored (none was forgotten while the model read
// them), and the person it is about was not forgotten after those
// messages were said. The sources stay locked to the transaction's end,
// so a Forget deleting them waits, and then finds the fact by them.
func (r MemoryStore) unforgotten(ctx context.Context, db DB, f domain.Fact) (bool, error) {
	if len(f.Sources) > 0 {
		want := slices.Compact(slices.Sorted(slices.Values(f.Sources)))
		live, err := QueryAll(ctx, db, r.SQL.LiveSources, []any{r.SQL.List(want)}, func(row Row) (int64, error) {
			var id int64
			err := row.Scan(&id)
			return id, err
		})
		if err != nil {
			return false, fmt.Errorf("read the sources of a fact: %w", err)
		}
		if len(live) < len(want) {
			return false, nil
		}
	}
	if f.About == "" {
		return true, nil
	}
	var through int64
	err := db.QueryRow(ctx, r.SQL.ForgottenThrough, f.About).Scan(&through)
	if db.IsNoRows(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the forget mark of %s: %w", f.About, err)
	}
	// Said after they were forgotten: a fact of the new conversation.
	return len(f.Sources) > 0 && slices.Min(f.Sources) > through, nil
}

// Forget deletes what person wrote, the bot's replies to it and the facts
// about them or drawn from either, together; it keeps the platform's IDs
// of their messages (a retry of one is not stored again) and a mark of
// when they were forgotten (a fact about them drawn from earlier messages
// is not stored after). messages counts what they wrote.
func (r MemoryStore) Forget(ctx context.Context, person string) (messages, facts int64, err error) {
	platform, id, err := domain.ParsePerson(person)
	if err != nil {
		return 0, 0, fmt.Errorf("forget: %w", err)
	}
	readIDs := func(row Row) (int64, error) {
		var id int64
		err := row.Scan(&id)
		return id, err
	}
	err = r.DB.InTx(ctx, func(db DB) error {
		if r.SQL.LockPerson != "" {
			if _, err := db.Exec(ctx, r.SQL.LockPerson, person); err != nil {
				return fmt.Errorf("lock: %w", err)
			}
		}
		var through int64
		if err := db.QueryRow(ctx, r.SQL.ForgetThrough).Scan(&through); err != nil {
			return fmt.Errorf("read the last memory: %w", err)
		}
		if _, err := db.Exec(ctx, r.SQL.MarkForgotten, person, through); err != nil {
			return fmt.Errorf("mark: %w", err)
		}
		if _, err := db.Exec(ctx, r.SQL.ForgetMessageIDs, platform, id); err != nil {
			return fmt.Errorf("keep the message IDs: %w", err)
		}
		// Their messages first, then what hangs on them: a reply or a
		// fact saved meanwhile made the delete wait for it, and a later
		// statement sees it.
		said, err := QueryAll(ctx, db, r.SQL.ForgetMessages, []any{platform, id}, scanSaid)
		if err != nil {
			return fmt.Errorf("delete the messages: %w", err)
		}
		messages = int64(len(said))
		gone := make([]int64, len(said))
		for i, m := range said {
			gone[i] = m.id
		}
		if len(gone) > 0 {
			replies, err := QueryAll(ctx, db, r.SQL.ForgetReplies, []any{r.SQL.List(gone)}, readIDs)
			if err != nil {
				return fmt.Errorf("delete the replies: %w", err)
			}
			gone = append(gone, replies...)
			quotes, err := r.forgetQuotes(ctx, db, said)
			if err != nil {
				return fmt.Errorf("delete the quotes: %w", err)
			}
			gone = append(gone, quotes...)
		}
		if facts, err = db.Exec(ctx, r.SQL.ForgetFacts, person, r.SQL.List(gone)); err != nil {
			return fmt.Errorf("delete the facts: %w", err)
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("forget %s: %w", person, err)
	}
	return messages, facts, nil
}

// said is a message Forget deleted: its ID, scope and words.
type said struct {
	id    int64
	scope string
	text  string
}

func scanSaid(row Row) (said, error) {
	var m said
	err := row.Scan(&m.id, &m.scope, &m.text)
	return m, err
}

// quoteWords is how many words in a row of someone's message the bot's
// message must repeat to quote it: enough that a common phrase is not a
// quote ("create a task for"), few enough that "You said: my locker code
// is CORMORANT-77" is.
const quoteWords = 4

// forgetQuotes deletes the bot's messages, in the scopes of the messages
// forgotten and after the first of them there, that repeat quoteWords
// words of one of those messages in a row — the bot's answer to someone
// else that quotes the person — and returns their IDs.
func (r MemoryStore) forgetQuotes(ctx context.Context, db DB, forgotten []said) ([]int64, error) {
	type bounds struct {
		after   int64
		phrases map[string]bool
	}
	scopes := map[string]*bounds{}
	for _, m := range forgotten {
		phrases := quotePhrases(m.text)
		if len(phrases) == 0 {
			continue
		}
		b := scopes[m.scope]
		if b == nil {
			b = &bounds{after: m.id, phrases: map[string]bool{}}
			scopes[m.scope] = b
		}
		b.after = min(b.after, m.id)
		for _, p := range phrases {
			b.phrases[p] = true
		}
	}
	var quotes []int64
	for scope, b := range scopes {
		bot, err := QueryAll(ctx, db, r.SQL.BotMessagesAfter, []any{scope, b.after}, scanSaid)
		if err != nil {
			return nil, err
		}
		for _, m := range bot {
			for _, p := range quotePhrases(m.text) {
				if b.phrases[p] {
					quotes = append(quotes, m.id)
					break
				}
			}
		}
	}
	if len(quotes) == 0 {
		return nil, nil
	}
	return QueryAll(ctx, db, r.SQL.DeleteMemories, []any{r.SQL.List(quotes)}, func(row Row) (int64, error) {
		var id int64
		err := row.Scan(&id)
		return id, err
	})
}

// quotePhrases are the runs of quoteWords words of text (letters and
// digits, lowercased), each joined by a space.
func quotePhrases(text string) []string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	var out []string
	for i := 0; i+quoteWords <= len(words); i++ {
		out = append(out, strings.Join(words[i:i+quoteWords], " "))
	}
	return out
}

// MoveRoom moves a room's messages, facts and documents to another room,
// together; see domain.MemoryStore.
func (r MemoryStore) MoveRoom(ctx context.Context, from, to string) (messages, facts int64, err error) {
	if strings.TrimSpace(from) == "" || strings.TrimSpace(to) == "" || from == to {
		return 0, 0, fmt.Errorf("move room %q to %q: %w: two rooms are needed", from, to, domain.ErrInvalid)
	}
	scope := domain.RoomScope(to)
	err = r.DB.InTx(ctx, func(db DB) error {
		var err error
		if messages, err = db.Exec(ctx, r.SQL.MoveMessages, from, to, scope); err != nil {
			return fmt.Errorf("messages: %w", err)
		}
		if _, err = db.Exec(ctx, r.SQL.DropKnownFacts, from, scope); err != nil {
			return fmt.Errorf("facts known already: %w", err)
		}
		if facts, err = db.Exec(ctx, r.SQL.MoveFacts, from, to, scope); err != nil {
			return fmt.Errorf("facts: %w", err)
		}
		if _, err = db.Exec(ctx, r.SQL.MovePassages, from, scope); err != nil {
			return fmt.Errorf("passages: %w", err)
		}
		if _, err = db.Exec(ctx, r.SQL.MoveDocuments, from, to, scope); err != nil {
			return fmt.Errorf("documents: %w", err)
		}
		return nil
	})
	for _, kind := range []string{domain.RecallMessage, domain.RecallFact, domain.RecallPassage} {
		r.counts.wrote(kind) // the scope moved to holds them now
	}
	if err != nil {
		return 0, 0, fmt.Errorf("move room %s to %s: %w", from, to, err)
	}
	return messages, facts, nil
}

// SaveEmbeddings stores vectors of facts or passages, each once.
func (r MemoryStore) SaveEmbeddings(ctx context.Context, kind string, vectors map[int64][]float32) error {
	stmt, ok := r.SQL.SaveEmbedding[kind]
	if !ok {
		return fmt.Errorf("save embeddings: %w: no %q has embeddings", domain.ErrInvalid, kind)
	}
	ids := make([]int64, 0, len(vectors))
	for id := range vectors {
		ids = append(ids, id)
	}
	slices.Sort(ids) // one order of locks whoever writes
	err := r.DB.InTx(ctx, func(db DB) error {
		for _, id := range ids {
			if _, err := db.Exec(ctx, stmt, id, EncodeVector(vectors[id])); err != nil {
				return fmt.Errorf("%s %d: %w", kind, id, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("save embeddings: %w", err)
	}
	return nil
}

// Embeddings reads the stored vectors of ids.
func (r MemoryStore) Embeddings(ctx context.Context, kind string, ids []int64) (map[int64][]float32, error) {
	stmt, ok := r.SQL.Embeddings[kind]
	if !ok {
		return nil, fmt.Errorf("read embeddings: %w: no %q has embeddings", domain.ErrInvalid, kind)
	}
	out := map[int64][]float32{}
	if len(ids) == 0 {
		return out, nil
	}
	type row struct {
		id  int64
		vec []float32
	}
	rows, err := QueryAll(ctx, r.DB, stmt, []any{r.SQL.List(ids)}, func(rw Row) (row, error) {
		var x row
		var b []byte
		if err := rw.Scan(&x.id, &b); err != nil {
			return x, err
		}
		var err error
		x.vec, err = DecodeVector(b)
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("read embeddings: %w", err)
	}
	for _, x := range rows {
		out[x.id] = x.vec
	}
	return out, nil
}

// EncodeVector is a vector as stored: its float32s, little-endian.
func EncodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// DecodeVector reads a vector EncodeVector wrote.
func DecodeVector(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, errors.New("a stored vector's length is not a multiple of 4")
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}
