package app_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/taskloom/taskloom/internal/app"
	"github.com/taskloom/taskloom/internal/testkit"
)

// TestServeChecksTheModelEndpoint: an OPENAI_BASE_URL without /v1 is one
// warning naming the variable with the hint, and the service starts and
// answers all the same; no completion is spent on the check.
func TestServeChecksTheModelEndpoint(t *testing.T) {
	t.Parallel()
	fake := testkit.NewOpenAI(t)
	s := launch(t, map[string]string{"TASKLOOM_DATA_DIR": t.TempDir(), "TASKLOOM_HTTP_ADDR": "127.0.0.1:0",
		"OPENAI_BASE_URL": strings.TrimSuffix(fake.URL(), "/v1"), "OPENAI_MODEL": "gpt-4o-mini"})
	defer func() {
		s.stop()
		s.wait(t, app.ShutdownTimeout+5*time.Second)
	}()
	const want = "OPENAI_BASE_URL: GET "
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(s.stderr.String(), "an OpenAI-compatible base URL usually ends in /v1") {
		if time.Now().After(deadline) {
			t.Fatalf("no warning about the base URL:\n%s", s.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if logs := s.stderr.String(); strings.Count(logs, want) != 1 {
		t.Errorf("the warning is not one line naming OPENAI_BASE_URL:\n%s", logs)
	}
	resp, err := http.Get(s.base + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz = %v, %v; want the service up", resp, err)
	}
	resp.Body.Close()
	for _, r := range fake.Requests() {
		if r.Path == "/v1/chat/completions" {
			t.Error("the check spent a completion")
		}
	}
}
