package testkit_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/taskloom/taskloom/internal/testkit"
)

// TestOpenAICountsConnections: Conns counts the TCP connections the
// server accepted — one for calls over a kept connection, one a call
// when the client keeps none.
func TestOpenAICountsConnections(t *testing.T) {
	t.Parallel()
	o := testkit.NewOpenAI(t)
	o.SetDefault("ok")
	kept := client(o)
	for range 3 {
		if _, err := chat(t, kept, "", 0); err != nil {
			t.Fatal(err)
		}
	}
	if n := o.Conns(); n != 1 {
		t.Fatalf("3 calls over a kept connection: %d connections, want 1", n)
	}
	cfg := goopenai.DefaultConfig("sk-test")
	cfg.BaseURL = o.URL()
	cfg.HTTPClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	fresh := goopenai.NewClientWithConfig(cfg)
	for range 3 {
		if _, err := chat(t, fresh, "", 0); err != nil {
			t.Fatal(err)
		}
	}
	if n := o.Conns(); n != 4 {
		t.Fatalf("3 more calls without keep-alives: %d connections, want 4", n)
	}
}

// TestOpenAILatencyDelaysTheAnswer: with a latency longer than the
// caller waits, the call ends with the caller's deadline, not an answer.
func TestOpenAILatencyDelaysTheAnswer(t *testing.T) {
	t.Parallel()
	o := testkit.NewOpenAI(t)
	o.SetLatency(time.Hour)
	o.SetDefault("late")
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := client(o).CreateChatCompletion(ctx, goopenai.ChatCompletionRequest{
		Model: "gpt-4o-mini", Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "hi"}}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the caller's deadline", err)
	}
}
