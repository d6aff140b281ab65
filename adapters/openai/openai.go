package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/plugin"
)

// Defaults for Config.
const (
	DefaultModel      = "gpt-4o-mini"
	DefaultMaxRetries = 4
)

const (
	// firstBackoff is the wait before the first retry when the server does
	// not say; it doubles with each retry.
	firstBackoff = 500 * time.Millisecond
	// maxWait caps a single wait, Retry-After included: a server asking
	// for an hour gets asked again after a minute, and the caller's
	// context (a task lease, a chat reply) bounds the whole.
	maxWait = 60 * time.Second
)

// Config configures a Model.
type Config struct {
	// APIKey is sent as a bearer token. It may be empty when BaseURL
	// points at a server that needs none (Ollama, llama.cpp).
	APIKey string
	// BaseURL is the API root including /v1; empty means OpenAI's.
	BaseURL string
	// Model names the model; empty means DefaultModel.
	Model string
	// HTTPClient sends the requests; nil means a new http.Client whose
	// transport keeps MaxConns idle connections to the server.
	HTTPClient *http.Client
	// MaxConns is how many calls may be in flight at once (the workers,
	// and chat beside them): so many connections are kept open between
	// calls, instead of Go's default of 2 a host, which makes most calls
	// of a busy replica open a new connection (a TLS handshake each, on
	// a real endpoint). 0 keeps the default.
	MaxConns int
	// MaxRetries is how many times a failed call is retried after the
	// first attempt: 0 means DefaultMaxRetries, a negative value none.
	MaxRetries int
	// Clock times the waits between retries; nil means the wall clock.
	Clock clock.Clock
	// Logger receives a line per retry; nil means slog.Default().
	Logger *slog.Logger
}

// Model is the OpenAI-compatible model.
type Model struct {
	client     *goopenai.Client
	base       string   // the API root requests go to
	baseURL    *url.URL // base, parsed
	model      string
	maxRetries int
	clock      clock.Clock
	log        *slog.Logger
	// jitter picks the wait in [d/2, d]; tests may fix it.
	jitter func(d time.Duration) time.Duration
	// format is the structured mode that requests with a schema start
	// with: it only ever moves down, when the server refuses one.
	format atomic.Int32
}

// structured is how a request with a schema asks for an answer that
// follows it, from the most the server must support to the least.
type structured int32

const (
	// withJSONSchema sends the schema as response_format json_schema.
	withJSONSchema structured = iota
	// withJSONObject sends response_format json_object (any JSON object)
	// and the schema in the prompt.
	withJSONObject
	// promptOnly sends no response_format, only the schema in the prompt;
	// the caller's parser copes with fenced or embedded JSON.
	promptOnly
)

func (s structured) String() string {
	switch s {
	case withJSONSchema:
		return "response_format json_schema"
	case withJSONObject:
		return "response_format json_object"
	}
	return "no response_format"
}

var _ plugin.Model = (*Model)(nil)

// transport is Go's default transport keeping up to conns idle
// connections to each host (and at least its default).
func transport(conns int) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if conns > t.MaxIdleConnsPerHost {
		t.MaxIdleConnsPerHost = conns
	}
	if conns > t.MaxIdleConns {
		t.MaxIdleConns = conns
	}
	return t
}

// New returns a model configured by cfg. It needs an API key or a base URL.
func New(cfg Config) (*Model, error) {
	if cfg.APIKey == "" && cfg.BaseURL == "" {
		return nil, errors.New("openai: an API key or a base URL is required")
	}
	cc := goopenai.DefaultConfig(cfg.APIKey)
	if cfg.BaseURL != "" {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("openai: base URL %q is not an http(s) URL", cfg.BaseURL)
		}
		cc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: transport(cfg.MaxConns)}
	}
	cc.HTTPClient = headerRecorder{hc}
	base, err := url.Parse(cc.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("openai: base URL %q: %w", cc.BaseURL, err)
	}
	m := &Model{
		client:     goopenai.NewClientWithConfig(cc),
		base:       cc.BaseURL,
		baseURL:    base,
		model:      cfg.Model,
		maxRetries: cfg.MaxRetries,
		clock:      cfg.Clock,
		log:        cfg.Logger,
		jitter:     equalJitter,
	}
	if m.model == "" {
		m.model = DefaultModel
	}
	switch {
	case m.maxRetries == 0:
		m.maxRetries = DefaultMaxRetries
	case m.maxRetries < 0:
		m.maxRetries = 0
	}
	if m.clock == nil {
		m.clock = clock.Real{}
	}
	if m.log == nil {
		m.log = slog.Default()
	}
	return m, nil
}

// Name is the model name requests carry.
func (m *Model) Name() string { return m.model }

// Generate sends req as one chat completion, retrying transient failures.
// A failure is a *plugin.ModelError around an *Error: the class says what
// it means for the caller, the *Error what happened.
//
// A request with a schema asks for structured output the strongest way the
// server has not refused: when it answers that it does not support the
// response_format asked for, the same call is made again the next way down
// (json_schema, then json_object, then the prompt alone), and every later
// call starts there. The caller sees only the answer.
func (m *Model) Generate(ctx context.Context, req plugin.ModelRequest) (plugin.ModelResponse, error) {
	if len(req.Tools) > 0 {
		return m.generateWithTools(ctx, req)
	}
	if req.Schema == nil {
		return m.complete(ctx, m.request(req, withJSONSchema))
	}
	mode := structured(m.format.Load())
	for {
		resp, err := m.complete(ctx, m.request(req, mode))
		if err == nil || mode == promptOnly || !formatRefused(err) {
			return resp, err
		}
		mode = m.degrade(ctx, mode, err)
	}
}

// degrade makes the Model, for the rest of the process, ask with the mode
// below from, which the server refused with err, and returns the mode to
// use now: that one, or a lower one that another call reached first.
func (m *Model) degrade(ctx context.Context, from structured, err error) structured {
	to := from + 1
	for {
		cur := structured(m.format.Load())
		if cur >= to {
			return cur
		}
		if m.format.CompareAndSwap(int32(cur), int32(to)) {
			m.log.LogAttrs(ctx, slog.LevelWarn, "openai: the server refused "+from.String()+"; asking with "+to.String()+" from now on",
				slog.String("model", m.model), slog.String("error", detail(err)))
			return to
		}
	}
}

// formatRefused reports whether err is the server refusing the request's
// response_format: a 400 (or 422, the validation status of FastAPI-based
// servers) whose error names response_format, json_schema or json_object in
// its param or message — or anywhere in a body that is not OpenAI's error
// object (vLLM before 0.9 answers {"object":"error","message":...}).
func formatRefused(err error) bool {
	var text string
	var apiErr *goopenai.APIError
	var reqErr *goopenai.RequestError
	switch {
	case errors.As(err, &apiErr):
		if apiErr.HTTPStatusCode != http.StatusBadRequest && apiErr.HTTPStatusCode != http.StatusUnprocessableEntity {
			return false
		}
		if apiErr.Param != nil && *apiErr.Param == "response_format" {
			return true
		}
		text = apiErr.Message
	case errors.As(err, &reqErr):
		if reqErr.HTTPStatusCode != http.StatusBadRequest && reqErr.HTTPStatusCode != http.StatusUnprocessableEntity {
			return false
		}
		text = string(reqErr.Body)
	default:
		return false
	}
	text = strings.ToLower(text)
	for _, w := range []string{"response_format", "response format", "json_schema", "json_object"} {
		if strings.Contains(text, w) {
			return true
		}
	}
	return false
}

// complete sends creq, retrying transient failures.
func (m *Model) complete(ctx context.Context, creq goopenai.ChatCompletionRequest) (plugin.ModelResponse, error) {
	// The messages, most of the request, are encoded here once; go-openai
	// encodes the rest (see encodeMessages).
	messages, err := encodeMessages(creq.Messages)
	if err != nil {
		return plugin.ModelResponse{}, &plugin.ModelError{Class: plugin.ModelPermanent,
			Err: &Error{Model: m.model, Attempts: 1, Err: fmt.Errorf("request not sent: %w", err)}}
	}
	creq.Messages = nil
	for attempt := 1; ; attempt++ {
		ex := exchange{messages: messages}
		resp, err := m.client.CreateChatCompletion(context.WithValue(ctx, exchangeKey{}, &ex), creq)
		if err == nil {
			return m.response(resp, attempt)
		}
		if ctx.Err() != nil {
			return plugin.ModelResponse{}, m.failure(0, ctxErr(ctx), attempt)
		}
		if !ex.sent {
			// go-openai refused to send it (a model it knows cannot chat,
			// a parameter it knows the model refuses): the same request
			// fails the same way every time.
			return plugin.ModelResponse{}, &plugin.ModelError{Class: plugin.ModelPermanent,
				Err: &Error{Model: m.model, Attempts: attempt, Err: fmt.Errorf("request not sent: %w", err)}}
		}
		fail := m.failure(statusOf(err), err, attempt)
		if fail.Class != plugin.ModelTransient || attempt > m.maxRetries {
			return plugin.ModelResponse{}, fail
		}
		wait, fromServer := retryAfter(ex.header, m.clock.Now())
		if !fromServer {
			wait = m.jitter(backoff(attempt))
		}
		wait = min(wait, maxWait)
		m.log.LogAttrs(ctx, slog.LevelWarn, "openai: chat completion failed, retrying",
			slog.String("model", m.model), slog.Int("status", fail.Status), slog.Int("attempt", attempt),
			slog.Duration("wait", wait), slog.Bool("retry_after", fromServer), slog.String("error", detail(err)))
		if clock.Sleep(ctx, m.clock, wait) != nil {
			return plugin.ModelResponse{}, m.failure(fail.Status, fmt.Errorf("waiting to retry: %w", ctxErr(ctx)), attempt)
		}
	}
}

// failure is the error Generate returns when err, after an answer with
// status (0 when none came), ended its attempts: an *Error saying what
// happened, in a *plugin.ModelError whose class plugin.NewModelError gives.
func (m *Model) failure(status int, err error, attempts int) *plugin.ModelError {
	return plugin.NewModelError(status, &Error{Model: m.model, Status: status, Attempts: attempts, Err: err})
}

// ctxErr is why ctx is done. A deadline measured on a fake clock
// (clock.WithTimeout) ends ctx as canceled with DeadlineExceeded as its
// cause: the call timed out, it was not called off.
func ctxErr(ctx context.Context) error {
	if clock.TimedOut(ctx) {
		return context.DeadlineExceeded
	}
	return ctx.Err()
}

// request is req as go-openai sends it, asking for structured output the
// way mode says when req has a schema.
func (m *Model) request(req plugin.ModelRequest, mode structured) goopenai.ChatCompletionRequest {
	creq := goopenai.ChatCompletionRequest{
		Model:     m.model,
		Messages:  make([]goopenai.ChatCompletionMessage, len(req.Messages)),
		MaxTokens: req.MaxTokens,
	}
	names := newToolNames(req.Tools)
	for i, msg := range req.Messages {
		creq.Messages[i] = names.message(msg)
	}
	creq.Tools, creq.ToolChoice = names.tools(req)
	if req.Temperature != nil {
		// go-openai omits a zero temperature, so 0 means the server's
		// default rather than greedy decoding.
		creq.Temperature = *req.Temperature
	}
	if s := req.Schema; s != nil {
		switch mode {
		case withJSONSchema:
			creq.ResponseFormat = &goopenai.ChatCompletionResponseFormat{
				Type: goopenai.ChatCompletionResponseFormatTypeJSONSchema,
				JSONSchema: &goopenai.ChatCompletionResponseFormatJSONSchema{
					Name:   s.Name,
					Schema: s.Schema,
					Strict: s.Strict,
				},
			}
		case withJSONObject:
			creq.ResponseFormat = &goopenai.ChatCompletionResponseFormat{
				Type: goopenai.ChatCompletionResponseFormatTypeJSONObject,
			}
			creq.Messages = withSchemaInPrompt(creq.Messages, s)
		case promptOnly:
			creq.Messages = withSchemaInPrompt(creq.Messages, s)
		}
	}
	// Reasoning models (o1, o3, gpt-5, ...) refuse max_tokens and sampling
	// settings; everything else, including most local servers, only knows
	// max_tokens. go-openai's validator knows which is which.
	if goopenai.NewReasoningValidator().Validate(creq) != nil {
		creq.MaxCompletionTokens, creq.MaxTokens = creq.MaxTokens, 0
		creq.Temperature = 0
	}
	return creq
}

// withSchemaInPrompt asks in words for what response_format json_schema
// asks of the server: the schema goes at the end of the first system
// message, which stays the same from call to call so that prompt caching
// still applies, or in a system message of its own when there is none.
// (OpenAI also wants the word JSON in the messages for json_object.)
func withSchemaInPrompt(msgs []goopenai.ChatCompletionMessage, s *plugin.JSONSchema) []goopenai.ChatCompletionMessage {
	note := "Answer with one JSON object, and nothing else, that follows this JSON Schema:\n" + string(s.Schema)
	for i, msg := range msgs {
		if msg.Role == plugin.RoleSystem {
			msgs[i].Content = strings.TrimRight(msg.Content, "\n") + "\n\n" + note
			return msgs
		}
	}
	return append([]goopenai.ChatCompletionMessage{{Role: plugin.RoleSystem, Content: note}}, msgs...)
}

func (m *Model) response(resp goopenai.ChatCompletionResponse, attempts int) (plugin.ModelResponse, error) {
	if len(resp.Choices) == 0 {
		return plugin.ModelResponse{}, m.failure(http.StatusOK, errors.New("the response has no choices"), attempts)
	}
	msg := resp.Choices[0].Message
	text := msg.Content
	if text == "" && msg.Refusal != "" {
		// A refusal is an answer, not a failure of the model: the caller
		// sees it as one it cannot use (for a task, a failed step that
		// says why) and its tokens are counted. As an error it would be
		// transient and the same request would be sent again and again.
		m.log.Warn("openai: the model refused", slog.String("model", m.model), slog.String("refusal", msg.Refusal))
		text = msg.Refusal
	}
	out := plugin.ModelResponse{
		Text:      text,
		ToolCalls: toolNames{}.calls(msg.ToolCalls), // as named on the wire; Generate names them back
		Model:     resp.Model,
		Usage: plugin.Usage{
			PromptTokens:     int64(resp.Usage.PromptTokens),
			CompletionTokens: int64(resp.Usage.CompletionTokens),
		},
	}
	if d := resp.Usage.PromptTokensDetails; d != nil {
		out.Usage.CachedTokens = int64(d.CachedTokens)
	}
	if out.Model == "" {
		out.Model = m.model
	}
	if resp.Choices[0].FinishReason == goopenai.FinishReasonLength {
		m.log.Warn("openai: answer cut short by the token limit", slog.String("model", out.Model),
			slog.Int64("completion_tokens", out.Usage.CompletionTokens))
	}
	return out, nil
}

// Error is a chat completion that failed: the model asked, the HTTP status
// of the last answer (0 when none came) and how many attempts were made.
// It unwraps to go-openai's *APIError or *RequestError, a network error, or
// the context's error.
type Error struct {
	Model    string
	Status   int
	Attempts int
	Err      error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "openai: chat completion (model %s)", e.Model)
	if e.Status != 0 && e.Status != http.StatusOK {
		fmt.Fprintf(&b, ": status %d", e.Status)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " after %d attempts", e.Attempts)
	}
	b.WriteString(": ")
	b.WriteString(detail(e.Err))
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// detail is the part of a go-openai error worth showing: its message
// without the status it repeats.
func detail(err error) string {
	var apiErr *goopenai.APIError
	var reqErr *goopenai.RequestError
	switch {
	case errors.As(err, &apiErr):
		return apiErr.Message
	case errors.As(err, &reqErr):
		body := strings.TrimSpace(string(reqErr.Body))
		if len(body) > 300 {
			body = body[:300] + "…"
		}
		if body == "" {
			body = http.StatusText(reqErr.HTTPStatusCode)
		}
		return body
	}
	return err.Error()
}

func statusOf(err error) int {
	var apiErr *goopenai.APIError
	if errors.As(err, &apiErr) {
		return apiErr.HTTPStatusCode
	}
	var reqErr *goopenai.RequestError
	if errors.As(err, &reqErr) {
		return reqErr.HTTPStatusCode
	}
	return 0
}

// backoff is the wait before retry n (from 1) when the server gives none:
// 0.5s, 1s, 2s, 4s, ... up to maxWait.
func backoff(n int) time.Duration {
	d := firstBackoff
	for i := 1; i < n && d < maxWait; i++ {
		d *= 2
	}
	return min(d, maxWait)
}

// equalJitter spreads d over [d/2, d] so that clients refused together do
// not come back together.
func equalJitter(d time.Duration) time.Duration {
	half := d / 2
	return half + rand.N(d-half+1)
}

// retryAfter reads how long the server asked us to wait: retry-after-ms
// (OpenAI's), or Retry-After in seconds or as an HTTP date.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// exchangeKey carries, in a request's context, the *exchange that
// headerRecorder fills in.
type exchangeKey struct{}

// exchange is what go-openai does not tell about a call: whether the
// request was sent at all, and the answer's headers, which its errors drop
// although Retry-After is in them; and what it is not given to encode: the
// request's messages, encoded (encodeMessages).
type exchange struct {
	sent     bool
	header   http.Header
	messages []byte
}

// headerRecorder is the HTTP client go-openai calls.
type headerRecorder struct{ c *http.Client }

func (r headerRecorder) Do(req *http.Request) (*http.Response, error) {
	ex, _ := req.Context().Value(exchangeKey{}).(*exchange)
	if ex != nil && ex.messages != nil {
		if err := withMessages(req, ex.messages); err != nil {
			return nil, err
		}
	}
	if ex != nil {
		ex.sent = true
	}
	resp, err := r.c.Do(req)
	if resp != nil && ex != nil {
		ex.header = resp.Header
	}
	return resp, err
}

// go-openai encodes a message with its own MarshalJSON, whose output
// encoding/json then scans and compacts again: for a prompt of 10 KB,
// most of the CPU an iteration spends on the request. So complete encodes
// the messages itself, once, as wireMessage, and hands go-openai the
// request without them; headerRecorder puts them back into the body
// go-openai made, in place of its "messages":null.

// wireMessage is a message as go-openai's MarshalJSON encodes one with no
// MultiContent (the model never sends parts).
type wireMessage struct {
	Role             string                 `json:"role"`
	Content          string                 `json:"content,omitempty"`
	Refusal          string                 `json:"refusal,omitempty"`
	Name             string                 `json:"name,omitempty"`
	ReasoningContent string                 `json:"reasoning_content,omitempty"`
	FunctionCall     *goopenai.FunctionCall `json:"function_call,omitempty"`
	ToolCalls        []goopenai.ToolCall    `json:"tool_calls,omitempty"`
	ToolCallID       string                 `json:"tool_call_id,omitempty"`
}

// encodeMessages is msgs as the JSON array go-openai would send.
func encodeMessages(msgs []goopenai.ChatCompletionMessage) ([]byte, error) {
	wire := make([]wireMessage, len(msgs))
	for i, m := range msgs {
		if len(m.MultiContent) > 0 {
			return nil, errors.New("a message of content parts")
		}
		wire[i] = wireMessage{Role: m.Role, Content: m.Content, Refusal: m.Refusal, Name: m.Name,
			ReasoningContent: m.ReasoningContent, FunctionCall: m.FunctionCall, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID}
	}
	out, err := json.Marshal(wire)
	if err != nil {
		return nil, fmt.Errorf("encode the messages: %w", err)
	}
	return out, nil
}

// noMessages is how go-openai encodes a request without messages: the
// field follows the model, whose string cannot hold it unescaped.
var noMessages = []byte(`,"messages":null`)

// withMessages makes req's body, go-openai's encoding of a request
// without messages, carry messages.
func withMessages(req *http.Request, messages []byte) error {
	if req.Body == nil {
		return errors.New("openai: the request has no body to put the messages in")
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return fmt.Errorf("openai: read the request's body: %w", err)
	}
	i := bytes.Index(body, noMessages)
	if i < 0 {
		return errors.New("openai: the request's body has no place for the messages")
	}
	full := make([]byte, 0, len(body)+len(messages))
	full = append(full, body[:i+len(noMessages)-len("null")]...)
	full = append(full, messages...)
	full = append(full, body[i+len(noMessages):]...)
	req.Body = io.NopCloser(bytes.NewReader(full))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(full)), nil }
	req.ContentLength = int64(len(full))
	return nil
}
