package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"syscall"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/taskloom/taskloom/plugin"
)

// The errors below are built as go-openai v1.43 builds them (client.go's
// handleErrorResp and sendRequest, error.go): an error object in the body
// becomes an *APIError carrying the status; any other body a *RequestError
// whose Err is what json.Unmarshal said about it; a failed exchange is
// net/http's *url.Error, returned as is.

func apiError(status int, body string) error {
	var res goopenai.ErrorResponse
	if err := json.Unmarshal([]byte(body), &res); err != nil || res.Error == nil {
		panic(fmt.Sprintf("not an error object: %s", body))
	}
	res.Error.HTTPStatusCode = status
	res.Error.HTTPStatus = fmt.Sprintf("%d %s", status, http.StatusText(status))
	return res.Error
}

func requestError(status int, body string) error {
	var res goopenai.ErrorResponse
	err := json.Unmarshal([]byte(body), &res)
	return &goopenai.RequestError{HTTPStatus: fmt.Sprintf("%d %s", status, http.StatusText(status)),
		HTTPStatusCode: status, Err: err, Body: []byte(body)}
}

func transportError(err error) error {
	return &url.Error{Op: "Post", URL: "http://127.0.0.1:11434/v1/chat/completions", Err: err}
}

func dialError(err error) error {
	return transportError(&net.OpError{Op: "dial", Net: "tcp",
		Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 11434}, Err: err})
}

func TestFailureClass(t *testing.T) {
	t.Parallel()
	var decodeErr error
	{
		var resp goopenai.ChatCompletionResponse
		decodeErr = json.Unmarshal([]byte(`<html><body>Gateway</body></html>`), &resp)
	}
	tests := []struct {
		name       string
		err        error
		wantClass  plugin.ModelErrorClass
		wantStatus int
	}{
		{"401 wrong key", apiError(401, `{"error":{"message":"Incorrect API key provided: sk-wrong.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`), plugin.ModelPermanent, 401},
		{"403 region", apiError(403, `{"error":{"message":"Country, region, or territory not supported","type":"request_forbidden","param":null,"code":"unsupported_country_region_territory"}}`), plugin.ModelPermanent, 403},
		{"404 model", apiError(404, `{"error":{"message":"The model 'gpt-9' does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`), plugin.ModelPermanent, 404},
		{"400 context length", apiError(400, `{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`), plugin.ModelPermanent, 400},
		{"400 vLLM, top-level object", requestError(400, `{"object":"error","message":"max_tokens must be at least 1","type":"BadRequestError","param":null,"code":400}`), plugin.ModelPermanent, 400},
		{"422 FastAPI detail", requestError(422, `{"detail":[{"loc":["body","messages"],"msg":"field required"}]}`), plugin.ModelPermanent, 422},
		{"408", apiError(408, `{"error":{"message":"Request timed out.","type":"timeout","param":null,"code":null}}`), plugin.ModelTransient, 408},
		{"409", apiError(409, `{"error":{"message":"Conflict.","type":"invalid_request_error","param":null,"code":null}}`), plugin.ModelTransient, 409},
		{"429 rate limit", apiError(429, `{"error":{"message":"Rate limit reached for gpt-4o-mini.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`), plugin.ModelTransient, 429},
		{"500", apiError(500, `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`), plugin.ModelTransient, 500},
		{"502 HTML from a proxy", requestError(502, `<html><head><title>502 Bad Gateway</title></head></html>`), plugin.ModelTransient, 502},
		{"503 overloaded", apiError(503, `{"error":{"message":"The engine is currently overloaded, please try again later.","type":"server_error","param":null,"code":null}}`), plugin.ModelTransient, 503},
		{"504 empty body", requestError(504, ``), plugin.ModelTransient, 504},
		{"connection refused", dialError(os.NewSyscallError("connect", syscall.ECONNREFUSED)), plugin.ModelTransient, 0},
		{"DNS failure", dialError(&net.DNSError{Err: "no such host", Name: "llm.internal", IsNotFound: true}), plugin.ModelTransient, 0},
		{"connection reset", transportError(&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}), plugin.ModelTransient, 0},
		{"connection closed before an answer", transportError(io.EOF), plugin.ModelTransient, 0},
		{"HTTP client timeout", transportError(context.DeadlineExceeded), plugin.ModelTransient, 0},
		{"body cut short", fmt.Errorf("error, reading response body: %w", io.ErrUnexpectedEOF), plugin.ModelTransient, 0},
		{"200 that is not JSON", decodeErr, plugin.ModelTransient, 0},
		{"caller canceled during the request", transportError(context.Canceled), plugin.ModelCanceled, 0},
	}
	m := &Model{model: "gpt-4o-mini"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fail := m.failure(statusOf(tt.err), tt.err, 1)
			if fail.Class != tt.wantClass || fail.Status != tt.wantStatus {
				t.Errorf("class %v, status %d; want %v, %d (%v)", fail.Class, fail.Status, tt.wantClass, tt.wantStatus, tt.err)
			}
			var e *Error
			if !errors.As(fail, &e) || !errors.Is(fail, tt.err) || e.Status != tt.wantStatus {
				t.Errorf("%v does not wrap an *Error with status %d around %v", fail, tt.wantStatus, tt.err)
			}
		})
	}
}

func TestFormatRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"OpenAI, model without structured outputs", apiError(400, `{"error":{"message":"Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.","type":"invalid_request_error","param":null,"code":null}}`), true},
		{"OpenAI, invalid schema", apiError(400, `{"error":{"message":"Invalid schema for response_format 'decision': 'additionalProperties' is required to be supplied and to be false.","type":"invalid_request_error","param":"response_format","code":null}}`), true},
		{"param alone", apiError(400, `{"error":{"message":"Grammar could not be compiled.","type":"BadRequestError","param":"response_format","code":400}}`), true},
		{"OpenAI, json_object without the word JSON", apiError(400, `{"error":{"message":"'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.","type":"invalid_request_error","param":"messages","code":null}}`), true},
		{"vLLM before 0.9", requestError(400, `{"object":"error","message":"json_schema is not supported by the guided decoding backend","type":"BadRequestError","param":null,"code":400}`), true},
		{"FastAPI validation", requestError(422, `{"detail":[{"loc":["body","response_format","type"],"msg":"unexpected value; permitted: 'text', 'json_object'"}]}`), true},
		{"wrapped as Generate wraps it", (&Model{model: "m"}).failure(400, apiError(400, `{"error":{"message":"Unsupported response_format type: json_schema","type":"invalid_request_error"}}`), 1), true},
		{"400 about the messages", apiError(400, `{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`), false},
		{"401 mentioning response_format", apiError(401, `{"error":{"message":"No key for response_format json_schema.","type":"invalid_request_error","param":"response_format","code":null}}`), false},
		{"500 mentioning json_schema", requestError(500, `json_schema backend crashed`), false},
		{"network error", dialError(os.NewSyscallError("connect", syscall.ECONNREFUSED)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := formatRefused(tt.err); got != tt.want {
				t.Errorf("formatRefused(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
