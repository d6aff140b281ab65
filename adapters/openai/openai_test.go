package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskloom/taskloom/adapters/openai"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/internal/testkit"
	"github.com/taskloom/taskloom/plugin"
)

var epoch = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

type result struct {
	resp plugin.ModelResponse
	err  error
}

// setup returns a model that talks to a fresh fake server and waits on a
// fake clock.
func setup(t *testing.T, cfg openai.Config) (*openai.Model, *testkit.OpenAI, *clock.Fake) {
	t.Helper()
	srv := testkit.NewOpenAI(t)
	clk := clock.NewFake(epoch)
	if cfg.BaseURL == "" {
		cfg.BaseURL = srv.URL()
	}
	cfg.Clock = clk
	m, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m, srv, clk
}

// start runs Generate in the background; tests drive the clock meanwhile.
func start(ctx context.Context, m *openai.Model, req plugin.ModelRequest) <-chan result {
	ch := make(chan result, 1)
	go func() {
		resp, err := m.Generate(ctx, req)
		ch <- result{resp, err}
	}()
	return ch
}

func wait(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("Generate did not return")
		return result{}
	}
}

// generate calls Generate, failing the test if it does not return: code
// that wrongly waits on the fake clock would otherwise hang.
func generate(t *testing.T, m *openai.Model, req plugin.ModelRequest) result {
	t.Helper()
	return wait(t, start(t.Context(), m, req))
}

// blockUntilWaiting waits until the code under test waits on the clock.
func blockUntilWaiting(t *testing.T, clk *clock.Fake) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := clk.BlockUntil(ctx, 1); err != nil {
		t.Fatal("nothing waits on the clock:", err)
	}
}

// skipWaits lets n backoff waits pass, whatever their length.
func skipWaits(t *testing.T, clk *clock.Fake, n int) {
	t.Helper()
	for range n {
		blockUntilWaiting(t, clk)
		clk.Advance(time.Minute)
	}
}

var hello = plugin.ModelRequest{Messages: []plugin.ChatMessage{{Role: plugin.RoleUser, Content: "hello"}}}

func TestGenerateRequest(t *testing.T) {
	t.Parallel()
	temp := float32(0.2)
	schema := json.RawMessage(`{"type":"object","properties":{"action":{"type":"string"}},"required":["action"],"additionalProperties":false}`)
	tests := []struct {
		name  string
		model string
		req   plugin.ModelRequest
		want  map[string]any // fields of the request body, compared as JSON
		unset []string       // fields the body must not carry
	}{
		{
			name:  "plain text",
			model: "gpt-4o-mini",
			req: plugin.ModelRequest{
				Messages: []plugin.ChatMessage{
					{Role: plugin.RoleSystem, Content: "You are Taskloom."},
					{Role: plugin.RoleUser, Content: "Build auth"},
				},
				MaxTokens:   300,
				Temperature: &temp,
			},
			want: map[string]any{
				"model": "gpt-4o-mini",
				"messages": []any{
					map[string]any{"role": "system", "content": "You are Taskloom."},
					map[string]any{"role": "user", "content": "Build auth"},
				},
				"max_tokens":  300,
				"temperature": 0.2,
			},
			unset: []string{"response_format", "max_completion_tokens"},
		},
		{
			name:  "structured output",
			model: "llama3.1",
			req: plugin.ModelRequest{
				Messages: hello.Messages,
				Schema:   &plugin.JSONSchema{Name: "decision", Schema: schema, Strict: true},
			},
			want: map[string]any{
				"model": "llama3.1",
				"response_format": map[string]any{
					"type": "json_schema",
					"json_schema": map[string]any{
						"name":   "decision",
						"strict": true,
						"schema": mustDecode(t, schema),
					},
				},
			},
			unset: []string{"max_tokens", "temperature"},
		},
		{
			name:  "reasoning model takes max_completion_tokens",
			model: "gpt-5-mini",
			req:   plugin.ModelRequest{Messages: hello.Messages, MaxTokens: 500, Temperature: &temp},
			want:  map[string]any{"model": "gpt-5-mini", "max_completion_tokens": 500},
			unset: []string{"max_tokens", "temperature"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, srv, _ := setup(t, openai.Config{Model: tt.model})
			srv.Reply("ok")
			if r := generate(t, m, tt.req); r.err != nil {
				t.Fatal(r.err)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("got %d requests, want 1", len(reqs))
			}
			var body map[string]any
			if err := json.Unmarshal(reqs[0].Raw, &body); err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.want {
				if got, want := jsonString(t, body[k]), jsonString(t, v); got != want {
					t.Errorf("%s = %s, want %s", k, got, want)
				}
			}
			for _, k := range tt.unset {
				if v, ok := body[k]; ok {
					t.Errorf("%s = %v, want it left out", k, v)
				}
			}
		})
	}
}

func TestGenerateStructuredOutputSchema(t *testing.T) {
	t.Parallel()
	m, srv, _ := setup(t, openai.Config{})
	schema := json.RawMessage(`{"type":"object","anyOf":[{"required":["a"]}],"$schema":"x"}`)
	srv.Reply(`{"a":1}`)
	r := generate(t, m, plugin.ModelRequest{Messages: hello.Messages,
		Schema: &plugin.JSONSchema{Name: "decision", Schema: schema, Strict: true}})
	if r.err != nil {
		t.Fatal(r.err)
	}
	if resp := r.resp; resp.Text != `{"a":1}` {
		t.Errorf("Text = %q", resp.Text)
	}
	// The schema reaches the server verbatim, keywords go-openai does not
	// model included.
	got := srv.Requests()[0]
	if rf := got.Body.ResponseFormat; rf == nil || rf.Type != "json_schema" || rf.JSONSchema.Name != "decision" || !rf.JSONSchema.Strict {
		t.Fatalf("response_format = %+v", rf)
	}
	if g, w := jsonString(t, mustDecode(t, got.Schema())), jsonString(t, mustDecode(t, schema)); g != w {
		t.Errorf("schema = %s, want %s", g, w)
	}
}

func TestGenerateResponse(t *testing.T) {
	t.Parallel()
	m, srv, _ := setup(t, openai.Config{Model: "gpt-4o-mini"})
	srv.ReplyWithUsage("Hello there.", plugin.Usage{PromptTokens: 1200, CompletionTokens: 7, CachedTokens: 1024})
	r := generate(t, m, hello)
	if r.err != nil {
		t.Fatal(r.err)
	}
	resp := r.resp
	want := plugin.ModelResponse{
		Text:  "Hello there.",
		Model: "gpt-4o-mini",
		Usage: plugin.Usage{PromptTokens: 1200, CompletionTokens: 7, CachedTokens: 1024},
	}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("Generate = %+v, want %+v", resp, want)
	}
}

func TestGenerateAuthorization(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		key        string
		wantHeader string
		wantStatus int // 0: success
	}{
		{"right key", "sk-test", "Bearer sk-test", 0},
		{"wrong key is not retried", "sk-wrong", "Bearer sk-wrong", http.StatusUnauthorized},
		{"no key with a base URL", "", "", http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, srv, clk := setup(t, openai.Config{APIKey: tt.key})
			srv.RequireKey("sk-test")
			srv.Reply("ok")
			err := generate(t, m, hello).err
			if got := statusOf(err); got != tt.wantStatus {
				t.Fatalf("Generate error %v, want status %d", err, tt.wantStatus)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 || clk.Waiters() != 0 {
				t.Fatalf("%d requests and %d waits, want 1 and 0", len(reqs), clk.Waiters())
			}
			if reqs[0].Authorization != tt.wantHeader {
				t.Errorf("Authorization = %q, want %q", reqs[0].Authorization, tt.wantHeader)
			}
		})
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	m, srv, clk := setup(t, openai.Config{})
	srv.Fail(http.StatusTooManyRequests, "7", "")
	srv.Reply("finally")
	ch := start(t.Context(), m, hello)

	blockUntilWaiting(t, clk)
	clk.Advance(6900 * time.Millisecond)
	if n := len(srv.Requests()); n != 1 || clk.Waiters() != 1 {
		t.Fatalf("after 6.9s: %d requests, %d waits; want the retry still waiting", n, clk.Waiters())
	}
	select {
	case r := <-ch:
		t.Fatalf("Generate returned before Retry-After passed: %+v", r)
	default:
	}
	clk.Advance(100 * time.Millisecond)
	r := wait(t, ch)
	if r.err != nil || r.resp.Text != "finally" {
		t.Fatalf("Generate = %+v, %v", r.resp, r.err)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestRetryServerErrors(t *testing.T) {
	t.Parallel()
	m, srv, clk := setup(t, openai.Config{})
	srv.Fail(http.StatusInternalServerError, "", "")
	srv.Fail(http.StatusServiceUnavailable, "", "")
	srv.Reply("third time lucky")
	ch := start(t.Context(), m, hello)
	skipWaits(t, clk, 2)
	r := wait(t, ch)
	if r.err != nil || r.resp.Text != "third time lucky" {
		t.Fatalf("Generate = %+v, %v", r.resp, r.err)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

func TestClientErrorsAreNotRetried(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			t.Parallel()
			m, srv, clk := setup(t, openai.Config{Model: "gpt-4o-mini"})
			srv.Fail(status, "1", "")
			srv.Reply("must not be reached")
			err := generate(t, m, hello).err
			if got := statusOf(err); got != status {
				t.Fatalf("Generate error %v, want status %d", err, status)
			}
			if got := classOf(err); got != plugin.ModelPermanent {
				t.Errorf("class %v, want permanent", got)
			}
			prefix := fmt.Sprintf("openai: chat completion (model gpt-4o-mini): status %d: ", status)
			if !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("error %q does not start with %q", err, prefix)
			}
			if n := len(srv.Requests()); n != 1 || srv.Pending() != 1 || clk.Waiters() != 0 {
				t.Errorf("%d requests, %d replies left, %d waits; want 1, 1, 0", n, srv.Pending(), clk.Waiters())
			}
		})
	}
}

func TestRetriesExhausted(t *testing.T) {
	t.Parallel()
	m, srv, clk := setup(t, openai.Config{Model: "gpt-4o-mini", MaxRetries: 2})
	for range 3 {
		srv.Fail(http.StatusServiceUnavailable, "", "")
	}
	ch := start(t.Context(), m, hello)
	skipWaits(t, clk, 2)
	r := wait(t, ch)
	want := "openai: chat completion (model gpt-4o-mini): status 503 after 3 attempts: The engine is currently overloaded, please try again later."
	if r.err == nil || r.err.Error() != want {
		t.Fatalf("Generate error %v, want %q", r.err, want)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

func TestNetworkErrorsAreRetried(t *testing.T) {
	t.Parallel()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	clk := clock.NewFake(epoch)
	m, err := openai.New(openai.Config{BaseURL: closed.URL + "/v1", MaxRetries: 1, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ch := start(t.Context(), m, hello)
	skipWaits(t, clk, 1)
	r := wait(t, ch)
	if r.err == nil || !strings.Contains(r.err.Error(), "after 2 attempts") || !strings.Contains(r.err.Error(), "connection refused") {
		t.Fatalf("Generate error %v, want a refused connection after 2 attempts", r.err)
	}
}

func TestEmptyChoicesIsAnError(t *testing.T) {
	t.Parallel()
	m, srv, _ := setup(t, openai.Config{})
	srv.ReplyRaw(http.StatusOK, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":0,"total_tokens":3}}`)
	err := generate(t, m, hello).err
	if err == nil || !strings.Contains(err.Error(), "no choices") {
		t.Fatalf("Generate error %v, want one about no choices", err)
	}
}

// A refusal is an answer the caller cannot use, not a model failure: it
// reaches the caller as text, with its tokens.
func TestRefusalIsAnAnswer(t *testing.T) {
	t.Parallel()
	m, srv, _ := setup(t, openai.Config{})
	srv.ReplyRaw(http.StatusOK, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini",`+
		`"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that request."},"finish_reason":"stop"}],`+
		`"usage":{"prompt_tokens":40,"completion_tokens":9,"total_tokens":49}}`)
	r := generate(t, m, structuredReq())
	if r.err != nil {
		t.Fatalf("Generate error %v, want the refusal as the answer", r.err)
	}
	want := plugin.ModelResponse{Text: "I can't help with that request.", Model: "gpt-4o-mini",
		Usage: plugin.Usage{PromptTokens: 40, CompletionTokens: 9}}
	if !reflect.DeepEqual(r.resp, want) {
		t.Errorf("Generate = %+v, want %+v", r.resp, want)
	}
}

func TestCancelDuringRequest(t *testing.T) {
	t.Parallel()
	m, srv, clk := setup(t, openai.Config{})
	srv.Hang()
	ctx, cancel := context.WithCancel(t.Context())
	ch := start(ctx, m, hello)
	deadline := time.Now().Add(5 * time.Second)
	for len(srv.Requests()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the request never reached the server")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	r := wait(t, ch)
	want := "openai: chat completion (model gpt-4o-mini): context canceled"
	if !errors.Is(r.err, context.Canceled) || r.err.Error() != want || classOf(r.err) != plugin.ModelCanceled {
		t.Fatalf("Generate error %v (class %v), want %q (errors.Is context.Canceled, class canceled)", r.err, classOf(r.err), want)
	}
	if n := len(srv.Requests()); n != 1 || clk.Waiters() != 0 {
		t.Errorf("%d requests and %d waits after cancel, want 1 and 0", n, clk.Waiters())
	}
}

func TestCancelDuringBackoff(t *testing.T) {
	t.Parallel()
	m, srv, clk := setup(t, openai.Config{})
	srv.Fail(http.StatusTooManyRequests, "30", "")
	ctx, cancel := context.WithCancel(t.Context())
	ch := start(ctx, m, hello)
	blockUntilWaiting(t, clk)
	cancel()
	r := wait(t, ch)
	if !errors.Is(r.err, context.Canceled) || !strings.Contains(r.err.Error(), "status 429: waiting to retry") {
		t.Fatalf("Generate error %v, want context.Canceled while waiting to retry", r.err)
	}
	if c := classOf(r.err); c != plugin.ModelCanceled {
		t.Errorf("class %v, want canceled", c)
	}
	if n := len(srv.Requests()); n != 1 || clk.Waiters() != 0 {
		t.Errorf("%d requests and %d waits after cancel, want 1 and 0", n, clk.Waiters())
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     openai.Config
		wantErr string
	}{
		{"key only", openai.Config{APIKey: "sk-x"}, ""},
		{"base URL only", openai.Config{BaseURL: "http://localhost:11434/v1"}, ""},
		{"neither", openai.Config{}, "an API key or a base URL is required"},
		{"not a URL", openai.Config{BaseURL: "localhost:11434"}, "is not an http(s) URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := openai.New(tt.cfg)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatal(err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("New error %v, want %q", err, tt.wantErr)
			case err == nil && m.Name() != openai.DefaultModel:
				t.Errorf("Name() = %q, want %q", m.Name(), openai.DefaultModel)
			}
		})
	}
}

// TestTransientAndPermanent follows each kind of failure through the real
// client to the class the task service acts on, after the adapter's own
// retries.
func TestTransientAndPermanent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		script     func(*testkit.OpenAI)
		retries    int // waits to skip: MaxRetries is 2
		wantClass  plugin.ModelErrorClass
		wantStatus int
		wantReqs   int
	}{
		{"503 for longer than the retries", func(o *testkit.OpenAI) { o.FailN(3, http.StatusServiceUnavailable) }, 2, plugin.ModelTransient, 503, 3},
		{"an outage", func(o *testkit.OpenAI) { o.StartOutage(http.StatusBadGateway) }, 2, plugin.ModelTransient, 502, 3},
		{"429 for longer than the retries", func(o *testkit.OpenAI) { o.FailN(3, http.StatusTooManyRequests) }, 2, plugin.ModelTransient, 429, 3},
		{"408", func(o *testkit.OpenAI) { o.FailN(3, http.StatusRequestTimeout) }, 2, plugin.ModelTransient, 408, 3},
		{"409", func(o *testkit.OpenAI) { o.FailN(3, http.StatusConflict) }, 2, plugin.ModelTransient, 409, 3},
		{"dropped connections", func(o *testkit.OpenAI) { o.Drop(); o.Drop(); o.Drop() }, 2, plugin.ModelTransient, 0, 3},
		{"401 wrong key", func(o *testkit.OpenAI) { o.RequireKey("sk-other") }, 0, plugin.ModelPermanent, 401, 1},
		{"401 key revoked", func(o *testkit.OpenAI) { o.StartOutage(http.StatusUnauthorized) }, 0, plugin.ModelPermanent, 401, 1},
		{"403", func(o *testkit.OpenAI) { o.Fail(http.StatusForbidden, "", "") }, 0, plugin.ModelPermanent, 403, 1},
		{"404 no such model", func(o *testkit.OpenAI) { o.Fail(http.StatusNotFound, "", "") }, 0, plugin.ModelPermanent, 404, 1},
		{"400 not about response_format", func(o *testkit.OpenAI) {
			o.Fail(http.StatusBadRequest, "", `{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`)
		}, 0, plugin.ModelPermanent, 400, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, srv, clk := setup(t, openai.Config{APIKey: "sk-test", MaxRetries: 2})
			tt.script(srv)
			ch := start(t.Context(), m, hello)
			skipWaits(t, clk, tt.retries)
			err := wait(t, ch).err
			var me *plugin.ModelError
			if !errors.As(err, &me) || me.Class != tt.wantClass || me.Status != tt.wantStatus {
				t.Fatalf("Generate error %v (%+v), want class %v with status %d", err, me, tt.wantClass, tt.wantStatus)
			}
			if got := plugin.ClassifyModelError(fmt.Errorf("use model TEXT: %w", err)); got != tt.wantClass {
				t.Errorf("ClassifyModelError = %v, want %v", got, tt.wantClass)
			}
			if n := len(srv.Requests()); n != tt.wantReqs || clk.Waiters() != 0 {
				t.Errorf("%d requests and %d waits, want %d and 0", n, clk.Waiters(), tt.wantReqs)
			}
		})
	}
}

func TestConnectionRefusedIsTransient(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(epoch)
	m, err := openai.New(openai.Config{BaseURL: "http://" + addr + "/v1", MaxRetries: 1, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ch := start(t.Context(), m, hello)
	skipWaits(t, clk, 1)
	err = wait(t, ch).err
	if c := classOf(err); c != plugin.ModelTransient || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Generate error %v (class %v), want a transient refused connection", err, c)
	}
}

func TestDroppedConnectionIsRetried(t *testing.T) {
	t.Parallel()
	m, srv, clk := setup(t, openai.Config{})
	srv.Drop()
	srv.Reply("back")
	ch := start(t.Context(), m, hello)
	skipWaits(t, clk, 1)
	if r := wait(t, ch); r.err != nil || r.resp.Text != "back" {
		t.Fatalf("Generate = %+v, %v; want the answer after one retry", r.resp, r.err)
	}
}

// A deadline the caller measures on the fake clock (clock.WithTimeout)
// ends the call as a timeout, which is transient, not as a cancellation.
func TestCallerTimeoutIsTransient(t *testing.T) {
	t.Parallel()
	m, srv, clk := setup(t, openai.Config{})
	srv.Fail(http.StatusTooManyRequests, "30", "")
	ctx, cancel := clock.WithTimeout(t.Context(), clk, 10*time.Second)
	defer cancel()
	ch := start(ctx, m, hello)
	if err := clk.BlockUntil(t.Context(), 2); err != nil { // the deadline and the backoff
		t.Fatal(err)
	}
	clk.Advance(10 * time.Second)
	err := wait(t, ch).err
	if !errors.Is(err, context.DeadlineExceeded) || classOf(err) != plugin.ModelTransient {
		t.Fatalf("Generate error %v (class %v), want a transient deadline", err, classOf(err))
	}
}

func TestRequestNotSentIsPermanent(t *testing.T) {
	t.Parallel()
	// go-openai knows this model has no chat endpoint and sends nothing.
	m, srv, clk := setup(t, openai.Config{Model: "text-davinci-003"})
	err := generate(t, m, hello).err
	if classOf(err) != plugin.ModelPermanent || !strings.Contains(err.Error(), "request not sent") {
		t.Fatalf("Generate error %v (class %v), want a permanent error saying the request was not sent", err, classOf(err))
	}
	if n := len(srv.Requests()); n != 0 || clk.Waiters() != 0 {
		t.Errorf("%d requests and %d waits, want none", n, clk.Waiters())
	}
}

// classOf is the class the task service reads.
func classOf(err error) plugin.ModelErrorClass {
	var me *plugin.ModelError
	if !errors.As(err, &me) {
		return 0
	}
	return me.Class
}

func statusOf(err error) int {
	if err == nil {
		return 0
	}
	var e *openai.Error
	if !errors.As(err, &e) {
		return -1
	}
	return e.Status
}

func mustDecode(t *testing.T, raw []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return v
}

// jsonString encodes v canonically (sorted keys, float numbers) so that
// values decoded from JSON compare with values written in the test.
func jsonString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var norm any
	if err := json.Unmarshal(b, &norm); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(norm)
	return string(b)
}

// logLines collects the messages logged at warning level or above.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Enabled(_ context.Context, lvl slog.Level) bool { return lvl >= slog.LevelWarn }
func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, r.Message)
	return nil
}
func (l *logLines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logLines) WithGroup(string) slog.Handler      { return l }

func (l *logLines) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

var decisionSchema = &plugin.JSONSchema{Name: "decision", Schema: json.RawMessage(`{"type":"object","required":["action"],"properties":{"action":{"type":"string"}}}`)}

// structuredReq asks for a decision at temperature 0.4, as a task
// iteration does.
func structuredReq() plugin.ModelRequest {
	temp := float32(0.4)
	return plugin.ModelRequest{
		Messages: []plugin.ChatMessage{
			{Role: plugin.RoleSystem, Content: "You are Taskloom.\n"},
			{Role: plugin.RoleUser, Content: "Goal: build auth"},
		},
		Schema:      decisionSchema,
		Temperature: &temp,
	}
}

// formats lists the response_format of each request the fake received.
func formats(srv *testkit.OpenAI) []string {
	var out []string
	for _, r := range srv.Requests() {
		out = append(out, r.ResponseFormat())
	}
	return out
}

func TestResponseFormatFallback(t *testing.T) {
	t.Parallel()
	// OpenAI's answer for a model without structured outputs, and vLLM's
	// before 0.9 (a top-level object go-openai cannot read as an error).
	openAIStyle := func(srv *testkit.OpenAI, typ string) { srv.RejectResponseFormat(typ) }
	vllmStyle := func(srv *testkit.OpenAI, typ string) {
		srv.Fail(http.StatusBadRequest, "", `{"object":"error","message":"`+typ+` is not supported by the guided decoding backend","type":"BadRequestError","param":null,"code":400}`)
	}
	llamaCppStyle := func(srv *testkit.OpenAI, typ string) {
		srv.Fail(http.StatusBadRequest, "", `{"error":{"code":400,"message":"Unsupported response_format type: `+typ+`","type":"invalid_request_error"}}`)
	}
	tests := []struct {
		name    string
		reject  func(*testkit.OpenAI)
		want    []string // response_format of each request: two calls
		wantLog int
	}{
		{"json_schema refused", func(s *testkit.OpenAI) { openAIStyle(s, "json_schema") },
			[]string{"json_schema", "json_object", "json_object"}, 1},
		{"json_schema and json_object refused", func(s *testkit.OpenAI) { openAIStyle(s, "json_schema"); openAIStyle(s, "json_object") },
			[]string{"json_schema", "json_object", "", ""}, 2},
		{"vLLM's old error shape", func(s *testkit.OpenAI) { vllmStyle(s, "json_schema") },
			[]string{"json_schema", "json_object", "json_object"}, 1},
		{"llama.cpp's error message", func(s *testkit.OpenAI) { llamaCppStyle(s, "json_schema"); llamaCppStyle(s, "json_object") },
			[]string{"json_schema", "json_object", "", ""}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			logs := &logLines{}
			m, srv, clk := setup(t, openai.Config{Logger: slog.New(logs)})
			tt.reject(srv)
			srv.Reply(`{"action":"write_file"}`)
			srv.Reply(`{"action":"read_file"}`)
			for i, want := range []string{`{"action":"write_file"}`, `{"action":"read_file"}`} {
				r := generate(t, m, structuredReq())
				if r.err != nil || r.resp.Text != want {
					t.Fatalf("call %d = %q, %v; want %q", i+1, r.resp.Text, r.err, want)
				}
			}
			if got := formats(srv); !slices.Equal(got, tt.want) {
				t.Errorf("response_format of each request = %q, want %q", got, tt.want)
			}
			for i, r := range srv.Requests() {
				if temp, ok := r.Temperature(); !ok || float32(temp) != 0.4 {
					t.Errorf("request %d: temperature %v (%v), want 0.4 kept", i+1, temp, ok)
				}
				sys := r.Body.Messages[0].Content
				inPrompt := strings.HasSuffix(sys, "follows this JSON Schema:\n"+string(decisionSchema.Schema))
				if want := r.ResponseFormat() != "json_schema"; inPrompt != want || !strings.HasPrefix(sys, "You are Taskloom.") || len(r.Body.Messages) != 2 {
					t.Errorf("request %d (%q): system message %q; want the schema in it: %v", i+1, r.ResponseFormat(), sys, want)
				}
			}
			if got := logs.get(); len(got) != tt.wantLog || !strings.Contains(got[0], "refused response_format json_schema") {
				t.Errorf("logged %q, want %d lines, the first about json_schema", got, tt.wantLog)
			}
			if clk.Waiters() != 0 {
				t.Errorf("%d waits, want none", clk.Waiters())
			}
		})
	}
}

func TestResponseFormatFallbackLeavesOtherCallsAlone(t *testing.T) {
	t.Parallel()
	m, srv, _ := setup(t, openai.Config{MaxRetries: -1})
	// A 400 about something else is permanent and changes no mode; a 5xx
	// is transient even when it names response_format.
	srv.Fail(http.StatusBadRequest, "", `{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`)
	srv.Fail(http.StatusInternalServerError, "", `{"error":{"message":"response_format backend crashed","type":"server_error","param":"response_format","code":null}}`)
	for _, want := range []plugin.ModelErrorClass{plugin.ModelPermanent, plugin.ModelTransient} {
		if err := generate(t, m, structuredReq()).err; classOf(err) != want {
			t.Fatalf("Generate error %v (class %v), want %v", err, classOf(err), want)
		}
	}
	if got, want := formats(srv), []string{"json_schema", "json_schema"}; !slices.Equal(got, want) {
		t.Fatalf("response_format of each request = %q, want %q", got, want)
	}

	// Once degraded, free text still asks for nothing and gets no schema.
	srv.RejectResponseFormat("json_schema")
	srv.Reply(`{"action":"none"}`)
	srv.Reply("plain words")
	if r := generate(t, m, structuredReq()); r.err != nil {
		t.Fatal(r.err)
	}
	if r := generate(t, m, hello); r.err != nil || r.resp.Text != "plain words" {
		t.Fatalf("free text = %q, %v", r.resp.Text, r.err)
	}
	reqs := srv.Requests()
	if got, want := formats(srv), []string{"json_schema", "json_schema", "json_schema", "json_object", ""}; !slices.Equal(got, want) {
		t.Fatalf("response_format of each request = %q, want %q", got, want)
	}
	if last := reqs[len(reqs)-1]; len(last.Body.Messages) != 1 || last.Body.Messages[0].Content != "hello" {
		t.Errorf("free text request = %s, want it unchanged", last.Raw)
	}
}

// Calls that find the same refusal at once degrade the mode once.
func TestResponseFormatFallbackConcurrent(t *testing.T) {
	t.Parallel()
	logs := &logLines{}
	m, srv, _ := setup(t, openai.Config{Logger: slog.New(logs)})
	srv.RejectResponseFormat("json_schema", "json_object")
	srv.SetDefault(`{"action":"none"}`)
	const calls = 8
	chs := make([]<-chan result, calls)
	for i := range chs {
		chs[i] = start(t.Context(), m, structuredReq())
	}
	for _, ch := range chs {
		if r := wait(t, ch); r.err != nil {
			t.Fatal(r.err)
		}
	}
	if got := logs.get(); len(got) != 2 {
		t.Errorf("logged %q, want one line per step down", got)
	}
	srv.Reply(`{"action":"later"}`)
	n := len(srv.Requests())
	if r := generate(t, m, structuredReq()); r.err != nil || r.resp.Text != `{"action":"later"}` {
		t.Fatalf("a later call = %q, %v", r.resp.Text, r.err)
	}
	if got := formats(srv)[n:]; !slices.Equal(got, []string{""}) {
		t.Errorf("a later call sent %q, want prompt only at once", got)
	}
}
