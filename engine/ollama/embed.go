package ollama

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/types/model"

	"hearth/engine"
)

// embedClient is the part of Ollama's API client embeddings use; *api.Client has it.
// It is asked for apart from Client so that fakes of Client need not grow.
type embedClient interface {
	Embed(ctx context.Context, req *api.EmbedRequest) (*api.EmbedResponse, error)
}

var _ engine.Embedder = seam{}

// Embed serves the engine's embeddings through Ollama's /api/embed.
func (s seam) Embed(ctx context.Context, req *engine.EmbedRequest) (*engine.EmbedResult, error) {
	c, ok := s.c.(embedClient)
	if !ok {
		return nil, &engine.StatusError{StatusCode: http.StatusNotImplemented, Message: "this runtime serves no embeddings"}
	}
	if !model.ParseName(req.Model).IsValid() {
		return nil, fmt.Errorf("%w: %q", engine.ErrModelNotFound, req.Model)
	}
	truncate := req.Truncate
	// No word longer than the model's tokenizer should look at (see boundWords):
	// the runner's tokenizer would take hours over a long enough one.
	input := s.tok.bounded(ctx, s.c, req.Model, req.Input)
	resp, err := c.Embed(ctx, &api.EmbedRequest{Model: req.Model, Input: input, Truncate: &truncate, Dimensions: req.Dimensions})
	if err != nil {
		var se api.StatusError
		if errors.As(err, &se) && se.StatusCode == http.StatusNotFound {
			return nil, fmt.Errorf("%w: %q", engine.ErrModelNotFound, req.Model)
		}
		if s.embedded && (!errors.As(err, &se) || se.StatusCode >= 500) {
			// A model the runtime cannot load fails with a bare 500; asked only then,
			// /api/show says whether its architecture is why.
			if info, showErr := s.Model(ctx, req.Model); showErr == nil && info.UnsupportedBy != "" {
				return nil, engine.ErrUnsupportedArchitecture(req.Model, info)
			}
		}
		return nil, statusError(err)
	}
	if len(resp.Embeddings) != len(req.Input) {
		return nil, fmt.Errorf("runtime returned %d embeddings for %d inputs", len(resp.Embeddings), len(req.Input))
	}
	return &engine.EmbedResult{Vectors: resp.Embeddings, PromptTokens: resp.PromptEvalCount}, nil
}
