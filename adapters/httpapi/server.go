package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Checker reports whether a dependency is usable; readiness runs each.
type Checker func(ctx context.Context) error

// Server is the service's HTTP handler.
type Server struct {
	mux    *http.ServeMux
	log    *slog.Logger
	checks map[string]Checker
	ready  atomic.Bool

	mu       sync.Mutex
	patterns []string
}

// New returns a server answering /healthz and /readyz. Readiness fails
// until SetReady(true) and while any check fails.
func New(log *slog.Logger, checks map[string]Checker) *Server {
	if log == nil {
		log = slog.Default()
	}
	s := &Server{mux: http.NewServeMux(), log: log, checks: checks}
	s.Handle("GET /healthz", http.HandlerFunc(s.healthz))
	s.Handle("GET /readyz", http.HandlerFunc(s.readyz))
	return s
}

// Handle mounts h on pattern (http.ServeMux syntax).
func (s *Server) Handle(pattern string, h http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mux.Handle(pattern, h)
	s.patterns = append(s.patterns, pattern)
}

// Patterns lists the patterns mounted so far, in order. The OpenAPI test
// compares them with docs/openapi.yaml.
func (s *Server) Patterns() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.patterns)
}

// SetReady marks start-up finished (true) or shutdown begun (false).
func (s *Server) SetReady(ok bool) { s.ready.Store(ok) }

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

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
	WriteJSON(w, code, map[string]any{"status": status, "checks": out})
}

// WriteJSON writes v as a JSON response with status code.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
