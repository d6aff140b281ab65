package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/taskloom/taskloom/domain"
)

// Limits of the memory and knowledge endpoints (docs/memory.md).
const (
	// MaxKnowledgeBodyBytes bounds POST /api/knowledge, the one body
	// above MaxBodyBytes: a document's text of up to
	// domain.MaxDocumentBytes, with room for JSON's escapes (a quote, a
	// newline or, from encoders that escape it, any non-ASCII character
	// takes two to six bytes).
	MaxKnowledgeBodyBytes = 2*domain.MaxDocumentBytes + MaxBodyBytes
	// MaxTitleLength bounds a document's title, in characters.
	MaxTitleLength = 200
)

// memoryBody is one stored chat message.
type memoryBody struct {
	ID        int64     `json:"id"`
	Platform  string    `json:"platform"`
	MessageID string    `json:"message_id"`
	Room      string    `json:"room"`
	AuthorID  string    `json:"author_id"`
	Author    string    `json:"author"`
	Text      string    `json:"text"`
	FromBot   bool      `json:"from_bot"`
	CreatedAt time.Time `json:"created_at"`
}

type memoriesBody struct {
	Memories []memoryBody `json:"memories"`
	// Next is the before= of the next page; null on the last one, and
	// always for a search (q=), which returns the best matches only.
	Next *int64 `json:"next"`
}

func memoryOf(m domain.Memory) memoryBody {
	return memoryBody{ID: m.ID, Platform: m.Platform, MessageID: m.MessageID, Room: m.Room, AuthorID: m.AuthorID,
		Author: m.AuthorName, Text: m.Text, FromBot: m.FromBot, CreatedAt: m.CreatedAt.UTC()}
}

// listMemories answers GET /api/memories?room=&q=&before=&limit=: the
// stored chat messages, newest first, or those matching q, best first.
func (a *API) listMemories(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := domain.MemoryFilter{Room: strings.TrimSpace(q.Get("room")), Query: strings.TrimSpace(q.Get("q"))}
	if utf8.RuneCountInString(f.Query) > MaxQueryLength {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("q is over %d characters", MaxQueryLength))
		return
	}
	if len(f.Room) > MaxRoomLength {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("room is over %d characters", MaxRoomLength))
		return
	}
	if v := q.Get("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("before=%q is not a memory id: use a positive whole number", v))
			return
		}
		f.BeforeID = n
	}
	limit, msg := pageLimit(q.Get("limit"))
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	f.Limit = limit + 1 // one more tells whether there is a next page
	list, err := a.store.SearchMemories(r.Context(), f)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := memoriesBody{Memories: make([]memoryBody, 0, min(len(list), limit))}
	if len(list) > limit {
		list = list[:limit]
		if f.Query == "" {
			next := list[len(list)-1].ID
			out.Next = &next
		}
	}
	for _, m := range list {
		out.Memories = append(out.Memories, memoryOf(m))
	}
	WriteJSON(w, http.StatusOK, out)
}

// forgetPerson answers DELETE /api/memories?person=<platform>:<user id>:
// what `forget me` does, for whoever holds the API (docs/memory.md).
func (a *API) forgetPerson(w http.ResponseWriter, r *http.Request) {
	person := r.URL.Query().Get("person")
	if _, _, err := domain.ParsePerson(person); err != nil || len(person) > MaxRoomLength {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("person=%q is not a person: use <platform>:<user id>, e.g. discord:80351110224678912", person))
		return
	}
	who, err := requestor(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	messages, facts, err := a.store.Forget(r.Context(), person)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.log.Info("person forgotten via API", "person", person, "messages", messages, "facts", facts, "actor", who)
	WriteJSON(w, http.StatusOK, map[string]any{"person": person, "messages": messages, "facts": facts})
}

// documentBody is a knowledge document.
type documentBody struct {
	ID        int64     `json:"id"`
	Title     string    `json:"title"`
	Room      string    `json:"room"`
	Bytes     int       `json:"bytes"`
	Passages  int       `json:"passages"`
	CreatedAt time.Time `json:"created_at"`
}

func documentOf(d domain.Document) documentBody {
	return documentBody{ID: d.ID, Title: d.Title, Room: d.Room, Bytes: d.Bytes, Passages: d.Passages, CreatedAt: d.CreatedAt.UTC()}
}

type knowledgeRequest struct {
	Title *string `json:"title"`
	Text  *string `json:"text"`
	Room  string  `json:"room"`
}

// addKnowledge answers POST /api/knowledge {title, text, room?}: the
// document is split into passages that recall finds for prompts of its
// room, or of every room without one.
func (a *API) addKnowledge(w http.ResponseWriter, r *http.Request) {
	var req knowledgeRequest
	if err := decodeBodyWithin(w, r, &req, MaxKnowledgeBodyBytes); err != nil {
		a.badBody(w, r, err)
		return
	}
	if req.Title == nil || strings.TrimSpace(*req.Title) == "" {
		writeError(w, http.StatusBadRequest, `the body needs a "title"`)
		return
	}
	title := strings.Join(strings.Fields(*req.Title), " ")
	if n := utf8.RuneCountInString(title); n > MaxTitleLength {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("the title is %d characters; the limit is %d", n, MaxTitleLength))
		return
	}
	if req.Text == nil || strings.TrimSpace(*req.Text) == "" {
		writeError(w, http.StatusBadRequest, `the body needs a "text": the document's words`)
		return
	}
	if n := len(*req.Text); n > domain.MaxDocumentBytes {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the text is %d bytes; the limit is %d (4 MiB)", n, domain.MaxDocumentBytes))
		return
	}
	if !utf8.ValidString(*req.Text) {
		writeError(w, http.StatusBadRequest, "the text is not valid UTF-8")
		return
	}
	room := strings.TrimSpace(req.Room)
	if room != "" {
		if msg := a.checkRoom(room); msg != "" {
			writeError(w, http.StatusBadRequest, msg)
			return
		}
	}
	d, err := a.store.AddDocument(r.Context(), domain.Document{Title: title, Room: room, CreatedAt: a.clk.Now()}, *req.Text)
	if err != nil {
		if errors.Is(err, domain.ErrLimit) {
			writeError(w, http.StatusRequestEntityTooLarge, err.Error())
			return
		}
		a.fail(w, r, err)
		return
	}
	who, _ := requestor(r)
	a.log.Info("knowledge added via API", "document", d.ID, "title", d.Title, "room", d.Room, "bytes", d.Bytes, "actor", who)
	w.Header().Set("Location", fmt.Sprintf("/api/knowledge/%d", d.ID))
	WriteJSON(w, http.StatusCreated, documentOf(d))
}

// listKnowledge answers GET /api/knowledge?room=: the documents, newest
// first.
func (a *API) listKnowledge(w http.ResponseWriter, r *http.Request) {
	room := strings.TrimSpace(r.URL.Query().Get("room"))
	if len(room) > MaxRoomLength {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("room is over %d characters", MaxRoomLength))
		return
	}
	docs, err := a.store.Documents(r.Context(), room)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := make([]documentBody, 0, len(docs))
	for _, d := range docs {
		out = append(out, documentOf(d))
	}
	WriteJSON(w, http.StatusOK, map[string]any{"documents": out})
}

// deleteKnowledge answers DELETE /api/knowledge/{id}.
func (a *API) deleteKnowledge(w http.ResponseWriter, r *http.Request) {
	raw := r.PathValue("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%q is not a document id: use a positive whole number", raw))
		return
	}
	if err := a.store.DeleteDocument(r.Context(), id); err != nil {
		if errors.Is(err, domain.ErrNotFound) {
			writeError(w, http.StatusNotFound, fmt.Sprintf("there is no document %d", id))
			return
		}
		a.fail(w, r, err)
		return
	}
	who, _ := requestor(r)
	a.log.Info("knowledge deleted via API", "document", id, "actor", who)
	WriteJSON(w, http.StatusOK, map[string]any{"id": id, "deleted": true})
}
