package soak

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskloom/taskloom/internal/testkit"
)

// model is the replicas' model: an OpenAI-compatible server that answers
// each iteration from its prompt alone (the goal names the kind of task,
// the prompt shows the answers and steps so far), so a replica killed
// between a call and its step, or a call retried, gets the same answer
// again. It fails (500) or hangs on request.
type model struct {
	srv *httptest.Server

	mu        sync.Mutex
	failUntil time.Time
	hangUntil time.Time

	calls, errors atomic.Int64
}

var (
	goalRE      = regexp.MustCompile(`(?m)^Goal:\n(soak (\w+) ([\w.]+))`)
	iterationRE = regexp.MustCompile(`Iteration (\d+) of at most`)
	writtenRE   = regexp.MustCompile(`Step \d+: write_file [^\n]*→ ok`)
	splitRE     = regexp.MustCompile(`Step \d+: create_subtask`)
)

func newModel(tb testing.TB) *model {
	m := &model{}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	tb.Cleanup(m.srv.Close)
	return m
}

// URL is the base URL OPENAI_BASE_URL takes.
func (m *model) URL() string { return m.srv.URL + "/v1" }

// fail makes the model answer 500 for d; hang makes it hold every call
// for d (or until the caller gives up) and then answer 503.
func (m *model) fail(d time.Duration) {
	m.mu.Lock()
	m.failUntil = time.Now().Add(d)
	m.mu.Unlock()
}

func (m *model) hang(d time.Duration) {
	m.mu.Lock()
	m.hangUntil = time.Now().Add(d)
	m.mu.Unlock()
}

func (m *model) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	m.calls.Add(1)
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	m.mu.Lock()
	failing, hangUntil := time.Now().Before(m.failUntil), m.hangUntil
	m.mu.Unlock()
	if d := time.Until(hangUntil); d > 0 {
		m.errors.Add(1)
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
		http.Error(w, `{"error":{"message":"overloaded","type":"server_error"}}`, http.StatusServiceUnavailable)
		return
	}
	if failing {
		m.errors.Add(1)
		http.Error(w, `{"error":{"message":"internal error","type":"server_error"}}`, http.StatusInternalServerError)
		return
	}
	var req struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var prompt strings.Builder
	for _, msg := range req.Messages {
		var s string
		if json.Unmarshal(msg.Content, &s) == nil {
			prompt.WriteString(s + "\n")
			continue
		}
		var parts []struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(msg.Content, &parts)
		for _, p := range parts {
			prompt.WriteString(p.Text + "\n")
		}
	}
	body, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-soak", "object": "chat.completion", "created": time.Now().Unix(), "model": "soak",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": decide(prompt.String())}}},
		"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
	})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// decide is the answer to a prompt: for an iteration of a soak task, by
// its kind — quick (three steps), ask (a question, then done once
// answered), approve (a write_file, which needs approval, then done once
// it ran), sub (a subtask, then done once it ended) — and for anything
// else (chat) a short reply.
func decide(prompt string) string {
	g := goalRE.FindStringSubmatch(prompt)
	if g == nil {
		return "Noted."
	}
	kind, id := g[2], g[3]
	it := 1
	if m := iterationRE.FindStringSubmatch(prompt); m != nil {
		it, _ = strconv.Atoi(m[1])
	}
	done := testkit.DecisionJSON("none", nil, 100, "done")
	switch kind {
	case "ask":
		if strings.Contains(prompt, "Answers you were given:") {
			return done
		}
		return testkit.DecisionJSON("ask_user", map[string]string{"question": "Which colour for " + id + "?"}, 20, "continue")
	case "approve":
		if writtenRE.MatchString(prompt) {
			return done
		}
		return testkit.DecisionJSON("write_file", map[string]string{"path": id + ".txt", "content": "approved " + id + "\n"}, 40, "continue")
	case "sub":
		if splitRE.MatchString(prompt) {
			return done
		}
		sub := fmt.Sprintf("soak quick %s.1", id)
		return testkit.DecisionJSON("create_subtask", map[string]string{"goal": sub, "name": sub}, 30, "continue")
	default: // quick
		if it >= 3 {
			return done
		}
		return testkit.DecisionJSON("list_files", map[string]string{}, 30*it, "continue")
	}
}
