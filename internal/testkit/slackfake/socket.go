package slackfake

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Socket Mode envelope types.
const (
	EnvelopeEvents       = "events_api"
	EnvelopeSlashCommand = "slash_commands"
	EnvelopeInteractive  = "interactive"
)

// Envelope is one Socket Mode request the fake sent.
type Envelope struct {
	ID                     string          `json:"envelope_id"`
	Type                   string          `json:"type"`
	Payload                json.RawMessage `json:"payload"`
	AcceptsResponsePayload bool            `json:"accepts_response_payload"`
	RetryAttempt           int             `json:"retry_attempt"`
	RetryReason            string          `json:"retry_reason"`
}

// Ack is an acknowledgement the app sent back.
type Ack struct {
	EnvelopeID string
	// Payload is the ack's payload: a slash command's immediate answer,
	// or nothing.
	Payload json.RawMessage
	Time    time.Time
}

type socketConn struct {
	ws   *websocket.Conn
	wmu  sync.Mutex // gorilla allows one writer at a time
	once sync.Once
	done chan struct{}
}

func (c *socketConn) write(v any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return c.ws.WriteJSON(v)
}

func (c *socketConn) ping() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.ws.WriteControl(websocket.PingMessage, []byte("ping"), time.Now().Add(10*time.Second))
}

func (c *socketConn) close() {
	c.once.Do(func() {
		close(c.done)
		c.wmu.Lock()
		_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		c.wmu.Unlock()
		_ = c.ws.Close()
	})
}

var upgrader = websocket.Upgrader{
	// slack-go sends Origin: https://api.slack.com, which is not this
	// server's host.
	CheckOrigin: func(*http.Request) bool { return true },
}

// serveSocket is the websocket URL apps.connections.open hands out.
func (s *Server) serveSocket(w http.ResponseWriter, r *http.Request) {
	ticket := r.URL.Query().Get("ticket")
	s.mu.Lock()
	valid := s.tickets[ticket]
	delete(s.tickets, ticket)
	closed := s.closed
	s.mu.Unlock()
	if !valid || closed {
		http.Error(w, "invalid or used ticket", http.StatusUnauthorized)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &socketConn{ws: ws, done: make(chan struct{})}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.close()
		return
	}
	s.conns = append(s.conns, c)
	s.connects++
	n := len(s.conns)
	s.wg.Add(2)
	s.mu.Unlock()

	hello := map[string]any{
		"type": "hello", "num_connections": n,
		"debug_info":      map[string]any{"host": "slackfake", "build_number": 1, "approximate_connection_time": 3600},
		"connection_info": map[string]any{"app_id": s.cfg.appID},
	}
	if err := c.write(hello); err != nil {
		c.close()
	}
	s.mu.Lock()
	s.notifyLocked() // connected once hello is out
	s.mu.Unlock()
	go s.pingLoop(c)
	go s.readLoop(c)
}

func (s *Server) pingLoop(c *socketConn) {
	defer s.wg.Done()
	if err := c.ping(); err != nil {
		return
	}
	t := time.NewTicker(s.cfg.pingInterval)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
			if err := c.ping(); err != nil {
				return
			}
		}
	}
}

// readLoop records acks until the connection ends.
func (s *Server) readLoop(c *socketConn) {
	defer s.wg.Done()
	defer s.hangUp(c)
	for {
		_, raw, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		var ack struct {
			EnvelopeID string          `json:"envelope_id"`
			Payload    json.RawMessage `json:"payload"`
		}
		if json.Unmarshal(raw, &ack) != nil || ack.EnvelopeID == "" {
			s.t.Logf("slackfake: Socket Mode message that is not an ack: %s", raw)
			continue
		}
		s.mu.Lock()
		s.acks = append(s.acks, Ack{EnvelopeID: ack.EnvelopeID, Payload: ack.Payload, Time: s.cfg.now()})
		s.notifyLocked()
		s.mu.Unlock()
	}
}

// WaitConnections waits until the app has opened n Socket Mode connections
// in all, counting closed ones, and one is open.
func (s *Server) WaitConnections(ctx context.Context, n int) error {
	err := s.wait(ctx, func() bool { return s.connects >= n && len(s.conns) > 0 })
	if err != nil {
		return fmt.Errorf("waiting for Socket Mode connection %d: %w", n, err)
	}
	return nil
}

// Connections reports how many Socket Mode connections the app has opened
// in all, and how many are open.
func (s *Server) Connections() (total, open int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connects, len(s.conns)
}

// Deliver sends p over the newest open Socket Mode connection, waiting
// (bounded by ctx) for one to be open, and returns the envelope sent.
func (s *Server) Deliver(ctx context.Context, p Payload) (Envelope, error) {
	raw, err := p.socketPayload()
	if err != nil {
		return Envelope{}, err
	}
	s.mu.Lock()
	id := fmt.Sprintf("env-%d", s.nextLocked())
	s.mu.Unlock()
	// Slash commands and view submissions may be answered in the ack.
	_, submission := p.(ViewSubmission)
	env := Envelope{ID: id, Type: p.envelopeType(), Payload: raw, AcceptsResponsePayload: p.envelopeType() == EnvelopeSlashCommand || submission}
	return env, s.send(ctx, env)
}

// Redeliver sends env's payload again under a new envelope ID, as Slack
// does when an ack is late: retry_attempt one more, retry_reason "timeout".
func (s *Server) Redeliver(ctx context.Context, env Envelope) (Envelope, error) {
	s.mu.Lock()
	env.ID = fmt.Sprintf("env-%d", s.nextLocked())
	s.mu.Unlock()
	env.RetryAttempt++
	env.RetryReason = "timeout"
	return env, s.send(ctx, env)
}

// Slack's retries of an event it was not acknowledged (the Events API
// documentation, "Retries"): a delivery not acknowledged within AckTimeout
// failed, and the event is tried again up to MaxRetries times, nearly at
// once, then after a minute, then after five.
const (
	AckTimeout = 3 * time.Second
	MaxRetries = 3
)

// retryBackoff is the wait after a failed delivery before each retry.
var retryBackoff = [MaxRetries]time.Duration{0, time.Minute, 5 * time.Minute}

// RedeliverUnacked does what Slack does with the events_api envelopes the
// app did not acknowledge: each one whose retry is due by the fake's clock
// (AckTimeout after it was sent, and the backoff before its retry) and
// that has retries left is redelivered once, as Redeliver does. It returns
// the envelopes sent. Tests call it after moving the clock on.
func (s *Server) RedeliverUnacked(ctx context.Context) ([]Envelope, error) {
	now := s.cfg.now()
	s.mu.Lock()
	acked := map[string]bool{}
	for _, a := range s.acks {
		acked[a.EnvelopeID] = true
	}
	var due []Envelope
	for id, env := range s.envelopes {
		if env.Type != EnvelopeEvents || acked[id] || s.retried[id] || env.RetryAttempt >= MaxRetries {
			continue
		}
		if now.Before(s.sent[id].Add(AckTimeout + retryBackoff[env.RetryAttempt])) {
			continue
		}
		s.retried[id] = true
		due = append(due, env)
	}
	slices.SortFunc(due, func(a, b Envelope) int { return s.sent[a.ID].Compare(s.sent[b.ID]) })
	s.mu.Unlock()
	var out []Envelope
	for _, env := range due {
		again, err := s.Redeliver(ctx, env)
		if err != nil {
			return out, err
		}
		out = append(out, again)
	}
	return out, nil
}

func (s *Server) send(ctx context.Context, env Envelope) error {
	var c *socketConn
	if err := s.wait(ctx, func() bool {
		if len(s.conns) == 0 {
			return false
		}
		c = s.conns[len(s.conns)-1]
		s.envelopes[env.ID] = env
		s.sent[env.ID] = s.cfg.now()
		return true
	}); err != nil {
		return fmt.Errorf("deliver %s envelope: no Socket Mode connection: %w", env.Type, err)
	}
	if err := c.write(env); err != nil {
		return fmt.Errorf("deliver %s envelope %s: %w", env.Type, env.ID, err)
	}
	return nil
}

// Disconnect asks the app to reconnect, as Slack does before it rotates a
// connection: a disconnect message (reason "refresh_requested"), then the
// connection is closed.
func (s *Server) Disconnect(ctx context.Context) error {
	var c *socketConn
	if err := s.wait(ctx, func() bool {
		if len(s.conns) == 0 {
			return false
		}
		c = s.conns[len(s.conns)-1]
		return true
	}); err != nil {
		return fmt.Errorf("disconnect: %w", err)
	}
	err := c.write(map[string]any{"type": "disconnect", "reason": "refresh_requested",
		"debug_info": map[string]any{"host": "slackfake"}})
	s.hangUp(c)
	return err
}

// hangUp closes c and no longer counts it open: at once, as Slack's end
// of it is closed, not once its reader has seen the close.
func (s *Server) hangUp(c *socketConn) {
	c.close()
	s.mu.Lock()
	s.conns = slices.DeleteFunc(s.conns, func(x *socketConn) bool { return x == c })
	s.notifyLocked()
	s.mu.Unlock()
}

// Acks returns every ack received.
func (s *Server) Acks() []Ack {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.acks)
}

// WaitAck waits for the ack of one envelope.
func (s *Server) WaitAck(ctx context.Context, envelopeID string) (Ack, error) {
	var got Ack
	err := s.wait(ctx, func() bool {
		for _, a := range s.acks {
			if a.EnvelopeID == envelopeID {
				got = a
				return true
			}
		}
		return false
	})
	if err != nil {
		return Ack{}, fmt.Errorf("waiting for the ack of envelope %s: %w", envelopeID, err)
	}
	return got, nil
}
