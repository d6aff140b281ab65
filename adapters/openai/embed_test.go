package openai_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/taskloom/taskloom/adapters/openai"
)

// TestEmbeddings: the vectors come back in the order of the texts,
// whatever order the server lists them in; a server without embeddings
// (the OpenAI fake's 404) is an error, which recall takes as "keep the
// full-text order".
func TestEmbeddings(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
			Model string   `json:"model"`
		}
		if r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&req) != nil || req.Model != "embed-small" {
			http.Error(w, `{"error": {"message": "no"}}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"object": "list", "data": [
			{"object": "embedding", "index": 1, "embedding": [0, 1]},
			{"object": "embedding", "index": 0, "embedding": [1, 0]}], "model": "embed-small"}`))
	}))
	defer srv.Close()
	m, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Embedder("embed-small").Embed(context.Background(), []string{"a", "b"})
	if err != nil || !reflect.DeepEqual(got, [][]float32{{1, 0}, {0, 1}}) {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := m.Embedder("other").Embed(context.Background(), []string{"a"}); err == nil {
		t.Fatal("a server without the model answered")
	}
}
