package domain

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Kinds of what Recall finds (Recollection.Kind, RecallQuery.Kinds).
const (
	RecallMessage = "message" // an earlier chat message of the room
	RecallFact    = "fact"    // a fact extracted from the conversation
	RecallPassage = "passage" // a passage of a knowledge document
)

// Limits of the knowledge and facts a store keeps (docs/memory.md).
const (
	// MaxDocumentBytes is the largest knowledge document AddDocument
	// takes; a larger one is refused with ErrLimit.
	MaxDocumentBytes = 4 << 20
	// PassageChars is about how many characters a passage of a document
	// holds (SplitPassages).
	PassageChars = 800
	// MaxFactChars is the longest fact SaveFacts takes.
	MaxFactChars = 2000
	// MaxRecall is the most recollections one Recall returns.
	MaxRecall = 100
)

// Fact is a durable fact extracted from conversation: what it says, the
// room it was said in, the messages it came from and the person it is
// about.
type Fact struct {
	ID int64 `json:"id"`
	// Room is where the fact was learnt; Scope is RoomScope(Room), set by
	// the store: where it may be recalled.
	Room  string `json:"room"`
	Scope string `json:"scope"`
	// About is the person the fact is about, "<platform>:<user id>", or
	// "" for a fact about no one in particular.
	About     string    `json:"about"`
	Text      string    `json:"text"`
	Sources   []int64   `json:"sources"` // IDs of the memories it came from
	CreatedAt time.Time `json:"created_at"`
}

// Document is a knowledge document, kept as passages (SplitPassages).
type Document struct {
	ID    int64  `json:"id"`
	Title string `json:"title"`
	// Room is the room the document is recalled in (and the rooms of its
	// scope); "" recalls it everywhere.
	Room string `json:"room"`
	// Bytes is the size of its text; Passages how many passages it was
	// split into.
	Bytes     int       `json:"bytes"`
	Passages  int       `json:"passages"`
	CreatedAt time.Time `json:"created_at"`
}

// Recollection is one thing Recall found, with where it came from.
type Recollection struct {
	Kind string `json:"kind"` // RecallMessage, RecallFact or RecallPassage
	// ID is the memory's, fact's or passage's ID.
	ID   int64  `json:"id"`
	Room string `json:"room"`
	Text string `json:"text"`
	// Source cites it for a reader: the message's author, the fact's
	// person and messages, the passage's document.
	Source string `json:"source"`
	// Rank orders recollections: higher is a better match.
	Rank      float64   `json:"rank"`
	CreatedAt time.Time `json:"created_at"`
}

// RecallQuery asks Recall for what matches Text in Room.
type RecallQuery struct {
	Text string
	// Room is the room asking: messages and facts of its scope
	// (RoomScope) are recalled, with the knowledge of that scope and the
	// knowledge of no room. With no room, only the latter.
	Room string
	// Kinds limits what is recalled (RecallMessage…); none is every kind.
	Kinds []string
	// Limit is how many recollections at most (10 when 0, MaxRecall at
	// most).
	Limit int
	// BeforeID, when above 0, recalls only messages with a lower ID: the
	// message asking, and those after it, are not recollections.
	BeforeID int64
}

// MemoryFilter lists or searches the stored chat messages (the API's
// GET /api/memories).
type MemoryFilter struct {
	// Room is the one room listed; "" lists every room.
	Room string
	// Query, when set, keeps the messages matching any of its words,
	// best match first; else the newest come first.
	Query string
	// BeforeID, when above 0, keeps only messages with a lower ID (paging
	// the newest-first list).
	BeforeID int64
	// Limit is how many at most (all when <= 0).
	Limit int
}

// MemoryStore keeps what the runtime recalls: facts, knowledge documents
// and the chat messages of domain.Store's SaveMemory, searched by full
// text in the store (docs/memory.md).
type MemoryStore interface {
	// SaveFacts stores facts, each in the scope of its room, and returns
	// those stored, with IDs. A fact already stored in the same scope about
	// the same person with the same text is not stored again (nor
	// returned). Nor is a fact one of whose source messages is gone (it
	// was forgotten while the fact was drawn), nor one about a person
	// forgotten since the messages it was drawn from (Forget): checked in
	// the transaction that stores it. Bad facts (no room, no text, a
	// malformed person) refuse the whole batch with ErrInvalid.
	SaveFacts(ctx context.Context, facts []Fact) ([]Fact, error)
	// AddDocument stores a knowledge document split into passages
	// (SplitPassages), all in one transaction. A text past
	// MaxDocumentBytes is refused with ErrLimit; an empty one with
	// ErrInvalid.
	AddDocument(ctx context.Context, d Document, text string) (Document, error)
	// Documents lists the documents of room, or every document when room
	// is "", newest first.
	Documents(ctx context.Context, room string) ([]Document, error)
	// DeleteDocument deletes a document and its passages; ErrNotFound when
	// there is none with id.
	DeleteDocument(ctx context.Context, id int64) error
	// Recall finds the passages, facts and earlier messages that match
	// q.Text in q.Room's scope, best first.
	Recall(ctx context.Context, q RecallQuery) ([]Recollection, error)
	// MemoriesAfter lists room's messages with an ID above afterID, oldest
	// first, at most limit of them (all when limit <= 0).
	MemoriesAfter(ctx context.Context, room string, afterID int64, limit int) ([]Memory, error)
	// SearchMemories lists or searches the chat messages.
	SearchMemories(ctx context.Context, f MemoryFilter) ([]Memory, error)
	// Forget deletes every message person ("<platform>:<user id>") wrote,
	// the bot's replies to them (Memory.InReplyTo) and its messages
	// quoting them, and every fact about them or drawn from any of those,
	// in every room, in one transaction, and says how many messages they
	// wrote and how many facts it deleted. It keeps the platform's IDs of
	// their messages, so that a retry is not stored again (SaveMemory),
	// and a mark of when they were forgotten (SaveFacts).
	Forget(ctx context.Context, person string) (messages, facts int64, err error)
	// MoveRoom renames a room in memory: the messages said in room from,
	// the facts learnt there and the knowledge documents of that room move
	// to room to, in to's scope (RoomScope), in one transaction; it says
	// how many messages and facts moved. A fact that to's scope knows
	// already (the same person, the same text) is deleted rather than
	// kept twice. From and to must be two rooms (ErrInvalid). A room is
	// renamed when who can read it turns out to be fewer than its name
	// said (a Discord private thread, docs/memory.md).
	MoveRoom(ctx context.Context, from, to string) (messages, facts int64, err error)
	// SaveEmbeddings stores the vectors of facts or passages (kind
	// RecallFact or RecallPassage) by ID. A vector is stored once: one
	// already there is kept.
	SaveEmbeddings(ctx context.Context, kind string, vectors map[int64][]float32) error
	// Embeddings reads the stored vectors of ids; an ID with none is left
	// out.
	Embeddings(ctx context.Context, kind string, ids []int64) (map[int64][]float32, error)
}

// ThreadRoom names the room of a thread of a channel on a platform. A
// thread everyone who reads the channel reads (a Discord public or
// announcement thread, any Slack thread) is "<platform>:<channel>:<thread>",
// in the channel's scope (RoomScope); a thread read by fewer (a Discord
// private thread, read by its members only) is "<platform>:<thread>", a
// room and a scope of its own, as a DM or a private channel is. When a
// platform cannot tell which, the adapter asks for the latter.
func ThreadRoom(platform, channel, thread string, sameAudience bool) string {
	if !sameAudience || channel == "" {
		return platform + ":" + thread
	}
	return platform + ":" + channel + ":" + thread
}

// RoomScope is the scope of a room: where what was said in it may be
// recalled. Rooms are "<platform>:<channel>" or, for a thread read by
// everyone who reads its channel, "<platform>:<channel>:<thread>" (Discord
// and Slack alike, ThreadRoom), so a scope is the room up to its second
// colon: a channel and its public threads share one; a DM, a private
// channel, a group DM and a private thread (each named as a channel of its
// own) have their own. A room with fewer parts is its own scope.
func RoomScope(room string) string {
	i := strings.IndexByte(room, ':')
	if i < 0 {
		return room
	}
	j := strings.IndexByte(room[i+1:], ':')
	if j < 0 {
		return room
	}
	return room[:i+1+j]
}

// ParsePerson splits "<platform>:<user id>" into its parts.
func ParsePerson(person string) (platform, id string, err error) {
	platform, id, ok := strings.Cut(person, ":")
	if !ok || platform == "" || id == "" || strings.TrimSpace(person) != person {
		return "", "", fmt.Errorf("%w: person %q is not <platform>:<user id>", ErrInvalid, person)
	}
	return platform, id, nil
}

// SplitPassages splits a document's text into passages of about
// PassageChars characters: whole paragraphs while they fit, a longer
// paragraph by sentences, a longer sentence by words. A word is never cut,
// unless it is longer than twice PassageChars (no word is: it is a blob,
// which would otherwise make one passage too long to index). Passages are
// trimmed; blank ones are dropped.
func SplitPassages(text string) []string {
	var out []string
	var cur strings.Builder
	curLen := 0
	flush := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			out = append(out, s)
		}
		cur.Reset()
		curLen = 0
	}
	// add appends a piece (a paragraph, sentence or word) with its
	// separator, starting a new passage when it would not fit.
	add := func(piece, sep string) {
		n := utf8.RuneCountInString(piece)
		if curLen > 0 && curLen+len(sep)+n > PassageChars {
			flush()
		}
		if curLen > 0 {
			cur.WriteString(sep)
			curLen += len(sep)
		}
		cur.WriteString(piece)
		curLen += n
	}
	for _, para := range paragraphs(text) {
		if utf8.RuneCountInString(para) <= PassageChars {
			add(para, "\n\n")
			continue
		}
		for i, sentence := range sentences(para) {
			sep := " "
			if i == 0 {
				sep = "\n\n"
			}
			if utf8.RuneCountInString(sentence) <= PassageChars {
				add(sentence, sep)
				continue
			}
			for j, word := range strings.Fields(sentence) {
				if j > 0 {
					sep = " "
				}
				for _, part := range cutBlob(word, 2*PassageChars) {
					add(part, sep)
					sep = ""
				}
			}
		}
	}
	flush()
	return out
}

// paragraphs splits text at blank lines.
func paragraphs(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	var out []string
	for p := range strings.SplitSeq(text, "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// sentences splits a paragraph after each '.', '!' or '?' that a space
// follows, keeping the punctuation.
func sentences(para string) []string {
	var out []string
	start := 0
	for i, r := range para {
		if r != '.' && r != '!' && r != '?' {
			continue
		}
		next, _ := utf8.DecodeRuneInString(para[i+1:])
		if i+1 < len(para) && unicode.IsSpace(next) {
			if s := strings.TrimSpace(para[start : i+1]); s != "" {
				out = append(out, s)
			}
			start = i + 1
		}
	}
	if s := strings.TrimSpace(para[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

// cutBlob cuts a word longer than max characters into pieces of max
// characters, at rune boundaries.
func cutBlob(word string, max int) []string {
	var out []string
	for utf8.RuneCountInString(word) > max {
		n, i := 0, 0
		for i = range word {
			if n == max {
				break
			}
			n++
		}
		out = append(out, word[:i])
		word = word[i:]
	}
	return append(out, word)
}
