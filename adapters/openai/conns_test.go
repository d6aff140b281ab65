package openai_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/openai"
	"github.com/taskloom/taskloom/plugin"
)

// TestConnectionsAreKeptForTheWorkers: 256 workers calling a model that
// takes a while, round after round, reuse their connections: the server
// sees at most two per worker, not a new one for most calls (Go's
// default keeps 2 idle a host: 256 + 3 × 254 in four rounds).
func TestConnectionsAreKeptForTheWorkers(t *testing.T) {
	const workers, rounds = 256, 4
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(200 * time.Millisecond) // a slow model: every worker's call is in flight at once
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"c","object":"chat.completion","created":1,"model":"m",` +
			`"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],` +
			`"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	m, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "m", MaxConns: workers, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for range rounds {
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				if _, err := m.Generate(ctx, plugin.ModelRequest{Messages: []plugin.ChatMessage{{Role: "user", Content: "hi"}}}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	if n := conns.Load(); n > 2*workers {
		t.Fatalf("%d calls opened %d connections; want at most %d", workers*rounds, n, 2*workers)
	}
}
