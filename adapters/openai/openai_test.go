package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
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
	if resp != want {
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
