package discordfake

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"
)

// Call is one HTTP request the fake received (the gateway's websocket
// upgrade excepted).
type Call struct {
	Method string
	// Path is relative to the API root, "/channels/42/messages" for
	// /api/v9/channels/42/messages; a path outside /api/v9 is kept whole.
	Path  string
	Query url.Values
	// Header is the request's header; Authorization is its Authorization,
	// "Bot <token>" from discordgo.
	Header        http.Header
	Authorization string
	// JSON is the JSON body: the body itself, or the payload_json part of
	// a multipart/form-data body. Body is the same decoded into any.
	JSON  json.RawMessage
	Body  any
	Files []File // the files[n] parts of a multipart body
	// Status is what the fake answered.
	Status int
	Time   time.Time

	bucket *bucketState // the enforced channel bucket, for the headers
}

// Decode decodes the call's JSON body into v.
func (c Call) Decode(v any) error {
	if len(c.JSON) == 0 {
		return fmt.Errorf("discordfake: %s %s had no JSON body", c.Method, c.Path)
	}
	return json.Unmarshal(c.JSON, v)
}

func (c Call) copy() Call {
	c.Header = c.Header.Clone()
	q := url.Values{}
	for k, v := range c.Query {
		q[k] = append([]string(nil), v...)
	}
	c.Query = q
	c.Files = append([]File(nil), c.Files...)
	c.Body = nil
	if len(c.JSON) > 0 {
		json.Unmarshal(c.JSON, &c.Body)
	}
	return c
}

func (c Call) matches(method, pathPrefix string) bool {
	return (method == "" || strings.EqualFold(method, c.Method)) &&
		strings.HasPrefix(c.Path, strings.TrimPrefix(pathPrefix, apiPrefix))
}

// Calls returns every REST call received so far, in order.
func (s *Server) Calls() []Call { return s.CallsTo("", "") }

// CallsTo returns the calls with method ("" for any) whose Path starts
// with pathPrefix ("/channels/42/messages"; a leading "/api/v9" is
// allowed), in order.
func (s *Server) CallsTo(method, pathPrefix string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.callsLocked(method, pathPrefix)
}

func (s *Server) callsLocked(method, pathPrefix string) []Call {
	var cs []Call
	for _, c := range s.calls {
		if c.matches(method, pathPrefix) {
			cs = append(cs, c.copy())
		}
	}
	return cs
}

// WaitCalls waits until at least n calls match method and pathPrefix, as
// in CallsTo, and returns them.
func (s *Server) WaitCalls(ctx context.Context, method, pathPrefix string, n int) ([]Call, error) {
	var cs []Call
	err := s.waitFor(ctx, fmt.Sprintf("%d calls to %s %s", n, method, pathPrefix), func() (bool, string) {
		cs = s.callsLocked(method, pathPrefix)
		return len(cs) >= n, strconv.Itoa(len(cs))
	})
	return cs, err
}

type fault struct {
	method, prefix string
	n              int
	status         int
	retryAfter     time.Duration
	global         bool
	// after: the call is carried out before the error is answered.
	after bool
	// until, when set, bounds the fault in time (the fake's clock) instead
	// of by n: it answers every matching call before until.
	until time.Time
	// stall holds the call this long on the wall clock, or until the
	// client gives up, before the rest of the fault.
	stall time.Duration
}

// RateLimitNext makes the next n calls with method ("" for any) whose path
// starts with pathPrefix answer 429 as Discord does: the body
// {"message": "You are being rate limited.", "retry_after": <seconds>,
// "global": <global>} and the headers Retry-After (whole seconds, rounded
// up), X-RateLimit-Limit, -Remaining (0), -Reset, -Reset-After, -Bucket,
// -Scope ("user", or "global" with X-RateLimit-Global: true).
//
// discordgo reads X-RateLimit-Reset-After: after a 429 the next call in the
// same bucket (or, when global, any call) first sleeps until the reset.
func (s *Server) RateLimitNext(method, pathPrefix string, n int, retryAfter time.Duration, global bool) {
	s.addFault(&fault{method: method, prefix: pathPrefix, n: n, status: http.StatusTooManyRequests, retryAfter: retryAfter, global: global})
}

// FailNext makes the next n matching calls (as in RateLimitNext) answer
// status with Discord's error body {"message": "<status>: <text>", "code": 0}.
// discordgo retries a 502 up to Session.MaxRestRetries times by itself.
func (s *Server) FailNext(method, pathPrefix string, n int, status int) {
	s.addFault(&fault{method: method, prefix: pathPrefix, n: n, status: status})
}

// FailAfterNext is FailNext for calls that are carried out all the same:
// the request takes effect (a message is created) and the client hears
// status, as when a 5xx comes from between the client and an API that
// did its work (a gateway's timeout). Only a nonce with enforce_nonce
// (or a look at the channel) tells a client that retries that the message
// is there.
func (s *Server) FailAfterNext(method, pathPrefix string, n int, status int) {
	s.addFault(&fault{method: method, prefix: pathPrefix, n: n, status: status, after: true})
}

// FailUntil makes every matching call (as in RateLimitNext) answer status,
// with FailNext's body, until the fake's clock (WithNow) reaches until: a
// platform failing for a while, then recovering.
func (s *Server) FailUntil(method, pathPrefix string, until time.Time, status int) {
	s.addFault(&fault{method: method, prefix: pathPrefix, status: status, until: until})
}

// StallNext makes the next n matching calls (as in RateLimitNext) hang,
// as Discord does when it stops answering: each is held for d on the wall
// clock, or until the client gives up (its timeout), then carried out
// when carriedOut (the client that gave up cannot tell it was) and
// answered 504 Gateway Timeout, as Discord's edge answers a request its
// API did not answer in time.
func (s *Server) StallNext(method, pathPrefix string, n int, d time.Duration, carriedOut bool) {
	s.addFault(&fault{method: method, prefix: pathPrefix, n: n, status: http.StatusGatewayTimeout, stall: d, after: carriedOut})
}

func (s *Server) addFault(f *fault) {
	f.prefix = strings.TrimPrefix(f.prefix, apiPrefix)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, f)
}

func (s *Server) takeFault(c *Call) *fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if !f.until.IsZero() {
			if c.matches(f.method, f.prefix) && s.cfg.now().Before(f.until) {
				return f
			}
			continue
		}
		if c.matches(f.method, f.prefix) {
			f.n--
			if f.n <= 0 {
				s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
			}
			return f
		}
	}
	return nil
}

type callKey struct{}

// admit asks the enforced limits, if any, whether c may go.
func (s *Server) admit(c *Call) (*fault, *bucketState) {
	s.mu.Lock()
	lm := s.limits
	s.mu.Unlock()
	if lm == nil {
		return nil, nil
	}
	return lm.admit(c, time.Now())
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == gatewayPath || r.URL.Path == gatewayPath+"/" {
		s.serveGateway(w, r)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 26<<20))
	c := &Call{
		Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(),
		Authorization: r.Header.Get("Authorization"), Time: time.Now(),
	}
	if rel, ok := strings.CutPrefix(r.URL.Path, apiPrefix); ok && (rel == "" || rel[0] == '/') {
		c.Path = rel
	}
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	if aerr := parseBody(c, r.Header.Get("Content-Type"), body); aerr != nil {
		writeAPIError(sw, aerr)
	} else if f := s.takeFault(c); f != nil {
		if f.stall > 0 {
			t := time.NewTimer(f.stall)
			select {
			case <-t.C:
			case <-r.Context().Done():
			}
			t.Stop()
		}
		if f.after {
			s.mux.ServeHTTP(httptest.NewRecorder(), r.WithContext(context.WithValue(r.Context(), callKey{}, c)))
		}
		writeFault(sw, f, c)
	} else if f, state := s.admit(c); f != nil {
		writeFault(sw, f, c)
	} else {
		c.bucket = state
		s.mux.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), callKey{}, c)))
	}
	c.Status = sw.status
	s.mu.Lock()
	s.calls = append(s.calls, *c)
	s.notifyLocked()
	s.mu.Unlock()
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// parseBody reads a JSON body, or the payload_json and files[n] parts of a
// multipart one, into c.
func parseBody(c *Call, contentType string, body []byte) *apiError {
	if len(body) == 0 {
		return nil
	}
	mt, params, _ := mime.ParseMediaType(contentType)
	if mt == "multipart/form-data" {
		mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
		body = nil
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				return &apiError{status: 400, code: 50035, message: "Invalid Form Body"}
			}
			data, _ := io.ReadAll(p)
			switch name := p.FormName(); {
			case name == "payload_json":
				body = data
			case strings.HasPrefix(name, "files["):
				c.Files = append(c.Files, File{Name: p.FileName(), ContentType: p.Header.Get("Content-Type"), Data: data})
			}
		}
		if len(body) == 0 {
			return nil // files without payload_json
		}
	}
	if !json.Valid(body) {
		return &apiError{status: 400, code: 50109, message: "The request body contains invalid JSON."}
	}
	c.JSON = append(json.RawMessage(nil), body...)
	json.Unmarshal(c.JSON, &c.Body)
	return nil
}

func writeFault(w http.ResponseWriter, f *fault, c *Call) {
	if f.status != http.StatusTooManyRequests {
		writeJSON(w, f.status, map[string]any{"message": fmt.Sprintf("%d: %s", f.status, http.StatusText(f.status)), "code": 0})
		return
	}
	h := w.Header()
	setRateLimitHeaders(h, bucketHash(c.Method, c.Path), 0, f.retryAfter)
	h.Set("Retry-After", strconv.Itoa(int(math.Ceil(f.retryAfter.Seconds()))))
	if f.global {
		h.Set("X-RateLimit-Global", "true")
		h.Set("X-RateLimit-Scope", "global")
	} else {
		h.Set("X-RateLimit-Scope", "user")
	}
	writeJSON(w, http.StatusTooManyRequests, map[string]any{
		"message":     "You are being rate limited.",
		"retry_after": math.Round(f.retryAfter.Seconds()*1000) / 1000,
		"global":      f.global,
	})
}

// setRateLimitHeaders sets the headers Discord puts on every REST answer.
// The fake never runs out on its own: normal answers say 4 of 5 remain.
func setRateLimitHeaders(h http.Header, bucket string, remaining int, resetAfter time.Duration) {
	reset := time.Now().Add(resetAfter)
	h.Set("X-RateLimit-Limit", "5")
	h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatFloat(float64(reset.UnixMilli())/1000, 'f', 3, 64))
	h.Set("X-RateLimit-Reset-After", strconv.FormatFloat(resetAfter.Seconds(), 'f', 3, 64))
	h.Set("X-RateLimit-Bucket", bucket)
}

func bucketHash(method, route string) string {
	h := fnv.New64a()
	io.WriteString(h, method+" "+route)
	return strconv.FormatUint(h.Sum64(), 16)
}

// apiError is an error answer in Discord's shape.
type apiError struct {
	status  int
	code    int
	message string
	errors  map[string]any
}

func writeAPIError(w http.ResponseWriter, e *apiError) {
	body := map[string]any{"message": e.message, "code": e.code}
	if e.errors != nil {
		body["errors"] = e.errors
	}
	writeJSON(w, e.status, body)
}

func writeError(w http.ResponseWriter, status, code int, message string) {
	writeAPIError(w, &apiError{status: status, code: code, message: message})
}

// formError is Discord's 400 "Invalid Form Body" (50035) with one error at
// a dotted path ("embeds.0.description").
func formError(path, code, message string) *apiError {
	var errs any = map[string]any{"_errors": []any{map[string]any{"code": code, "message": message}}}
	if path != "" {
		parts := strings.Split(path, ".")
		for i := len(parts) - 1; i >= 0; i-- {
			errs = map[string]any{parts[i]: errs}
		}
	}
	return &apiError{status: 400, code: 50035, message: "Invalid Form Body", errors: errs.(map[string]any)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"message":"500: Internal Server Error","code":0}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

func (s *Server) routes() {
	s.mux = http.NewServeMux()
	api := func(pattern string, auth bool, h func(http.ResponseWriter, *http.Request, *Call)) {
		method, path, _ := strings.Cut(pattern, " ")
		bucket := bucketHash(method, path)
		s.mux.HandleFunc(method+" "+apiPrefix+path, func(w http.ResponseWriter, r *http.Request) {
			c := r.Context().Value(callKey{}).(*Call)
			if b := c.bucket; b != nil {
				setRateLimitHeaders(w.Header(), bucket, b.remaining, b.resetAfter)
				w.Header().Set("X-RateLimit-Limit", strconv.Itoa(b.limit))
			} else {
				setRateLimitHeaders(w.Header(), bucket, 4, time.Second)
			}
			// Interaction callbacks and webhook-token routes are
			// authorised by their token, as on Discord.
			if auth && c.Authorization != "Bot "+s.cfg.token {
				writeError(w, http.StatusUnauthorized, 0, "401: Unauthorized")
				return
			}
			h(w, r, c)
		})
	}
	api("GET /gateway", false, s.getGateway)
	api("GET /gateway/bot", true, s.getGatewayBot)
	api("GET /users/@me", true, s.getMe)
	api("GET /users/{user}", true, s.getUser)
	api("POST /users/@me/channels", true, s.createDM)
	api("GET /channels/{channel}", true, s.getChannel)
	api("POST /channels/{channel}/messages", true, s.postMessage)
	api("GET /channels/{channel}/messages", true, s.listMessages)
	api("GET /channels/{channel}/messages/{message}", true, s.getMessage)
	api("PATCH /channels/{channel}/messages/{message}", true, s.patchMessage)
	api("DELETE /channels/{channel}/messages/{message}", true, s.deleteMessage)
	api("POST /channels/{channel}/messages/{message}/threads", true, s.startThread)
	api("POST /channels/{channel}/typing", true, s.typing)
	api("GET /guilds/{guild}", true, s.getGuild)
	api("GET /guilds/{guild}/roles", true, s.getRoles)
	api("GET /guilds/{guild}/members/{user}", true, s.getMember)
	for _, p := range []string{"/applications/{app}/commands", "/applications/{app}/guilds/{guild}/commands"} {
		api("GET "+p, true, s.getCommands)
		api("PUT "+p, true, s.putCommands)
		api("POST "+p, true, s.postCommand)
		api("DELETE "+p+"/{command}", true, s.deleteCommand)
	}
	api("POST /interactions/{interaction}/{token}/callback", false, s.interactionCallback)
	api("POST /webhooks/{app}/{token}", false, s.followup)
	api("GET /webhooks/{app}/{token}/messages/{message}", false, s.getWebhookMessage)
	api("PATCH /webhooks/{app}/{token}/messages/{message}", false, s.patchWebhookMessage)
	api("DELETE /webhooks/{app}/{token}/messages/{message}", false, s.deleteWebhookMessage)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, 0, "404: Not Found")
	})
}

func (s *Server) getGateway(w http.ResponseWriter, _ *http.Request, _ *Call) {
	writeJSON(w, http.StatusOK, map[string]any{"url": s.wsURL})
}

func (s *Server) getGatewayBot(w http.ResponseWriter, _ *http.Request, _ *Call) {
	writeJSON(w, http.StatusOK, map[string]any{
		"url": s.wsURL, "shards": 1,
		"session_start_limit": map[string]any{"total": 1000, "remaining": 999, "reset_after": 14400000, "max_concurrency": 1},
	})
}

func (s *Server) getMe(w http.ResponseWriter, _ *http.Request, _ *Call) {
	u := wireUser(s.cfg.bot)
	u["verified"], u["mfa_enabled"], u["flags"] = true, false, 0
	writeJSON(w, http.StatusOK, u)
}

func (s *Server) getUser(w http.ResponseWriter, r *http.Request, _ *Call) {
	s.mu.Lock()
	u, ok := s.users[r.PathValue("user")]
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, 10013, "Unknown User")
		return
	}
	writeJSON(w, http.StatusOK, wireUser(u))
}

func (s *Server) createDM(w http.ResponseWriter, _ *http.Request, c *Call) {
	var d struct {
		RecipientID string `json:"recipient_id"`
	}
	if c.Decode(&d) != nil || d.RecipientID == "" {
		writeAPIError(w, formError("recipient_id", "BASE_TYPE_REQUIRED", "This field is required"))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.dms[d.RecipientID]
	if !ok {
		id = s.newID()
	}
	ch := s.ensureChannelLocked(id, "", d.RecipientID)
	writeJSON(w, http.StatusOK, s.wireChannelLocked(ch))
}

// visibleChannelLocked finds the request's channel, answering 404
// Unknown Channel, or 403 Missing Access for one the bot may not see (a
// group DM is never the bot's), for you.
func (s *Server) visibleChannelLocked(w http.ResponseWriter, r *http.Request) *channel {
	ch, ok := s.channels[r.PathValue("channel")]
	if !ok {
		writeError(w, http.StatusNotFound, 10003, "Unknown Channel")
		return nil
	}
	if s.denied[ch.id] || ch.kind == discordgo.ChannelTypeGroupDM {
		writeError(w, http.StatusForbidden, 50001, "Missing Access")
		return nil
	}
	return ch
}

func (s *Server) getChannel(w http.ResponseWriter, r *http.Request, _ *Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.visibleChannelLocked(w, r)
	if ch == nil {
		return
	}
	writeJSON(w, http.StatusOK, s.wireChannelLocked(ch))
}

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request, c *Call) {
	f, aerr := parseMessageFields(c.JSON)
	if aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.visibleChannelLocked(w, r)
	if ch == nil {
		return
	}
	if ch.isThread() && s.botPermissionsLocked(ch)&discordgo.PermissionSendMessagesInThreads == 0 {
		writeError(w, http.StatusForbidden, 50013, "Missing Permissions")
		return
	}
	now := s.cfg.now().UTC()
	// With enforce_nonce, a message the same author created with the same
	// nonce in the past few minutes is returned instead of a new one.
	nonceKey := s.cfg.bot.ID + "\x00" + f.nonce
	if prev, ok := s.nonces[nonceKey]; ok && !prev.Deleted && f.enforceNonce && f.nonce != "" && now.Sub(prev.Created) < s.cfg.nonceTTL {
		writeJSON(w, http.StatusOK, s.wireMessageLocked(prev, false))
		return
	}
	m := &Message{
		ID: s.newID(), ChannelID: ch.id, GuildID: ch.guildID, Author: s.cfg.bot,
		Files: c.Files, Created: now, Nonce: f.nonce,
	}
	f.apply(m)
	m.Flags &^= discordgo.MessageFlagsEphemeral // only interaction messages can be
	if aerr := s.finishMessageLocked(m, f); aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	s.storeMessageLocked(m)
	if f.nonce != "" {
		s.nonces[nonceKey] = m
	}
	writeJSON(w, http.StatusOK, s.wireMessageLocked(m, false))
}

// channelMessageLocked finds a message in a channel, answering 404 (or,
// in a channel the bot may not see, 403 Missing Access) for you.
func (s *Server) channelMessageLocked(w http.ResponseWriter, r *http.Request) *Message {
	if _, ok := s.channels[r.PathValue("channel")]; !ok {
		writeError(w, http.StatusNotFound, 10003, "Unknown Channel")
		return nil
	}
	if s.denied[r.PathValue("channel")] {
		writeError(w, http.StatusForbidden, 50001, "Missing Access")
		return nil
	}
	m, ok := s.byID[r.PathValue("message")]
	if !ok || m.Deleted || m.ChannelID != r.PathValue("channel") || m.Ephemeral() {
		writeError(w, http.StatusNotFound, 10008, "Unknown Message")
		return nil
	}
	return m
}

// listMessages answers Get Channel Messages as Discord documents it: up
// to limit (1–100, 50 by default) of the channel's messages before,
// after or around a message ID (at most one of them; none: the latest),
// newest first. The bot must see the channel (403 Missing Access); in a
// guild channel where it may not read the history it gets no messages,
// not an error.
func (s *Server) listMessages(w http.ResponseWriter, r *http.Request, _ *Call) {
	q := r.URL.Query()
	limit := 50
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			writeAPIError(w, formError("limit", "NUMBER_TYPE_MAX", "Int should be between 1 and 100."))
			return
		}
		limit = n
	}
	var anchor, around string
	var anchors int
	for _, k := range []string{"before", "after", "around"} {
		if v := q.Get(k); v != "" {
			anchor, around = v, k
			anchors++
		}
	}
	if anchors > 1 {
		writeAPIError(w, formError("", "BASE_TYPE_BAD", "before, after and around are mutually exclusive."))
		return
	}
	at, err := strconv.ParseUint(anchor, 10, 64)
	if anchors == 1 && err != nil {
		writeAPIError(w, formError(around, "NUMBER_TYPE_COERCE", fmt.Sprintf("Value %q is not snowflake.", anchor)))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.visibleChannelLocked(w, r)
	if ch == nil {
		return
	}
	out := []any{}
	if ch.guildID != "" && s.botPermissionsLocked(ch)&discordgo.PermissionReadMessageHistory == 0 {
		writeJSON(w, http.StatusOK, out)
		return
	}
	var all []*Message // oldest first, as stored
	for _, m := range s.messages[ch.id] {
		if !m.Deleted && !m.Ephemeral() {
			all = append(all, m)
		}
	}
	id := func(m *Message) uint64 { n, _ := strconv.ParseUint(m.ID, 10, 64); return n }
	var page []*Message
	switch around {
	case "before":
		i := sort.Search(len(all), func(i int) bool { return id(all[i]) >= at })
		page = all[max(i-limit, 0):i]
	case "after":
		i := sort.Search(len(all), func(i int) bool { return id(all[i]) > at })
		page = all[i:min(i+limit, len(all))]
	case "around":
		i := sort.Search(len(all), func(i int) bool { return id(all[i]) >= at })
		from := max(i-limit/2, 0)
		page = all[from:min(from+limit, len(all))]
	default:
		page = all[max(len(all)-limit, 0):]
	}
	for i := len(page) - 1; i >= 0; i-- {
		out = append(out, s.wireMessageLocked(page[i], false))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getMessage(w http.ResponseWriter, r *http.Request, _ *Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.channelMessageLocked(w, r); m != nil {
		writeJSON(w, http.StatusOK, s.wireMessageLocked(m, false))
	}
}

func (s *Server) patchMessage(w http.ResponseWriter, r *http.Request, c *Call) {
	f, aerr := parseMessageFields(c.JSON)
	if aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.channelMessageLocked(w, r)
	if m == nil {
		return
	}
	if m.Author.ID != s.cfg.bot.ID {
		writeError(w, http.StatusForbidden, 50005, "Cannot edit a message authored by another user")
		return
	}
	s.editLocked(w, m, f, c.Files)
}

// editLocked applies an edit to a copy, validates it, then stores it.
func (s *Server) editLocked(w http.ResponseWriter, m *Message, f messageFields, files []File) {
	edited := *m
	f.reference = nil
	f.apply(&edited)
	if len(files) > 0 {
		edited.Files = append(append([]File(nil), m.Files...), files...)
	}
	edited.Flags &^= 1 << 7 // an edit ends a deferred response's loading state
	if aerr := s.finishMessageLocked(&edited, f); aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	*m = edited
	s.editedLocked(m)
	writeJSON(w, http.StatusOK, s.wireMessageLocked(m, false))
}

func (s *Server) deleteMessage(w http.ResponseWriter, r *http.Request, _ *Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.channelMessageLocked(w, r); m != nil {
		s.deletedLocked(m)
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *Server) typing(w http.ResponseWriter, r *http.Request, _ *Call) {
	s.mu.Lock()
	_, ok := s.channels[r.PathValue("channel")]
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, 10003, "Unknown Channel")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) guildLocked(w http.ResponseWriter, r *http.Request) *guild {
	g, ok := s.guilds[r.PathValue("guild")]
	if !ok {
		writeError(w, http.StatusNotFound, 10004, "Unknown Guild")
	}
	return g
}

func (s *Server) getGuild(w http.ResponseWriter, r *http.Request, _ *Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.guildLocked(w, r); g != nil {
		writeJSON(w, http.StatusOK, s.wireGuildLocked(g, false))
	}
}

func (s *Server) getRoles(w http.ResponseWriter, r *http.Request, _ *Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.guildLocked(w, r); g != nil {
		roles := []any{}
		for i, r := range g.roles {
			roles = append(roles, wireRole(r, i))
		}
		writeJSON(w, http.StatusOK, roles)
	}
}

func (s *Server) getMember(w http.ResponseWriter, r *http.Request, _ *Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.guildLocked(w, r)
	if g == nil {
		return
	}
	m, ok := g.members[r.PathValue("user")]
	if !ok {
		writeError(w, http.StatusNotFound, 10007, "Unknown Member")
		return
	}
	u := s.ensureUserLocked(r.PathValue("user"))
	writeJSON(w, http.StatusOK, wireMember(m, &u))
}
