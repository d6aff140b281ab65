package openai

import (
	"context"
	"errors"
	"fmt"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/taskloom/taskloom/plugin"
)

// EmbedTimeout bounds one embeddings call: re-ranking what is recalled is
// worth a moment, not a prompt's wait (docs/memory.md).
const EmbedTimeout = 10 * time.Second

// Embeddings is an embedding model of the same server as a Model
// (OPENAI_EMBEDDING_MODEL), for re-ranking what is recalled. It does not
// retry: a failure leaves recall's full-text order.
type Embeddings struct {
	m     *Model
	model string
}

var _ plugin.Embedder = Embeddings{}

// Embedder returns the embedding model named model on m's server.
func (m *Model) Embedder(model string) Embeddings { return Embeddings{m: m, model: model} }

// Embed returns one vector per text, in order.
func (e Embeddings) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, EmbedTimeout)
	defer cancel()
	resp, err := e.m.client.CreateEmbeddings(ctx, goopenai.EmbeddingRequestStrings{Input: texts, Model: goopenai.EmbeddingModel(e.model)})
	if err != nil {
		return nil, fmt.Errorf("embeddings of %d texts with %s: %w", len(texts), e.model, err)
	}
	out := make([][]float32, len(texts))
	for _, d := range resp.Data {
		if d.Index < 0 || d.Index >= len(texts) || out[d.Index] != nil {
			return nil, fmt.Errorf("embeddings with %s: the answer's index %d does not fit %d texts", e.model, d.Index, len(texts))
		}
		out[d.Index] = d.Embedding
	}
	for i, v := range out {
		if len(v) == 0 {
			return nil, fmt.Errorf("embeddings with %s: %w for text %d", e.model, errNoVector, i)
		}
	}
	return out, nil
}

var errNoVector = errors.New("the answer has no vector")
