package openai_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/taskloom/taskloom/adapters/openai"
	"github.com/taskloom/taskloom/internal/testkit"
)

// TestCheck: GET /models tells a working endpoint from a wrong base URL,
// a refused key and a model the endpoint does not serve, without a
// completion; a 404 from a /v1 base URL proves nothing.
func TestCheck(t *testing.T) {
	fake := testkit.NewOpenAI(t)
	fake.RequireKey("sk-right")
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	noList := httptest.NewServer(http.NotFoundHandler())
	defer noList.Close()
	for _, tc := range []struct {
		name, base, key, model string
		setting, reason        string // "" for no problem
	}{
		{"it answers", fake.URL(), "sk-right", "gpt-4o-mini", "", ""},
		{"a wrong key", fake.URL(), "sk-wrong", "gpt-4o-mini", openai.SettingAPIKey, "the endpoint refused the key (401): Incorrect API key provided."},
		{"a model it does not serve", fake.URL(), "sk-right", "llama3", openai.SettingModel, `does not list the model "llama3"; it lists gpt-4o-mini, gpt-4o`},
		{"a base URL without /v1", strings.TrimSuffix(fake.URL(), "/v1"), "sk-right", "gpt-4o-mini", openai.SettingBaseURL, "/models answered 404; an OpenAI-compatible base URL usually ends in /v1"},
		{"nothing listening", closed.URL + "/v1", "sk-right", "gpt-4o-mini", openai.SettingBaseURL, "cannot reach " + closed.URL + "/v1"},
		{"a server that lists no models", noList.URL + "/v1", "", "local", "", ""},
	} {
		m, err := openai.New(openai.Config{BaseURL: tc.base, APIKey: tc.key, Model: tc.model, MaxRetries: -1})
		if err != nil {
			t.Fatal(err)
		}
		err = m.Check(context.Background())
		var p *openai.Problem
		switch {
		case tc.setting == "" && err != nil:
			t.Errorf("%s: Check = %v; want no problem", tc.name, err)
		case tc.setting != "" && (!errors.As(err, &p) || p.Setting != tc.setting || !strings.Contains(p.Reason, tc.reason)):
			t.Errorf("%s: Check = %#v; want a problem with %s saying %q", tc.name, err, tc.setting, tc.reason)
		}
	}
	for _, r := range fake.Requests() {
		if r.Path == "/v1/chat/completions" {
			t.Errorf("a check asked for a completion")
		}
	}
	if n := fake.Listings(); n != 3 {
		t.Errorf("GET /v1/models was asked %d times; want 3", n)
	}
}
