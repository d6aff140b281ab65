package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// client calls the Taskloom API.
type client struct {
	base  string // without a trailing slash
	token string
	http  *http.Client
	// stream has no overall timeout: an event stream lasts as long as
	// the task it follows.
	stream *http.Client
}

func newClient(base, token string) (*client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("TASKLOOM_URL %q is not an http:// or https:// URL", base)
	}
	return &client{
		base:   strings.TrimRight(base, "/"),
		token:  token,
		http:   &http.Client{Timeout: 30 * time.Second},
		stream: &http.Client{},
	}, nil
}

// apiError is a refusal by the API: its status and its "error" sentence.
type apiError struct {
	Status  int
	Message string
	// RetryAfter is how long the server asked to wait before trying
	// again (its Retry-After header in seconds); 0 when it did not say.
	RetryAfter time.Duration
}

func (e *apiError) Error() string { return e.Message }

// unreachable is a failure to talk to the server at all.
type unreachable struct {
	base string
	err  error
}

func (e *unreachable) Error() string {
	return fmt.Sprintf("cannot reach Taskloom at %s (is `taskloom serve` running there? TASKLOOM_URL says where): %v", e.base, e.err)
}

func (e *unreachable) Unwrap() error { return e.err }

func (c *client) request(ctx context.Context, method, path string, body any) (*http.Request, error) {
	if body == nil && method != http.MethodGet && method != http.MethodHead {
		// The server takes a change only with a JSON body (a web page
		// cannot send one unasked); pause, resume and cancel need
		// nothing more than an empty object.
		body = struct{}{}
	}
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "taskloom-cli")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// call sends a request and decodes a JSON answer into out; it returns the
// raw body too, for --json.
func (c *client) call(ctx context.Context, method, path string, body, out any) ([]byte, error) {
	req, err := c.request(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &unreachable{base: c.base, err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		return nil, refusal(resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return nil, fmt.Errorf("%s %s: the answer is not what this client understands: %w", method, path, err)
		}
	}
	return raw, nil
}

// retryAfter reads a Retry-After header given in seconds; 0 when absent
// or not a number of seconds (an HTTP date is not expected here).
func retryAfter(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// refusal is the apiError of an answer with status code status and body
// raw: its "error" sentence, or what the body says.
func refusal(status int, raw []byte) *apiError {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Error != "" {
		return &apiError{Status: status, Message: e.Error}
	}
	msg := strings.TrimSpace(string(raw))
	if len(msg) > 200 || msg == "" {
		msg = http.StatusText(status)
	}
	return &apiError{Status: status, Message: fmt.Sprintf("the server answered %d: %s", status, msg)}
}

// sseEvent is one Server-Sent Events message.
type sseEvent struct {
	ID    string
	Event string
	Data  string
}

// events opens /api/events with a cursor and calls fn for every message
// until fn says stop, the stream ends or ctx is done. It returns the last
// event ID seen.
func (c *client) events(ctx context.Context, query, lastID string, fn func(sseEvent) (stop bool)) (string, bool, error) {
	req, err := c.request(ctx, "GET", "/api/events"+query, nil)
	if err != nil {
		return lastID, false, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := c.stream.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return lastID, false, ctx.Err()
		}
		return lastID, false, &unreachable{base: c.base, err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		err := refusal(resp.StatusCode, raw)
		err.RetryAfter = retryAfter(resp.Header.Get("Retry-After"))
		return lastID, false, err
	}
	r := bufio.NewReader(resp.Body)
	var ev sseEvent
	var data []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			if ctx.Err() != nil {
				return lastID, false, ctx.Err()
			}
			if errors.Is(err, io.EOF) {
				return lastID, false, nil
			}
			return lastID, false, fmt.Errorf("read the event stream: %w", err)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if ev.ID != "" {
				lastID = ev.ID
			}
			if len(data) > 0 {
				ev.Data = strings.Join(data, "\n")
				if fn(ev) {
					return lastID, true, nil
				}
			}
			ev, data = sseEvent{}, nil
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			ev.ID = value
		case "event":
			ev.Event = value
		case "data":
			data = append(data, value)
		}
	}
}
