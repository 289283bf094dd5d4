package engine

import (
	"context"
	"errors"
)

// Embedder is the runtime seam's embeddings: vectors of texts from an embedding model
// the runtime serves. It is a part of the seam of its own, asked for with a type
// assertion, because generation needs none of it: a runtime (or a unit test's fake)
// that serves no embeddings leaves it out, and the server then answers that it
// cannot. engine/ollama implements it over Ollama's embed API, embedded or at a URL;
// engine/pool routes each call to a runtime that has the model.
type Embedder interface {
	// Embed returns one vector per input, in order. An unknown model wraps
	// ErrModelNotFound; a refusal (a model that does not embed, an input over the
	// window with Truncate off) is a *StatusError; an input over the window wraps
	// ErrInputTooLong; a model whose architecture the runtime cannot run is
	// ErrUnsupportedArchitecture's *hearth.Error.
	Embed(ctx context.Context, req *EmbedRequest) (*EmbedResult, error)
}

// EmbedRequest asks for the vectors of Input.
type EmbedRequest struct {
	Model string
	Input []string
	// Dimensions, when positive, cuts each vector to its first Dimensions values and
	// normalises it again (for models trained for it, such as nomic's).
	Dimensions int
	// Truncate cuts an input longer than the model's window instead of refusing it.
	Truncate bool
}

// EmbedResult is the vectors, each of length 1, and the tokens the inputs took.
type EmbedResult struct {
	Vectors      [][]float32
	PromptTokens int
}

// Tokenizer is the runtime seam's tokenizer of embedding models: how many tokens a
// model makes of texts, which is what a vector store's chunk sizes count. Like
// Embedder it is a part of its own, asked for with a type assertion; engine/ollama
// implements it with the model's own tokenizer, engine/pool routes it like Embed.
type Tokenizer interface {
	// CountTokens returns the number of tokens model's tokenizer makes of each text,
	// in order, without the special tokens the model adds around an input. An unknown
	// model wraps ErrModelNotFound; a runtime that cannot tokenize for the model
	// wraps ErrNoTokenizer (the caller then estimates, and says so).
	CountTokens(ctx context.Context, model string, texts []string) ([]int, error)
}

// ErrNoTokenizer is the error of a runtime that cannot count a model's tokens.
var ErrNoTokenizer = errors.New("the runtime cannot count this model's tokens")
