package slackfake

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// kindEdit reads chat.update's parameters, where text may be left out.
const kindEdit = "edit"

// apiResult is one Web API answer: ok, or an error code.
type apiResult struct {
	fields map[string]any
	err    string
	// why is what Slack says about an error in
	// response_metadata.messages, as it does for invalid_arguments.
	why []string
}

func ok(fields map[string]any) apiResult { return apiResult{fields: fields} }
func fail(code string) apiResult         { return apiResult{err: code} }

// invalid is invalid_arguments with Slack's explanation.
func invalid(format string, args ...any) apiResult {
	return apiResult{err: "invalid_arguments", why: []string{"[ERROR] " + fmt.Sprintf(format, args...)}}
}

// serveAPI answers POST (or GET) /api/<method>.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, apiPrefix)
	params, token, err := readParams(r)
	if err != nil {
		s.record(Call{Method: method, Status: http.StatusBadRequest, Error: "invalid_form_data"})
		writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": "invalid_form_data"})
		return
	}
	call := Call{Method: method, Token: token, Params: params, Status: http.StatusOK, Time: s.cfg.now()}

	s.mu.Lock()
	f, limited := s.limitLocked(method, params, time.Now())
	fs := s.faults[method]
	for len(fs) > 0 && !fs[0].until.IsZero() && !s.cfg.now().Before(fs[0].until) {
		fs = fs[1:] // a fault for a while, over
	}
	s.faults[method] = fs
	if len(fs) > 0 || limited {
		if !limited {
			f = fs[0]
			if f.until.IsZero() {
				s.faults[method] = fs[1:]
			}
		}
		if f.stall > 0 {
			s.mu.Unlock()
			t := time.NewTimer(f.stall)
			select {
			case <-t.C:
			case <-r.Context().Done():
			}
			t.Stop()
			s.mu.Lock()
		}
		if f.after {
			s.dispatchLocked(method, token, params) // carried out all the same
		}
		call.Status, call.Error = f.status, f.errCode
		s.calls = append(s.calls, call)
		s.notifyLocked()
		s.mu.Unlock()
		if f.status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", strconv.Itoa(int((f.retryAfter+999_999_999)/1e9)))
		}
		writeJSON(w, f.status, map[string]any{"ok": false, "error": f.errCode})
		return
	}
	res := s.dispatchLocked(method, token, params)
	call.Error = res.err
	s.calls = append(s.calls, call)
	s.notifyLocked()
	s.mu.Unlock()

	if res.err != "" {
		body := map[string]any{"ok": false, "error": res.err}
		if len(res.why) > 0 {
			body["response_metadata"] = map[string]any{"messages": res.why}
		}
		writeJSON(w, http.StatusOK, body)
		return
	}
	body := map[string]any{"ok": true}
	for k, v := range res.fields {
		body[k] = v
	}
	writeJSON(w, http.StatusOK, body)
}

// dispatchLocked runs one method with s.mu held.
func (s *Server) dispatchLocked(method, token string, p url.Values) apiResult {
	if res, bad := s.checkToken(method, token); bad {
		return res
	}
	switch method {
	case "auth.test":
		return ok(map[string]any{
			"url": "https://fake.slack.com/", "team": s.cfg.teamName, "user": s.cfg.bot.Name,
			"team_id": s.cfg.teamID, "user_id": s.cfg.bot.ID, "bot_id": s.cfg.botID, "is_enterprise_install": false,
		})
	case "users.info":
		return s.usersInfoLocked(p)
	case "conversations.info":
		return s.conversationsInfoLocked(p)
	case "chat.postMessage":
		return s.postLocked(KindPost, p)
	case "chat.postEphemeral":
		return s.postLocked(KindEphemeral, p)
	case "chat.update":
		return s.updateLocked(p)
	case "chat.delete":
		return s.deleteLocked(p)
	case "conversations.open":
		return s.conversationsOpenLocked(p)
	case "views.open":
		return s.viewsOpenLocked(p)
	case "views.publish":
		return s.viewsPublishLocked(p)
	case "assistant.threads.setSuggestedPrompts":
		return s.setSuggestedPromptsLocked(p)
	case "assistant.threads.setStatus":
		return s.setStatusLocked(p)
	case "conversations.history":
		return s.historyLocked(p)
	case "conversations.replies":
		return s.repliesLocked(p)
	case "apps.connections.open":
		ticket := fmt.Sprintf("ticket-%d", s.nextLocked())
		s.tickets[ticket] = true
		u := "ws" + strings.TrimPrefix(s.hs.URL, "http") + socketPath + "?ticket=" + ticket + "&app_id=" + s.cfg.appID
		return ok(map[string]any{"url": u})
	}
	return fail("unknown_method")
}

// checkToken applies Slack's token rules: apps.connections.open takes the
// app-level token, every other method the bot token.
func (s *Server) checkToken(method, token string) (apiResult, bool) {
	switch {
	case token == "":
		return fail("not_authed"), true
	case method == "apps.connections.open":
		if token == s.cfg.botToken {
			return fail("not_allowed_token_type"), true
		}
		if token != s.cfg.appToken {
			return fail("invalid_auth"), true
		}
	case token == s.cfg.appToken:
		return fail("not_allowed_token_type"), true
	case token != s.cfg.botToken:
		return fail("invalid_auth"), true
	}
	return apiResult{}, false
}

func (s *Server) usersInfoLocked(p url.Values) apiResult {
	id := p.Get("user")
	u, found := s.users[id]
	if !found {
		return fail("user_not_found")
	}
	return ok(map[string]any{"user": map[string]any{
		"id": u.ID, "team_id": s.cfg.teamID, "name": u.Name, "real_name": u.Name,
		"is_admin": u.Admin || u.Owner, "is_owner": u.Owner, "is_primary_owner": false,
		"is_bot": u.Bot, "deleted": false,
		"profile": map[string]any{"display_name": u.Name, "real_name": u.Name},
	}})
}

func (s *Server) conversationsInfoLocked(p url.Values) apiResult {
	id := p.Get("channel")
	if id == "" {
		return fail("channel_not_found")
	}
	ch := map[string]any{
		"id": id, "is_channel": strings.HasPrefix(id, "C"), "is_group": strings.HasPrefix(id, "G"),
		"is_im": strings.HasPrefix(id, "D"), "is_private": !strings.HasPrefix(id, "C"),
		"context_team_id": s.cfg.teamID,
	}
	if !strings.HasPrefix(id, "D") {
		ch["name"] = strings.ToLower(id)
	}
	return ok(map[string]any{"channel": ch})
}

// postLocked records a chat.postMessage or chat.postEphemeral.
func (s *Server) postLocked(kind string, p url.Values) apiResult {
	m, res := s.messageFromParams(kind, p)
	if res.err != "" {
		return res
	}
	if kind == KindEphemeral {
		if p.Get("user") == "" {
			return fail("user_not_found")
		}
		m.User = p.Get("user")
		m.TS = s.tsLocked()
		s.messages = append(s.messages, m)
		return ok(map[string]any{"message_ts": m.TS})
	}
	md, code := parseMetadata(p.Get("metadata"))
	if code != "" {
		return fail(code)
	}
	m.Metadata = md
	m.TS = s.tsLocked()
	s.messages = append(s.messages, m)
	return ok(map[string]any{"channel": m.Channel, "ts": m.TS, "message": s.wireMessage(m, true)})
}

func (s *Server) updateLocked(p url.Values) apiResult {
	channel, ts := p.Get("channel"), p.Get("ts")
	for _, old := range s.messages {
		if old.Kind != KindPost || old.Channel != channel || old.TS != ts || old.Deleted {
			continue
		}
		m, res := s.messageFromParams(kindEdit, p)
		if res.err != "" {
			return res
		}
		md, code := parseMetadata(p.Get("metadata"))
		if code != "" {
			return fail(code)
		}
		// As on Slack, blocks and metadata left out are kept; "[]" removes
		// the blocks.
		old.Text = m.Text
		if _, given := p["blocks"]; given {
			old.Blocks, old.RawBlocks = m.Blocks, m.RawBlocks
		}
		if md != nil {
			old.Metadata = md
		}
		old.Edits++
		return ok(map[string]any{"channel": channel, "ts": ts, "text": old.Text, "message": s.wireMessage(old, true)})
	}
	return fail("message_not_found")
}

// deleteLocked answers chat.delete: one of the app's own posts, by channel
// and ts, is gone from the channel (and from history); deleting it again,
// or a message the fake does not have, is message_not_found.
func (s *Server) deleteLocked(p url.Values) apiResult {
	channel, ts := p.Get("channel"), p.Get("ts")
	if channel == "" {
		return fail("channel_not_found")
	}
	for _, m := range s.messages {
		if m.Kind == KindPost && m.Channel == channel && m.TS == ts && !m.Deleted {
			m.Deleted = true
			return ok(map[string]any{"channel": channel, "ts": ts})
		}
	}
	return fail("message_not_found")
}

// conversationsOpenLocked answers conversations.open for one user: the
// direct-message channel between the bot and that user.
func (s *Server) conversationsOpenLocked(p url.Values) apiResult {
	if ch := p.Get("channel"); ch != "" {
		return ok(map[string]any{"channel": map[string]any{"id": ch}, "already_open": true})
	}
	users := strings.Split(p.Get("users"), ",")
	if len(users) != 1 || users[0] == "" {
		return fail("users_list_not_supplied")
	}
	if _, known := s.users[users[0]]; !known {
		return fail("user_not_found")
	}
	return ok(map[string]any{"channel": map[string]any{"id": s.IMChannel(users[0])}, "already_open": true})
}

// messageFromParams reads a message's text and blocks and checks them.
func (s *Server) messageFromParams(kind string, p url.Values) (*Message, apiResult) {
	channel := p.Get("channel")
	if channel == "" {
		return nil, fail("channel_not_found")
	}
	text, rawBlocks := p.Get("text"), p.Get("blocks")
	blocks, err := parseBlocks(rawBlocks)
	if err != nil {
		return nil, fail("invalid_blocks")
	}
	if text == "" && len(blocks) == 0 && kind != kindEdit {
		return nil, fail("no_text")
	}
	if utf8.RuneCountInString(text) > MaxTextLength {
		return nil, fail("msg_too_long")
	}
	ln := p.Get("link_names")
	return &Message{
		Kind: kind, Channel: channel, ThreadTS: p.Get("thread_ts"), Text: text,
		Blocks: blocks, RawBlocks: json.RawMessage(rawBlocks),
		LinkNames: ln == "1" || ln == "true", Unfurl: p.Get("unfurl_links"), Time: s.cfg.now(),
	}, apiResult{}
}

// wireMessage is a bot message as the Web API returns it, with its
// metadata when withMetadata.
func (s *Server) wireMessage(m *Message, withMetadata bool) map[string]any {
	out := map[string]any{"type": "message", "user": s.cfg.bot.ID, "bot_id": s.cfg.botID, "app_id": s.cfg.appID,
		"text": m.Text, "ts": m.TS}
	if m.ThreadTS != "" {
		out["thread_ts"] = m.ThreadTS
	}
	if len(m.RawBlocks) > 0 {
		out["blocks"] = m.RawBlocks
	}
	if withMetadata && m.Metadata != nil {
		out["metadata"] = m.Metadata
	}
	return out
}

// serveResponseURL takes a message posted to a slash command's or an
// interaction's response URL.
func (s *Server) serveResponseURL(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, responseURLPrefix)
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil || r.Method != http.MethodPost {
		writeJSON(w, http.StatusBadRequest, map[string]any{"ok": false, "error": "invalid_request"})
		return
	}
	var body struct {
		Text            string          `json:"text"`
		Blocks          json.RawMessage `json:"blocks"`
		ResponseType    string          `json:"response_type"`
		ThreadTS        string          `json:"thread_ts"`
		ReplaceOriginal bool            `json:"replace_original"`
		DeleteOriginal  bool            `json:"delete_original"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"ok": false, "error": "invalid_payload"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notifyLocked()
	call := Call{Method: "response_url", Params: url.Values{"id": {id}}, Status: http.StatusOK, Time: s.cfg.now()}
	answer := func(status int, code string) {
		call.Status, call.Error = status, code
		s.calls = append(s.calls, call)
		if code != "" {
			writeJSON(w, status, map[string]any{"ok": false, "error": code})
			return
		}
		writeJSON(w, status, map[string]any{"ok": true})
	}
	ru, found := s.responseURLs[id]
	switch {
	case !found:
		answer(http.StatusNotFound, "expired_url")
		return
	case ru.uses >= responseURLMaxUses:
		answer(http.StatusNotFound, "used_url")
		return
	}
	blocks, err := parseBlocks(string(body.Blocks))
	switch {
	case err != nil:
		answer(http.StatusBadRequest, "invalid_blocks")
		return
	case body.Text == "" && len(blocks) == 0 && !body.DeleteOriginal:
		answer(http.StatusBadRequest, "no_text")
		return
	case utf8.RuneCountInString(body.Text) > MaxTextLength:
		answer(http.StatusBadRequest, "msg_too_long")
		return
	}
	ru.uses++
	rt := body.ResponseType
	if rt == "" {
		rt = defaultResponseType
	}
	thread := body.ThreadTS
	if thread == "" {
		thread = ru.threadTS
	}
	s.messages = append(s.messages, &Message{
		Kind: KindResponse, Channel: ru.channel, ThreadTS: thread, User: ru.user, Text: body.Text,
		Blocks: blocks, RawBlocks: body.Blocks, ResponseType: rt, Time: s.cfg.now(),
	})
	answer(http.StatusOK, "")
}

func (s *Server) record(c Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.Time = s.cfg.now()
	s.calls = append(s.calls, c)
	s.notifyLocked()
}

// readParams reads a Web API call's parameters from a form or JSON body
// (and the query), and its token from the Authorization header or the
// token parameter.
func readParams(r *http.Request) (url.Values, string, error) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return nil, "", err
	}
	params := url.Values{}
	for k, vs := range r.URL.Query() {
		params[k] = vs
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case ct == "application/json":
		if len(strings.TrimSpace(string(raw))) > 0 && string(raw) != "null" {
			var body map[string]any
			if err := json.Unmarshal(raw, &body); err != nil {
				return nil, "", err
			}
			for k, v := range body {
				if str, isString := v.(string); isString {
					params.Set(k, str)
					continue
				}
				b, err := json.Marshal(v)
				if err != nil {
					return nil, "", err
				}
				params.Set(k, string(b))
			}
		}
	case len(raw) > 0:
		form, err := url.ParseQuery(string(raw))
		if err != nil {
			return nil, "", err
		}
		for k, vs := range form {
			params[k] = vs
		}
	}
	token := params.Get("token")
	if auth := r.Header.Get("Authorization"); auth != "" {
		bearer, found := strings.CutPrefix(auth, "Bearer ")
		if !found {
			return nil, "", errors.New("authorization is not a bearer token")
		}
		token = bearer
	}
	params.Del("token")
	return params, token, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
