package testkit_test

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/taskloom/taskloom/internal/testkit"
)

// client is go-openai talking to the fake, as the adapter does.
func client(o *testkit.OpenAI) *goopenai.Client {
	cfg := goopenai.DefaultConfig("sk-test")
	cfg.BaseURL = o.URL()
	cfg.HTTPClient = o.Client()
	return goopenai.NewClientWithConfig(cfg)
}

func chat(t *testing.T, c *goopenai.Client, format goopenai.ChatCompletionResponseFormatType, temp float32) (string, error) {
	t.Helper()
	req := goopenai.ChatCompletionRequest{
		Model:       "gpt-4o-mini",
		Messages:    []goopenai.ChatCompletionMessage{{Role: "user", Content: "answer in JSON"}},
		Temperature: temp,
	}
	switch format {
	case goopenai.ChatCompletionResponseFormatTypeJSONSchema:
		req.ResponseFormat = &goopenai.ChatCompletionResponseFormat{Type: format,
			JSONSchema: &goopenai.ChatCompletionResponseFormatJSONSchema{Name: "x", Schema: rawSchema(`{"type":"object"}`)}}
	case "":
	default:
		req.ResponseFormat = &goopenai.ChatCompletionResponseFormat{Type: format}
	}
	resp, err := c.CreateChatCompletion(t.Context(), req)
	if err != nil {
		return "", err
	}
	return resp.Choices[0].Message.Content, nil
}

type rawSchema string

func (s rawSchema) MarshalJSON() ([]byte, error) { return []byte(s), nil }

func apiStatus(err error) int {
	var apiErr *goopenai.APIError
	if errors.As(err, &apiErr) {
		return apiErr.HTTPStatusCode
	}
	return 0
}

func TestOpenAIFailN(t *testing.T) {
	t.Parallel()
	o := testkit.NewOpenAI(t)
	o.FailN(2, http.StatusServiceUnavailable)
	o.Reply("up again")
	c := client(o)
	for i := range 2 {
		if _, err := chat(t, c, "", 0); apiStatus(err) != http.StatusServiceUnavailable {
			t.Fatalf("call %d: error %v, want a 503", i+1, err)
		}
	}
	if text, err := chat(t, c, "", 0); err != nil || text != "up again" {
		t.Fatalf("call 3 = %q, %v; want the reply", text, err)
	}
}

func TestOpenAIOutage(t *testing.T) {
	t.Parallel()
	o := testkit.NewOpenAI(t)
	o.Reply("after the outage")
	o.StartOutage(http.StatusUnauthorized)
	c := client(o)
	for i := range 3 {
		_, err := chat(t, c, "", 0)
		var apiErr *goopenai.APIError
		if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != http.StatusUnauthorized || apiErr.Code != "invalid_api_key" {
			t.Fatalf("call %d during the outage: error %v, want OpenAI's 401", i+1, err)
		}
	}
	if o.Pending() != 1 || len(o.Requests()) != 3 {
		t.Fatalf("%d replies left and %d requests recorded, want 1 and 3", o.Pending(), len(o.Requests()))
	}
	o.EndOutage()
	if text, err := chat(t, c, "", 0); err != nil || text != "after the outage" {
		t.Fatalf("after EndOutage = %q, %v; want the scripted reply", text, err)
	}
}

func TestOpenAIRejectResponseFormat(t *testing.T) {
	t.Parallel()
	o := testkit.NewOpenAI(t)
	o.RejectResponseFormat("json_schema")
	o.Reply(`{"ok":true}`)
	c := client(o)

	_, err := chat(t, c, goopenai.ChatCompletionResponseFormatTypeJSONSchema, 0.2)
	var apiErr *goopenai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != http.StatusBadRequest ||
		apiErr.Param == nil || *apiErr.Param != "response_format" || apiErr.Type != "invalid_request_error" {
		t.Fatalf("json_schema: error %#v, want a 400 invalid_request_error with param response_format", err)
	}
	if o.Pending() != 1 {
		t.Fatalf("the refusal took a reply from the script")
	}
	if text, err := chat(t, c, goopenai.ChatCompletionResponseFormatTypeJSONObject, 0.7); err != nil || text != `{"ok":true}` {
		t.Fatalf("json_object = %q, %v; want the reply", text, err)
	}

	reqs := o.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests recorded, want 2", len(reqs))
	}
	for i, want := range []struct {
		format string
		temp   float64
	}{{"json_schema", 0.2}, {"json_object", 0.7}} {
		temp, ok := reqs[i].Temperature()
		if got := reqs[i].ResponseFormat(); got != want.format || !ok || float32(temp) != float32(want.temp) {
			t.Errorf("request %d: response_format %q, temperature %v (%v); want %q, %v", i+1, got, temp, ok, want.format, want.temp)
		}
	}
}

func TestOpenAIRequestWithoutFormatOrTemperature(t *testing.T) {
	t.Parallel()
	o := testkit.NewOpenAI(t)
	o.Reply("plain")
	if _, err := chat(t, client(o), "", 0); err != nil {
		t.Fatal(err)
	}
	r := o.Requests()[0]
	if f := r.ResponseFormat(); f != "" {
		t.Errorf("ResponseFormat() = %q, want none", f)
	}
	if temp, ok := r.Temperature(); ok {
		t.Errorf("Temperature() = %v, want none", temp)
	}
}

func TestOpenAIDrop(t *testing.T) {
	t.Parallel()
	o := testkit.NewOpenAI(t)
	o.Drop()
	o.Reply("reconnected")
	c := client(o)
	_, err := chat(t, c, "", 0)
	var urlErr *url.Error
	if !errors.As(err, &urlErr) || !errors.Is(err, io.EOF) {
		t.Fatalf("error %v, want a *url.Error around EOF", err)
	}
	if text, err := chat(t, c, "", 0); err != nil || text != "reconnected" {
		t.Fatalf("after the drop = %q, %v; want the reply", text, err)
	}
	if n := len(o.Requests()); n != 2 {
		t.Errorf("%d requests, want 2 (net/http must not resend the POST)", n)
	}
}

// TestOpenAIUnrecorded: after Unrecorded the fake still answers, and keeps
// none of the requests, as a long benchmark needs.
func TestOpenAIUnrecorded(t *testing.T) {
	o := testkit.NewOpenAI(t)
	o.SetDefault(`{"ok": true}`)
	c := client(o)
	if _, err := chat(t, c, "", 0); err != nil {
		t.Fatal(err)
	}
	o.Unrecorded()
	for range 3 {
		if got, err := chat(t, c, "", 0); err != nil || got != `{"ok": true}` {
			t.Fatalf("answer = %q, %v", got, err)
		}
	}
	if n := len(o.Requests()); n != 1 {
		t.Errorf("%d requests kept; want the 1 before Unrecorded", n)
	}
}
