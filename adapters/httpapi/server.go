package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Checker reports whether a dependency is usable; readiness runs each.
type Checker func(ctx context.Context) error

// Timeouts of the http.Server that HTTPServer returns.
const (
	ReadHeaderTimeout = 10 * time.Second
	// ReadTimeout bounds reading a whole request; bodies are at most
	// MaxBodyBytes.
	ReadTimeout = 30 * time.Second
	// WriteTimeout bounds a whole answer, from the end of its request's
	// headers. An event stream lifts it and bounds each of its messages
	// by StreamWriteTimeout instead.
	WriteTimeout = time.Minute
	// StreamWriteTimeout bounds the writing of one event-stream message:
	// a client that stops reading loses its stream (and its slot).
	StreamWriteTimeout = 30 * time.Second
	IdleTimeout        = 2 * time.Minute
)

// Server is the service's HTTP handler. Every request passes its guard
// (see Identity) before any handler, except on routes mounted with
// HandleSigned.
type Server struct {
	mux    *http.ServeMux
	log    *slog.Logger
	checks map[string]Checker
	ready  atomic.Bool
	guard  atomic.Pointer[guard]

	mu       sync.Mutex
	patterns []string
	signed   map[string]bool          // patterns mounted with HandleSigned
	info     map[string]func() string // what /readyz says besides its checks
}

// New returns a server answering /healthz and /readyz. Readiness fails
// until SetReady(true) and while any check fails. Until SetIdentity says
// otherwise, it answers only to loopback names and addresses.
func New(log *slog.Logger, checks map[string]Checker) *Server {
	if log == nil {
		log = slog.Default()
	}
	s := &Server{mux: http.NewServeMux(), log: log, checks: checks, signed: map[string]bool{}}
	g, _ := newGuard(Identity{}) // nothing to parse: cannot fail
	s.guard.Store(g)
	s.Handle("GET /healthz", http.HandlerFunc(s.healthz))
	s.Handle("GET /readyz", http.HandlerFunc(s.readyz))
	return s
}

// SetIdentity says which hosts and origin, besides loopback ones, are the
// service's own. It fails on a public URL that is not an http:// or
// https:// URL with a host, or a listen address that is not host:port.
func (s *Server) SetIdentity(id Identity) error {
	g, err := newGuard(id)
	if err != nil {
		return fmt.Errorf("HTTP server identity: %w", err)
	}
	s.guard.Store(g)
	return nil
}

// Handle mounts h on pattern (http.ServeMux syntax), behind the guard.
func (s *Server) Handle(pattern string, h http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mux.Handle(pattern, h)
	s.patterns = append(s.patterns, pattern)
}

// HandleSigned mounts h on pattern without the guard, for endpoints that
// other services call and that authenticate each request themselves
// (Slack's signed /slack/events, /slack/commands, /slack/interactions):
// neither the Host, nor the Origin, nor the content type of their
// requests is checked.
func (s *Server) HandleSigned(pattern string, h http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mux.Handle(pattern, h)
	s.patterns = append(s.patterns, pattern)
	s.signed[pattern] = true
}

// HTTPServer returns an http.Server for s with the timeouts above; its
// own errors (a panic in a handler, a TLS handshake) go to the log.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelError),
	}
}

// Patterns lists the patterns mounted so far, in order. The OpenAPI test
// compares them with docs/openapi.yaml.
func (s *Server) Patterns() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.patterns)
}

// SetInfo adds name to the body of /readyz, with what fn says at each
// request, e.g. SetInfo("model", tasks.ModelState) for "model": "ok".
// It informs people and never changes the status code: a replica whose
// model is on hold still serves the API and the dashboard. The names
// "status" and "checks" are the body's own and are not overwritten.
func (s *Server) SetInfo(name string, fn func() string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.info == nil {
		s.info = map[string]func() string{}
	}
	s.info[name] = fn
}

// SetReady marks start-up finished (true) or shutdown begun (false).
func (s *Server) SetReady(ok bool) { s.ready.Store(ok) }

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.isSigned(r) && !s.guard.Load().admit(w, r, s.log) {
		return
	}
	s.mux.ServeHTTP(w, r)
}

// isSigned reports whether the request goes to a route mounted with
// HandleSigned. The mux itself says which route a request goes to, so a
// path spelled differently cannot slip past the guard.
func (s *Server) isSigned(r *http.Request) bool {
	s.mu.Lock()
	none := len(s.signed) == 0
	s.mu.Unlock()
	if none {
		return false
	}
	_, pattern := s.mux.Handler(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.signed[pattern]
}

// healthz says the process is alive; it checks nothing else, so an
// orchestrator does not restart a replica whose database blinked.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz says whether this replica should get traffic: started, not
// shutting down, and every dependency answering within two seconds.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	out := map[string]string{}
	code := http.StatusOK
	if !s.ready.Load() {
		out["startup"] = "not ready"
		code = http.StatusServiceUnavailable
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	for name, check := range s.checks {
		if err := check(ctx); err != nil {
			s.log.Warn("readiness check failed", "check", name, "err", err)
			out[name] = "failing"
			code = http.StatusServiceUnavailable
			continue
		}
		out[name] = "ok"
	}
	status := "ready"
	if code != http.StatusOK {
		status = "not ready"
	}
	body := map[string]any{}
	s.mu.Lock()
	info := maps.Clone(s.info)
	s.mu.Unlock()
	for name, fn := range info {
		body[name] = fn()
	}
	body["status"], body["checks"] = status, out
	WriteJSON(w, code, body)
}

// WriteJSON writes v as a JSON response with status code.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
