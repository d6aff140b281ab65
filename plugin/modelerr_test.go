package plugin_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"syscall"
	"testing"

	"github.com/taskloom/taskloom/plugin"
)

// dialErr is what net/http returns when nothing listens: a *url.Error
// around the dial's *net.OpError.
func dialErr(inner error) error {
	return &url.Error{Op: "Post", URL: "http://127.0.0.1:9/v1/chat/completions",
		Err: &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}, Err: inner}}
}

func TestNewModelError(t *testing.T) {
	t.Parallel()
	refused := dialErr(os.NewSyscallError("connect", syscall.ECONNREFUSED))
	tests := []struct {
		name   string
		status int
		err    error
		want   plugin.ModelErrorClass
	}{
		{"connection refused", 0, refused, plugin.ModelTransient},
		{"connection reset", 0, &url.Error{Op: "Post", URL: "http://x/v1", Err: &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}}, plugin.ModelTransient},
		{"DNS failure", 0, dialErr(&net.DNSError{Err: "no such host", Name: "llm.internal", IsNotFound: true}), plugin.ModelTransient},
		{"EOF", 0, &url.Error{Op: "Post", URL: "http://x/v1", Err: io.EOF}, plugin.ModelTransient},
		{"body cut short", 0, fmt.Errorf("error, reading response body: %w", io.ErrUnexpectedEOF), plugin.ModelTransient},
		{"client timeout", 0, &url.Error{Op: "Post", URL: "http://x/v1", Err: context.DeadlineExceeded}, plugin.ModelTransient},
		{"caller canceled", 0, &url.Error{Op: "Post", URL: "http://x/v1", Err: context.Canceled}, plugin.ModelCanceled},
		{"canceled while waiting to retry a 429", 429, fmt.Errorf("waiting to retry: %w", context.Canceled), plugin.ModelCanceled},
		{"timed out waiting to retry a 401", 401, fmt.Errorf("waiting to retry: %w", context.DeadlineExceeded), plugin.ModelTransient},
		{"unknown error from a model plugin", 0, errors.New("boom"), plugin.ModelTransient},
		{"400", 400, errors.New("bad request"), plugin.ModelPermanent},
		{"401", 401, errors.New("Incorrect API key provided."), plugin.ModelPermanent},
		{"403", 403, errors.New("forbidden"), plugin.ModelPermanent},
		{"404", 404, errors.New("no such model"), plugin.ModelPermanent},
		{"422", 422, errors.New("unprocessable"), plugin.ModelPermanent},
		{"408", 408, errors.New("request timeout"), plugin.ModelTransient},
		{"409", 409, errors.New("conflict"), plugin.ModelTransient},
		{"429", 429, errors.New("rate limited"), plugin.ModelTransient},
		{"500", 500, errors.New("server error"), plugin.ModelTransient},
		{"503", 503, errors.New("overloaded"), plugin.ModelTransient},
		{"599", 599, errors.New("network connect timeout"), plugin.ModelTransient},
		{"200 with an unusable body", 200, errors.New("the response has no choices"), plugin.ModelTransient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			me := plugin.NewModelError(tt.status, tt.err)
			if me.Class != tt.want || me.Status != tt.status {
				t.Errorf("NewModelError(%d, %v) = class %v, status %d; want %v, %d", tt.status, tt.err, me.Class, me.Status, tt.want, tt.status)
			}
			if !errors.Is(me, tt.err) || me.Error() != tt.err.Error() {
				t.Errorf("the ModelError %q does not wrap %q", me, tt.err)
			}
			// However deep the service finds it, the class is the same.
			wrapped := fmt.Errorf("use model TEXT: %w", me)
			if got := plugin.ClassifyModelError(wrapped); got != tt.want {
				t.Errorf("ClassifyModelError(wrapped) = %v, want %v", got, tt.want)
			}
			var as *plugin.ModelError
			if !errors.As(wrapped, &as) || as != me {
				t.Errorf("errors.As does not find the ModelError in %v", wrapped)
			}
		})
	}
}

func TestClassifyModelError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want plugin.ModelErrorClass
	}{
		{"nil", nil, 0},
		{"the adapter's class wins", fmt.Errorf("use model TEXT: %w", &plugin.ModelError{Class: plugin.ModelPermanent, Err: io.EOF}), plugin.ModelPermanent},
		{"a ModelError without a class is classified", &plugin.ModelError{Status: 503, Err: errors.New("overloaded")}, plugin.ModelTransient},
		{"a ModelError without a class or status", &plugin.ModelError{Err: context.Canceled}, plugin.ModelCanceled},
		{"bare context.Canceled", context.Canceled, plugin.ModelCanceled},
		{"bare context.DeadlineExceeded", fmt.Errorf("model call: %w", context.DeadlineExceeded), plugin.ModelTransient},
		{"bare network error", dialErr(os.NewSyscallError("connect", syscall.ECONNREFUSED)), plugin.ModelTransient},
		{"no model registered", fmt.Errorf("use model TEXT: %w", plugin.ErrNoModel), plugin.ModelTransient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := plugin.ClassifyModelError(tt.err); got != tt.want {
				t.Errorf("ClassifyModelError(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestClassifyStatus(t *testing.T) {
	t.Parallel()
	for status := 100; status < 600; status++ {
		want := plugin.ModelTransient
		if status >= 400 && status < 500 && status != http.StatusRequestTimeout &&
			status != http.StatusConflict && status != http.StatusTooManyRequests {
			want = plugin.ModelPermanent
		}
		if got := plugin.ClassifyStatus(status); got != want {
			t.Errorf("ClassifyStatus(%d) = %v, want %v", status, got, want)
		}
	}
}

func TestModelErrorMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  *plugin.ModelError
		want string
	}{
		{&plugin.ModelError{Class: plugin.ModelPermanent, Status: 401, Err: errors.New("openai: chat completion (model m): status 401: Incorrect API key provided.")},
			"openai: chat completion (model m): status 401: Incorrect API key provided."},
		{&plugin.ModelError{Class: plugin.ModelTransient, Status: 503}, "model call failed (transient): status 503"},
		{&plugin.ModelError{Class: plugin.ModelCanceled}, "model call failed (canceled)"},
		{&plugin.ModelError{}, "model call failed (ModelErrorClass(0))"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}
