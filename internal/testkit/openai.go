package testkit

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/taskloom/taskloom/plugin"
)

// OpenAI is a scripted OpenAI-compatible server. It answers
// POST /v1/chat/completions with the wire shapes of the real API, taking its
// answers in order from a queue the test fills with Reply, ReplyWithUsage,
// ReplyRaw, Fail, FailN, Hang and Drop. A request that finds the queue empty
// gets the default set with SetDefault or, when there is none, a 500 and a
// test error: a test says what the model answers, and an unexpected call
// fails it.
//
// Some answers do not depend on the order of calls and take nothing from the
// queue, as on a real server: an outage (StartOutage until EndOutage), a
// wrong key (RequireKey), a response_format the model does not support
// (RejectResponseFormat) and tools offered to a model that cannot call them
// (RejectTools), checked in that order, and a request the real API refuses
// as malformed tool calling (see ReplyToolCalls).
//
// It records every request it receives. It is safe for concurrent use.
type OpenAI struct {
	t    testing.TB
	srv  *httptest.Server
	done chan struct{} // closed at cleanup, releases hung requests

	mu      sync.Mutex
	key     string
	outage  int             // status every request gets; 0: none
	formats map[string]bool // response_format types answered with a 400
	noTools bool            // requests with tools answered with a 400
	script  []scripted
	def     *scripted
	reqs    []OpenAIRequest
	served  int
	// unrecorded: requests are answered but not kept (Unrecorded).
	unrecorded bool
	// models are the IDs GET /v1/models lists; listings counts those
	// requests, which Requests leaves out.
	models   []string
	listings int
	// latency is how long a chat completion takes to be answered
	// (SetLatency); accepted counts the TCP connections the server took.
	latency  time.Duration
	accepted atomic.Int64
}

// OpenAIRequest is one request the fake received.
type OpenAIRequest struct {
	Method string
	Path   string
	// Authorization is the header as sent ("Bearer sk-...").
	Authorization string
	Header        http.Header
	// Body is the request decoded by go-openai's own types; a body that
	// does not decode leaves it zero and is answered with a 400.
	Body goopenai.ChatCompletionRequest
	// Raw is the body as sent.
	Raw []byte
}

// Schema returns the JSON Schema the request asked the answer to follow,
// or nil when it did not ask for structured output.
func (r OpenAIRequest) Schema() json.RawMessage {
	rf := r.Body.ResponseFormat
	if rf == nil || rf.JSONSchema == nil || rf.JSONSchema.Schema == nil {
		return nil
	}
	b, err := rf.JSONSchema.Schema.MarshalJSON()
	if err != nil {
		return nil
	}
	return b
}

// ResponseFormat returns the type of response_format the request asked
// for ("json_schema", "json_object", "text"), or "" when it asked for none.
func (r OpenAIRequest) ResponseFormat() string {
	if r.Body.ResponseFormat == nil {
		return ""
	}
	return string(r.Body.ResponseFormat.Type)
}

// ToolNames returns the names of the functions the request offered as
// tools, in order.
func (r OpenAIRequest) ToolNames() []string {
	var out []string
	for _, t := range r.Body.Tools {
		if t.Function != nil {
			out = append(out, t.Function.Name)
		}
	}
	return out
}

// Temperature returns the temperature the request carried and whether it
// carried one (go-openai leaves a zero temperature out).
func (r OpenAIRequest) Temperature() (float64, bool) {
	var body struct {
		Temperature *float64 `json:"temperature"`
	}
	if json.Unmarshal(r.Raw, &body) != nil || body.Temperature == nil {
		return 0, false
	}
	return *body.Temperature, true
}

type scriptKind int

const (
	kindReply scriptKind = iota
	kindRaw
	kindFail
	kindHang
	kindDrop
)

type scripted struct {
	kind       scriptKind
	text       string
	calls      []OpenAIToolCall
	usage      *plugin.Usage
	status     int
	retryAfter string
	body       string
}

// NewOpenAI starts a fake OpenAI-compatible server that lives as long as
// the test.
func NewOpenAI(t testing.TB) *OpenAI {
	t.Helper()
	o := &OpenAI{t: t, done: make(chan struct{})}
	o.srv = httptest.NewUnstartedServer(http.HandlerFunc(o.serve))
	o.srv.Listener = countingListener{Listener: o.srv.Listener, n: &o.accepted}
	o.srv.Start()
	t.Cleanup(func() {
		close(o.done)
		o.srv.Close()
	})
	return o
}

// URL is the base URL including /v1, as OPENAI_BASE_URL takes it.
func (o *OpenAI) URL() string { return o.srv.URL + "/v1" }

// Client is an HTTP client for the fake server.
func (o *OpenAI) Client() *http.Client { return o.srv.Client() }

// Conns reports how many TCP connections the server has accepted: a
// client that keeps its connections between calls opens few.
func (o *OpenAI) Conns() int { return int(o.accepted.Load()) }

// countingListener counts the connections its listener accepts.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// SetLatency makes the server take d, on the wall clock, before it
// answers each chat completion it has an answer for (a slow model, for
// benchmarks that run in real time). A request whose client gives up
// first gets nothing.
func (o *OpenAI) SetLatency(d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.latency = d
}

// RequireKey makes the server answer 401, as the real API does, to any
// request whose Authorization header is not "Bearer key". Refused requests
// are recorded but take nothing from the script.
func (o *OpenAI) RequireKey(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.key = key
}

// Reply queues a successful answer whose content is text. Its usage is
// counted roughly (a token per four bytes), never zero.
func (o *OpenAI) Reply(text string) { o.push(scripted{kind: kindReply, text: text}) }

// ReplyWithUsage queues a successful answer reporting exactly u.
func (o *OpenAI) ReplyWithUsage(text string, u plugin.Usage) {
	o.push(scripted{kind: kindReply, text: text, usage: &u})
}

// OpenAIToolCall is one tool call of a scripted answer: the function's
// name as the request offered it, its arguments (JSON text, sent as is:
// a model may write invalid JSON) and the call's ID; an empty ID is
// replaced by one of the API's shape ("call_…").
type OpenAIToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// ReplyToolCalls queues an answer that calls tools, as the API sends one:
// the assistant message's tool_calls (type function), its content text or
// null when text is empty, and finish_reason "tool_calls".
//
// As the real API does, the server refuses with a 400, and takes nothing
// from the script for, a request whose tools are not functions with names
// matching ^[a-zA-Z0-9_-]{1,64}$, that sets tool_choice without tools, or
// whose messages break the tool-calling conversation: a "tool" message
// that answers no call of the assistant message before it, or an
// assistant message whose calls are not each answered by a "tool" message
// right after it.
func (o *OpenAI) ReplyToolCalls(text string, calls ...OpenAIToolCall) {
	o.push(scripted{kind: kindReply, text: text, calls: append([]OpenAIToolCall(nil), calls...)})
}

// RejectTools makes the server refuse, with a 400, every request that
// offers tools, as Ollama's OpenAI-compatible API does for a model that
// cannot call them ("… does not support tools"). Refused requests take
// nothing from the script.
func (o *OpenAI) RejectTools() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.noTools = true
}

// ReplyRaw queues an answer with the given status and body, sent as
// application/json verbatim: for responses the API should never give
// (no choices, malformed JSON).
func (o *OpenAI) ReplyRaw(status int, body string) {
	o.push(scripted{kind: kindRaw, status: status, body: body})
}

// Fail queues an error answer with status (429, 500, 503, 400, ...). A
// non-empty retryAfter is sent as the Retry-After header. An empty body is
// replaced by the error object the real API sends for that status.
func (o *OpenAI) Fail(status int, retryAfter, body string) {
	o.push(scripted{kind: kindFail, status: status, retryAfter: retryAfter, body: body})
}

// FailN queues n error answers with status, as Fail(status, "", "") does
// n times: a server that is down for n calls and then recovers.
func (o *OpenAI) FailN(n int, status int) {
	for range n {
		o.Fail(status, "", "")
	}
}

// Hang queues an answer that never comes: the request blocks until the
// client gives up (its context is done) or the test ends.
func (o *OpenAI) Hang() { o.push(scripted{kind: kindHang}) }

// Drop queues an answer that never comes because the server closes the
// connection once it has read the request: the client sees a network
// error (EOF), as when a proxy or the server process dies mid-call.
func (o *OpenAI) Drop() { o.push(scripted{kind: kindDrop}) }

// StartOutage makes every request get an error answer with status (503,
// 401, ...) and the real API's body for it, until EndOutage: the scripted
// queue waits meanwhile. Requests are still recorded.
func (o *OpenAI) StartOutage(status int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.outage = status
}

// EndOutage ends the outage StartOutage began; requests are served from
// the script again.
func (o *OpenAI) EndOutage() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.outage = 0
}

// RejectResponseFormat makes the server refuse, with a 400 and an
// invalid_request_error whose param is "response_format", every request
// whose response_format is one of types ("json_schema", "json_object"), as
// OpenAI does for a model without structured outputs and as local servers
// do for the modes they lack. Refused requests take nothing from the
// script.
func (o *OpenAI) RejectResponseFormat(types ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.formats == nil {
		o.formats = make(map[string]bool)
	}
	for _, t := range types {
		o.formats[t] = true
	}
}

// SetDefault makes every request that finds the queue empty get text.
func (o *OpenAI) SetDefault(text string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.def = &scripted{kind: kindReply, text: text}
}

// Unrecorded makes the fake keep no request from now on, for a benchmark
// whose hundreds of thousands of prompts Requests would otherwise hold.
func (o *OpenAI) Unrecorded() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.unrecorded = true
}

// Pending reports how many queued answers have not been served yet.
func (o *OpenAI) Pending() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.script)
}

// Requests returns copies of the requests received so far, in order.
func (o *OpenAI) Requests() []OpenAIRequest {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]OpenAIRequest, len(o.reqs))
	for i, r := range o.reqs {
		c := r
		c.Header = r.Header.Clone()
		c.Raw = append([]byte(nil), r.Raw...)
		// Decode afresh so that nothing in the copy (messages, schema)
		// shares memory with the record.
		c.Body = goopenai.ChatCompletionRequest{}
		_ = json.Unmarshal(c.Raw, &c.Body)
		out[i] = c
	}
	return out
}

func (o *OpenAI) push(s scripted) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.script = append(o.script, s)
}

// SetModels sets the model IDs GET /v1/models lists (by default
// gpt-4o-mini and gpt-4o).
func (o *OpenAI) SetModels(ids ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.models = ids
}

// Listings counts the GET /v1/models requests the server answered.
func (o *OpenAI) Listings() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.listings
}

// listModels answers GET /v1/models as the API does: the key checked
// first, then {"object":"list","data":[{"id","object":"model",…}]}.
func (o *OpenAI) listModels(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	o.listings++
	key, outage, ids := o.key, o.outage, o.models
	o.mu.Unlock()
	if ids == nil {
		ids = []string{"gpt-4o-mini", "gpt-4o"}
	}
	switch {
	case outage != 0:
		msg, typ, code := defaultOpenAIError(outage)
		writeOpenAIError(w, outage, msg, typ, code)
		return
	case key != "" && r.Header.Get("Authorization") != "Bearer "+key:
		writeOpenAIError(w, http.StatusUnauthorized, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
		return
	}
	data := make([]map[string]any, len(ids))
	for i, id := range ids {
		data[i] = map[string]any{"id": id, "object": "model", "created": 1700000000, "owned_by": "system"}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
}

func (o *OpenAI) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/v1/models" {
		o.listModels(w, r)
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		writeOpenAIError(w, http.StatusBadRequest, "could not read the request body", "invalid_request_error", nil)
		return
	}
	rec := OpenAIRequest{
		Method:        r.Method,
		Path:          r.URL.Path,
		Authorization: r.Header.Get("Authorization"),
		Header:        r.Header.Clone(),
		Raw:           raw,
	}
	decodeErr := json.Unmarshal(raw, &rec.Body)
	if decodeErr != nil {
		rec.Body = goopenai.ChatCompletionRequest{}
	}

	o.mu.Lock()
	if !o.unrecorded {
		o.reqs = append(o.reqs, rec)
	}
	key, outage := o.key, o.outage
	rejected := o.formats[rec.ResponseFormat()]
	noTools := o.noTools
	o.mu.Unlock()

	if r.URL.Path != "/v1/chat/completions" {
		writeOpenAIError(w, http.StatusNotFound, fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path), "invalid_request_error", nil)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeOpenAIError(w, http.StatusMethodNotAllowed, "Method not allowed; use POST", "invalid_request_error", nil)
		return
	}
	if outage != 0 {
		msg, typ, code := defaultOpenAIError(outage)
		writeOpenAIError(w, outage, msg, typ, code)
		return
	}
	if key != "" && rec.Authorization != "Bearer "+key {
		writeOpenAIError(w, http.StatusUnauthorized, "Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
		return
	}
	if decodeErr != nil {
		writeOpenAIError(w, http.StatusBadRequest, "We could not parse the JSON body of your request: "+decodeErr.Error(), "invalid_request_error", nil)
		return
	}
	if rejected {
		writeOpenAIErrorParam(w, http.StatusBadRequest,
			fmt.Sprintf("Invalid parameter: 'response_format' of type '%s' is not supported with this model.", rec.ResponseFormat()),
			"invalid_request_error", nil, "response_format")
		return
	}
	if noTools && len(rec.Body.Tools) > 0 {
		// Ollama's words and shape (it has no param or code for it).
		writeOpenAIError(w, http.StatusBadRequest, "registry.ollama.ai/library/"+rec.Body.Model+" does not support tools", "api_error", nil)
		return
	}
	if bad := invalidToolUse(rec.Body); bad != nil {
		writeOpenAIErrorParam(w, http.StatusBadRequest, bad.msg, "invalid_request_error", bad.code, bad.param)
		return
	}

	o.mu.Lock()
	var s scripted
	switch {
	case len(o.script) > 0:
		s = o.script[0]
		o.script = o.script[1:]
	case o.def != nil:
		s = *o.def
	default:
		n := len(o.reqs)
		o.mu.Unlock()
		o.t.Errorf("testkit.OpenAI: request %d (model %q) found no scripted reply", n, rec.Body.Model)
		writeOpenAIError(w, http.StatusInternalServerError, "testkit: the scripted OpenAI server has no reply queued", "server_error", nil)
		return
	}
	o.served++
	n := o.served
	latency := o.latency
	o.mu.Unlock()

	if latency > 0 {
		t := time.NewTimer(latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		case <-o.done:
			t.Stop()
			return
		}
	}

	switch s.kind {
	case kindHang:
		select {
		case <-r.Context().Done():
		case <-o.done:
		}
	case kindDrop:
		// Closing the connection without a word is what a crashed server
		// looks like; net/http does not retry a POST on it.
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	case kindRaw:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(s.status)
		_, _ = io.WriteString(w, s.body)
	case kindFail:
		if s.retryAfter != "" {
			w.Header().Set("Retry-After", s.retryAfter)
		}
		if s.body != "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(s.status)
			_, _ = io.WriteString(w, s.body)
			return
		}
		msg, typ, code := defaultOpenAIError(s.status)
		writeOpenAIError(w, s.status, msg, typ, code)
	case kindReply:
		writeCompletion(w, n, rec.Body, s)
	}
}

// The wire shapes of a chat completion, as api.openai.com sends them.
type (
	wireCompletion struct {
		ID                string       `json:"id"`
		Object            string       `json:"object"`
		Created           int64        `json:"created"`
		Model             string       `json:"model"`
		Choices           []wireChoice `json:"choices"`
		Usage             wireUsage    `json:"usage"`
		SystemFingerprint string       `json:"system_fingerprint"`
	}
	wireChoice struct {
		Index        int         `json:"index"`
		Message      wireMessage `json:"message"`
		Logprobs     any         `json:"logprobs"`
		FinishReason string      `json:"finish_reason"`
	}
	wireMessage struct {
		Role      string         `json:"role"`
		Content   *string        `json:"content"`
		Refusal   any            `json:"refusal"`
		ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
	}
	wireToolCall struct {
		ID       string       `json:"id"`
		Type     string       `json:"type"`
		Function wireFunction `json:"function"`
	}
	wireFunction struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	wireUsage struct {
		PromptTokens            int                   `json:"prompt_tokens"`
		CompletionTokens        int                   `json:"completion_tokens"`
		TotalTokens             int                   `json:"total_tokens"`
		PromptTokensDetails     wirePromptDetails     `json:"prompt_tokens_details"`
		CompletionTokensDetails wireCompletionDetails `json:"completion_tokens_details"`
	}
	wirePromptDetails struct {
		CachedTokens int `json:"cached_tokens"`
		AudioTokens  int `json:"audio_tokens"`
	}
	wireCompletionDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
		AudioTokens     int `json:"audio_tokens"`
	}
)

func writeCompletion(w http.ResponseWriter, n int, req goopenai.ChatCompletionRequest, s scripted) {
	u := plugin.Usage{CompletionTokens: roughTokens(s.text)}
	msg := wireMessage{Role: goopenai.ChatMessageRoleAssistant, Content: &s.text}
	finish := goopenai.FinishReasonStop
	if len(s.calls) > 0 {
		finish = goopenai.FinishReasonToolCalls
		if s.text == "" {
			msg.Content = nil
		}
		for i, c := range s.calls {
			id := c.ID
			if id == "" {
				id = fmt.Sprintf("call_testkit%06d%c", n, 'a'+rune(i%26))
			}
			msg.ToolCalls = append(msg.ToolCalls, wireToolCall{ID: id, Type: string(goopenai.ToolTypeFunction),
				Function: wireFunction{Name: c.Name, Arguments: c.Arguments}})
			u.CompletionTokens += roughTokens(c.Name + c.Arguments)
		}
	}
	if s.usage != nil {
		u = *s.usage
	} else {
		for _, m := range req.Messages {
			u.PromptTokens += roughTokens(m.Content)
		}
	}
	body := wireCompletion{
		ID:      fmt.Sprintf("chatcmpl-testkit%06d", n),
		Object:  "chat.completion",
		Created: time.Now().Unix(),
		Model:   req.Model,
		Choices: []wireChoice{{
			Message:      msg,
			FinishReason: string(finish),
		}},
		Usage: wireUsage{
			PromptTokens:        int(u.PromptTokens),
			CompletionTokens:    int(u.CompletionTokens),
			TotalTokens:         int(u.PromptTokens + u.CompletionTokens),
			PromptTokensDetails: wirePromptDetails{CachedTokens: int(u.CachedTokens)},
		},
		SystemFingerprint: "fp_testkit",
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", "req_testkit"+strconv.Itoa(n))
	_ = json.NewEncoder(w).Encode(body)
}

// functionNamePattern is what the API takes as a function's name.
var functionNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// apiRefusal is a 400 the API gives a malformed request.
type apiRefusal struct {
	msg   string
	param string
	code  any
}

// invalidToolUse is the API's refusal of req's tools and tool messages,
// or nil when they are well formed (see ReplyToolCalls).
func invalidToolUse(req goopenai.ChatCompletionRequest) *apiRefusal {
	badName := func(where, name string) *apiRefusal {
		switch {
		case len(name) > 64:
			return &apiRefusal{fmt.Sprintf("Invalid '%s': string too long. Expected a string with maximum length 64, but got a string with length %d instead.", where, len(name)), where, "string_above_max_length"}
		case !functionNamePattern.MatchString(name):
			return &apiRefusal{fmt.Sprintf("Invalid '%s': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", where), where, "invalid_value"}
		}
		return nil
	}
	for i, t := range req.Tools {
		if t.Type != goopenai.ToolTypeFunction || t.Function == nil {
			where := fmt.Sprintf("tools[%d].type", i)
			return &apiRefusal{fmt.Sprintf("Invalid value: '%s'. Supported values are: 'function' and 'custom'.", t.Type), where, "invalid_value"}
		}
		if bad := badName(fmt.Sprintf("tools[%d].function.name", i), t.Function.Name); bad != nil {
			return bad
		}
	}
	if req.ToolChoice != nil && len(req.Tools) == 0 {
		return &apiRefusal{"Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.", "tool_choice", nil}
	}
	var pending []string // calls of the last assistant message not answered yet
	answered := -1       // index of that assistant message
	for i, m := range req.Messages {
		if m.Role == goopenai.ChatMessageRoleTool {
			if answered < 0 {
				return &apiRefusal{"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", fmt.Sprintf("messages.[%d].role", i), nil}
			}
			j := slices.Index(pending, m.ToolCallID)
			if j < 0 {
				return &apiRefusal{fmt.Sprintf("Invalid parameter: 'tool_call_id' of '%s' not found in 'tool_calls' of previous message.", m.ToolCallID), fmt.Sprintf("messages.[%d].tool_call_id", i), nil}
			}
			pending = append(pending[:j], pending[j+1:]...)
			continue
		}
		if len(pending) > 0 {
			return unanswered(answered, pending)
		}
		answered, pending = -1, nil
		if m.Role == goopenai.ChatMessageRoleAssistant && len(m.ToolCalls) > 0 {
			answered = i
			for j, c := range m.ToolCalls {
				if bad := badName(fmt.Sprintf("messages[%d].tool_calls[%d].function.name", i, j), c.Function.Name); bad != nil {
					return bad
				}
				pending = append(pending, c.ID)
			}
		}
	}
	if len(pending) > 0 {
		return unanswered(answered, pending)
	}
	return nil
}

func unanswered(i int, ids []string) *apiRefusal {
	return &apiRefusal{"An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. " +
		"The following tool_call_ids did not have response messages: " + strings.Join(ids, ", "), fmt.Sprintf("messages.[%d].role", i), nil}
}

// roughTokens counts a token per four bytes, at least one.
func roughTokens(s string) int64 { return int64(len(s)/4 + 1) }

func defaultOpenAIError(status int) (msg, typ string, code any) {
	switch {
	case status == http.StatusTooManyRequests:
		return "Rate limit reached for requests. Please try again later.", "requests", "rate_limit_exceeded"
	case status == http.StatusUnauthorized:
		return "Incorrect API key provided.", "invalid_request_error", "invalid_api_key"
	case status == http.StatusNotFound:
		return "The model does not exist or you do not have access to it.", "invalid_request_error", "model_not_found"
	case status == http.StatusServiceUnavailable:
		return "The engine is currently overloaded, please try again later.", "server_error", nil
	case status >= 500:
		return "The server had an error while processing your request. Sorry about that!", "server_error", nil
	default:
		return fmt.Sprintf("Invalid request (testkit status %d).", status), "invalid_request_error", nil
	}
}

func writeOpenAIError(w http.ResponseWriter, status int, msg, typ string, code any) {
	writeOpenAIErrorParam(w, status, msg, typ, code, nil)
}

// writeOpenAIErrorParam writes the API's error object; param names the
// request field at fault, or is nil.
func writeOpenAIErrorParam(w http.ResponseWriter, status int, msg, typ string, code, param any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"error": map[string]any{"message": msg, "type": typ, "param": param, "code": code},
	})
}
