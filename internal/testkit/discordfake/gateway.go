package discordfake

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
)

// maxReplay is how many dispatches a session keeps for RESUME; a RESUME
// from further back gets INVALID_SESSION, as when Discord's buffer is gone.
const maxReplay = 1000

// Identify is one IDENTIFY (op 2) the gateway received.
type Identify struct {
	Token          string // as sent; discordgo sends the session's token, "Bot ..."
	Intents        discordgo.Intent
	Shard          [2]int // [0, 1] when the client sent none
	Compress       bool
	LargeThreshold int
	Properties     map[string]any
	// Query is the websocket URL's query: discordgo asks v=9&encoding=json.
	Query url.Values
	// SessionID is the session READY opened, or "" when the IDENTIFY was
	// refused with a close code.
	SessionID string
	// CloseCode is the code the connection was closed with when refused.
	CloseCode int
}

// Resume is one RESUME (op 6) the gateway received.
type Resume struct {
	SessionID string
	Seq       int64
	// Resumed reports whether the fake answered with the missed dispatches
	// and RESUMED; otherwise it sent INVALID_SESSION (unknown or expired
	// session) or closed the connection.
	Resumed  bool
	Replayed int // dispatches replayed before RESUMED
}

type session struct {
	id       string
	token    string
	intents  discordgo.Intent
	shard    [2]int
	compress bool
	seq      int64
	frames   []frame // replay buffer
	conn     *conn   // nil while disconnected
}

type frame struct {
	seq  int64
	data []byte
}

// wantsGuild reports whether a guild event needing intent reaches the session.
func (ss *session) wantsGuild(guildID string, intent discordgo.Intent) bool {
	return ss.intents&intent != 0 && ss.ownsGuild(guildID)
}

// ownsGuild applies Discord's sharding formula; DMs go to shard 0.
func (ss *session) ownsGuild(guildID string) bool {
	if ss.shard[1] <= 1 {
		return true
	}
	n, err := strconv.ParseUint(guildID, 10, 64)
	if guildID == "" || err != nil {
		return ss.shard[0] == 0
	}
	return int((n>>22)%uint64(ss.shard[1])) == ss.shard[0]
}

// conn is one websocket connection. Everything it sends goes through its
// queue and one writer goroutine, so that frames leave in the order they
// were queued under s.mu and no write blocks the server's lock.
type conn struct {
	s     *Server
	ws    *websocket.Conn
	query url.Values
	sess  *session // guarded by s.mu

	qmu     sync.Mutex
	queue   []outFrame
	stopped bool
	wake    chan struct{}
	done    chan struct{} // closed when the writer has closed the socket
}

type outFrame struct {
	data      []byte
	binary    bool
	closeCode int // send a close frame with this code, then close
	drop      bool
}

func (c *conn) send(f outFrame) {
	c.qmu.Lock()
	if c.stopped {
		c.qmu.Unlock()
		return
	}
	c.queue = append(c.queue, f)
	if f.closeCode != 0 || f.drop {
		c.stopped = true
	}
	c.qmu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *conn) sendJSON(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only the fake's own payloads come here
	}
	c.send(outFrame{data: b})
}

// sendDispatch sends an op 0 frame, zlib-compressed in a binary message
// when the session asked for compression, as Discord does.
func (c *conn) sendDispatch(data []byte, compress bool) {
	if !compress {
		c.send(outFrame{data: data})
		return
	}
	var b bytes.Buffer
	zw := zlib.NewWriter(&b)
	zw.Write(data)
	zw.Close()
	c.send(outFrame{data: b.Bytes(), binary: true})
}

func (c *conn) closeWith(code int) { c.send(outFrame{closeCode: code}) }

func (c *conn) writer() {
	defer close(c.done)
	defer c.ws.Close()
	for {
		c.qmu.Lock()
		q := c.queue
		c.queue = nil
		c.qmu.Unlock()
		for _, f := range q {
			switch {
			case f.drop:
				return
			case f.closeCode != 0:
				msg := websocket.FormatCloseMessage(f.closeCode, closeReasons[f.closeCode])
				c.ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second))
				return
			}
			typ := websocket.TextMessage
			if f.binary {
				typ = websocket.BinaryMessage
			}
			c.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if err := c.ws.WriteMessage(typ, f.data); err != nil {
				return
			}
		}
		if len(q) == 0 {
			<-c.wake
		}
	}
}

var closeReasons = map[int]string{
	websocket.CloseNormalClosure: "",
	4000:                         "Unknown error.",
	4001:                         "Unknown opcode.",
	4002:                         "Decode error.",
	4003:                         "Not authenticated.",
	4004:                         "Authentication failed.",
	4005:                         "Already authenticated.",
	4007:                         "Invalid seq.",
	4008:                         "Rate limited.",
	4009:                         "Session timed out.",
	4010:                         "Invalid shard.",
	4011:                         "Sharding required.",
	4012:                         "Invalid API version.",
	4013:                         "Invalid intent(s).",
	4014:                         "Disallowed intent(s).",
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *Server) serveGateway(w http.ResponseWriter, r *http.Request) {
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered
	}
	c := &conn{s: s, ws: ws, query: r.URL.Query(), wake: make(chan struct{}, 1), done: make(chan struct{})}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ws.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.wg.Add(2)
	s.mu.Unlock()
	defer s.wg.Done()
	go func() {
		defer s.wg.Done()
		c.writer()
	}()

	c.sendJSON(map[string]any{"op": 10, "s": nil, "t": nil, "d": map[string]any{
		"heartbeat_interval": s.cfg.heartbeat.Milliseconds(),
		"_trace":             []string{"[\"discordfake\"]"},
	}})
	c.read()

	s.mu.Lock()
	delete(s.conns, c)
	if c.sess != nil && c.sess.conn == c {
		c.sess.conn = nil
	}
	c.sess = nil
	s.notifyLocked()
	s.mu.Unlock()
	c.send(outFrame{drop: true})
	<-c.done
}

func (c *conn) read() {
	for {
		typ, data, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		var p struct {
			Op *int            `json:"op"`
			D  json.RawMessage `json:"d"`
		}
		if typ != websocket.TextMessage || json.Unmarshal(data, &p) != nil || p.Op == nil {
			c.closeWith(4002)
			continue
		}
		c.s.handleOp(c, *p.Op, p.D)
	}
}

func (s *Server) handleOp(c *conn, op int, d json.RawMessage) {
	switch op {
	case 1: // HEARTBEAT
		s.mu.Lock()
		s.heartbeats++
		s.notifyLocked()
		s.mu.Unlock()
		c.sendJSON(map[string]any{"op": 11, "s": nil, "t": nil, "d": nil})
	case 2:
		s.identify(c, d)
	case 6:
		s.resume(c, d)
	case 3, 4, 8: // presence, voice state, request guild members: accepted, not acted on
		s.mu.Lock()
		authed := c.sess != nil
		s.mu.Unlock()
		if !authed {
			c.closeWith(4003)
		}
	default:
		c.closeWith(4001)
	}
}

func (s *Server) identify(c *conn, raw json.RawMessage) {
	var d struct {
		Token          string           `json:"token"`
		Intents        discordgo.Intent `json:"intents"`
		Compress       bool             `json:"compress"`
		LargeThreshold int              `json:"large_threshold"`
		Shard          *[2]int          `json:"shard"`
		Properties     map[string]any   `json:"properties"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		c.closeWith(4002)
		return
	}
	rec := Identify{
		Token: d.Token, Intents: d.Intents, Shard: [2]int{0, 1}, Compress: d.Compress,
		LargeThreshold: d.LargeThreshold, Properties: d.Properties, Query: c.query,
	}
	if d.Shard != nil {
		rec.Shard = *d.Shard
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notifyLocked()
	refuse := func(code int) {
		rec.CloseCode = code
		s.identifies = append(s.identifies, rec)
		c.closeWith(code)
	}
	switch {
	case c.sess != nil:
		refuse(4005)
		return
	case strings.TrimPrefix(d.Token, "Bot ") != s.cfg.token:
		refuse(4004)
		return
	case rec.Shard[1] < 1 || rec.Shard[0] < 0 || rec.Shard[0] >= rec.Shard[1]:
		refuse(4010)
		return
	case d.Intents < 0 || d.Intents >= 1<<26:
		refuse(4013)
		return
	case d.Intents&privilegedIntents&^s.cfg.privileged != 0:
		refuse(4014)
		return
	}
	// A new IDENTIFY ends the detached sessions of the same shard: they
	// could only have been resumed, and the client chose not to.
	for id, old := range s.sessions {
		if old.conn == nil && old.shard == rec.Shard {
			delete(s.sessions, id)
		}
	}
	ss := &session{
		id: newSessionID(), token: d.Token, intents: d.Intents, shard: rec.Shard,
		compress: d.Compress, conn: c,
	}
	s.sessions[ss.id] = ss
	c.sess = ss
	rec.SessionID = ss.id
	s.identifies = append(s.identifies, rec)

	var unavailable []map[string]any
	for _, id := range s.guildOrder {
		if ss.ownsGuild(id) {
			unavailable = append(unavailable, map[string]any{"id": id, "unavailable": true})
		}
	}
	s.sendDispatchLocked(ss, "READY", map[string]any{
		"v":                  9,
		"user":               wireUser(s.cfg.bot),
		"session_id":         ss.id,
		"session_type":       "normal",
		"resume_gateway_url": s.wsURL,
		"guilds":             orEmpty(unavailable),
		"private_channels":   []any{},
		"relationships":      []any{},
		"presences":          []any{},
		"shard":              rec.Shard,
		"application":        map[string]any{"id": s.cfg.appID, "flags": 0},
		"_trace":             []string{"[\"discordfake\"]"},
	})
	// Discord follows READY with the guilds, lazily, one GUILD_CREATE each.
	for _, id := range s.guildOrder {
		if ss.wantsGuild(id, discordgo.IntentGuilds) {
			s.sendDispatchLocked(ss, "GUILD_CREATE", s.wireGuildLocked(s.guilds[id], true))
		}
	}
}

func (s *Server) resume(c *conn, raw json.RawMessage) {
	var d struct {
		Token     string `json:"token"`
		SessionID string `json:"session_id"`
		Seq       int64  `json:"seq"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		c.closeWith(4002)
		return
	}
	rec := Resume{SessionID: d.SessionID, Seq: d.Seq}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notifyLocked()
	ss := s.sessions[d.SessionID]
	switch {
	case c.sess != nil:
		s.resumes = append(s.resumes, rec)
		c.closeWith(4005)
		return
	case ss == nil || strings.TrimPrefix(d.Token, "Bot ") != strings.TrimPrefix(ss.token, "Bot ") ||
		len(ss.frames) > 0 && d.Seq < ss.frames[0].seq-1:
		s.resumes = append(s.resumes, rec)
		c.sendJSON(map[string]any{"op": 9, "s": nil, "t": nil, "d": false})
		return
	case d.Seq > ss.seq:
		s.resumes = append(s.resumes, rec)
		delete(s.sessions, ss.id)
		c.closeWith(4007)
		return
	}
	if old := ss.conn; old != nil && old != c {
		// The client resumed before the old connection was seen to die.
		old.sess = nil
		old.closeWith(4009)
	}
	ss.conn, c.sess = c, ss
	for _, f := range ss.frames {
		if f.seq > d.Seq {
			c.sendDispatch(f.data, ss.compress)
			rec.Replayed++
		}
	}
	// RESUMED carries the session's last sequence number rather than a new
	// one: discordgo stores every dispatch's "s", so it stays right, and
	// RESUMED never lands in the replay buffer.
	b, _ := json.Marshal(dispatchFrame{Op: 0, T: "RESUMED", S: ss.seq, D: map[string]any{"_trace": []string{"[\"discordfake\"]"}}})
	c.sendDispatch(b, ss.compress)
	rec.Resumed = true
	s.resumes = append(s.resumes, rec)
}

type dispatchFrame struct {
	T  string `json:"t"`
	S  int64  `json:"s"`
	Op int    `json:"op"`
	D  any    `json:"d"`
}

// sendDispatchLocked sends one dispatch to one session with its next
// sequence number, keeping it for RESUME.
func (s *Server) sendDispatchLocked(ss *session, event string, d any) {
	ss.seq++
	b, err := json.Marshal(dispatchFrame{T: event, S: ss.seq, Op: 0, D: d})
	if err != nil {
		s.t.Errorf("discordfake: encode %s: %v", event, err)
		ss.seq--
		return
	}
	ss.frames = append(ss.frames, frame{seq: ss.seq, data: b})
	if len(ss.frames) > maxReplay {
		ss.frames = append([]frame(nil), ss.frames[len(ss.frames)-maxReplay:]...)
	}
	if ss.conn != nil {
		ss.conn.sendDispatch(b, ss.compress)
	}
}

// dispatchLocked sends an event to every session, connected or waiting to
// resume; build returns the session's payload, or nil when the event does
// not reach it (intents, shard).
func (s *Server) dispatchLocked(event string, build func(*session) any) {
	for _, ss := range s.sessions {
		if d := build(ss); d != nil {
			s.sendDispatchLocked(ss, event, d)
		}
	}
}

// Dispatch sends a dispatch (op 0) with eventType and data, exactly as
// given, to every gateway session: with its next sequence number to the
// connected ones, and into the replay buffer of those waiting to resume.
// It is a test error to dispatch before any client has identified.
// MessageCreate, SlashCommand and ButtonClick build realistic payloads and
// apply intents; Dispatch does not.
func (s *Server) Dispatch(eventType string, data any) {
	s.t.Helper()
	raw, err := json.Marshal(data)
	if err != nil {
		s.t.Errorf("discordfake: Dispatch %s: %v", eventType, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.hasSessionLocked(eventType) {
		return
	}
	s.dispatchLocked(eventType, func(*session) any { return json.RawMessage(raw) })
}

func (s *Server) hasSessionLocked(what string) bool {
	s.t.Helper()
	if len(s.sessions) == 0 {
		s.t.Errorf("discordfake: %s with no gateway session to receive it; wait with WaitIdentified first", what)
		return false
	}
	return true
}

// Disconnect closes every gateway connection with a close frame carrying
// code, as Discord does when it restarts a node; discordgo reconnects and
// RESUMEs (it does so whatever the code). The sessions stay resumable,
// except after 4007 and 4009, which end them as on Discord. Dispatches
// made from now until the RESUME are replayed then. Disconnect returns once
// the connections are closed.
func (s *Server) Disconnect(code int) { s.closeConns(outFrame{closeCode: code}) }

// DropWithoutClose cuts every gateway connection without a close frame, as
// a network failure does. Sessions stay resumable.
func (s *Server) DropWithoutClose() { s.closeConns(outFrame{drop: true}) }

func (s *Server) closeConns(f outFrame) {
	s.mu.Lock()
	var cs []*conn
	for c := range s.conns {
		if ss := c.sess; ss != nil {
			if f.closeCode == 4007 || f.closeCode == 4009 {
				delete(s.sessions, ss.id)
			}
			ss.conn, c.sess = nil, nil
		}
		c.send(f)
		cs = append(cs, c)
	}
	s.notifyLocked()
	s.mu.Unlock()
	for _, c := range cs {
		select {
		case <-c.done:
		case <-time.After(5 * time.Second):
			s.t.Errorf("discordfake: gateway connection did not close")
		}
	}
}

// Reconnect sends RECONNECT (op 7) on every connection; discordgo closes
// it and RESUMEs. Dispatches from now until the RESUME are replayed then.
func (s *Server) Reconnect() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if ss := c.sess; ss != nil {
			ss.conn, c.sess = nil, nil
		}
		c.sendJSON(map[string]any{"op": 7, "s": nil, "t": nil, "d": nil})
	}
	s.notifyLocked()
}

// InvalidateSession sends INVALID_SESSION (op 9) with d = resumable on
// every connection that has a session. Unless resumable, the sessions end.
// discordgo answers either way with a new IDENTIFY on the same connection.
func (s *Server) InvalidateSession(resumable bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		ss := c.sess
		if ss == nil {
			continue
		}
		if !resumable {
			delete(s.sessions, ss.id)
		}
		ss.conn, c.sess = nil, nil
		c.sendJSON(map[string]any{"op": 9, "s": nil, "t": nil, "d": resumable})
	}
	s.notifyLocked()
}

// Identifies returns every IDENTIFY received, in order.
func (s *Server) Identifies() []Identify {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Identify(nil), s.identifies...)
}

// Resumes returns every RESUME received, in order.
func (s *Server) Resumes() []Resume {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Resume(nil), s.resumes...)
}

// Heartbeats returns how many heartbeats (op 1) the gateway received.
func (s *Server) Heartbeats() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heartbeats
}

// Connected returns how many gateway connections have a live session.
func (s *Server) Connected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for c := range s.conns {
		if c.sess != nil {
			n++
		}
	}
	return n
}

// WaitHeartbeats waits until the gateway has received n heartbeats
// (counting from the server's start). discordgo's Open starts a goroutine
// that sends one heartbeat at once, without first checking whether the
// connection has closed meanwhile; when it has, the goroutine's error path
// closes whichever connection is current by then and reconnects a second
// time, beside the reconnect already under way. A test that cuts a
// connection waits for its first heartbeat first, as a real gateway's
// connections are never cut in the microseconds after they open.
func (s *Server) WaitHeartbeats(ctx context.Context, n int) error {
	return s.waitFor(ctx, fmt.Sprintf("%d heartbeats", n), func() (bool, string) {
		return s.heartbeats >= n, fmt.Sprintf("%d heartbeats", s.heartbeats)
	})
}

// WaitIdentified waits until n IDENTIFYs have been answered with READY
// (counting from the server's start).
func (s *Server) WaitIdentified(ctx context.Context, n int) error {
	return s.waitFor(ctx, fmt.Sprintf("%d READY", n), func() (bool, string) {
		got := 0
		for _, i := range s.identifies {
			if i.SessionID != "" {
				got++
			}
		}
		return got >= n, fmt.Sprintf("%d of %d IDENTIFYs answered", got, len(s.identifies))
	})
}

// WaitResumed waits until n RESUMEs have been answered with RESUMED.
func (s *Server) WaitResumed(ctx context.Context, n int) error {
	return s.waitFor(ctx, fmt.Sprintf("%d RESUMED", n), func() (bool, string) {
		got := 0
		for _, r := range s.resumes {
			if r.Resumed {
				got++
			}
		}
		return got >= n, fmt.Sprintf("%d of %d RESUMEs answered", got, len(s.resumes))
	})
}

func newSessionID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func orEmpty[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}
