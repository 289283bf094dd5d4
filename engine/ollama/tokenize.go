package ollama

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/llama"
	ollamamodel "github.com/ollama/ollama/model"
	"github.com/ollama/ollama/server"
	"github.com/ollama/ollama/tokenizer"
	"github.com/ollama/ollama/types/model"

	"hearth/engine"
)

// Counting tokens. Ollama v0.17.4's API has no tokenize route, so the seam builds the
// model's tokenizer in this process, the way the runtime does:
//
//   - Over the embedded runtime the model's file is on this machine: the tokenizer
//     is Ollama's own for the model's architecture (model.NewTextProcessor, what its
//     engine runs), or llama.cpp's vocabulary for a model only llama.cpp runs (what
//     its llama.cpp runner tokenizes with). Any model the runtime embeds with, exact.
//   - Over an external runtime the file may be on another machine: the tokenizer is
//     built from /api/show's verbose model info, for WordPiece vocabularies (BERT and
//     nomic-bert models: Ollama builds theirs from the same vocabulary, lowercasing).
//     Other tokenizers there are ErrNoTokenizer, and the caller estimates.
//
// Tokenizers are kept per model file (embedded) or per name and modification time
// (external), so a model pulled again is read again.

var _ engine.Tokenizer = seam{}

// tokenCounter counts one text's tokens, without special tokens; safe for
// concurrent use.
type tokenCounter interface {
	count(text string) (int, error)
}

// tokenizers finds and keeps the tokenizers of the models CountTokens is asked about.
type tokenizers struct {
	// local: the runtime is embedded, its model files are this process's to read.
	local bool
	mu    sync.Mutex
	kept  map[string]tokenCounter
}

func newTokenizers(local bool) *tokenizers {
	return &tokenizers{local: local, kept: map[string]tokenCounter{}}
}

// CountTokens counts each text's tokens with the model's tokenizer.
func (s seam) CountTokens(ctx context.Context, name string, texts []string) ([]int, error) {
	if !model.ParseName(name).IsValid() {
		return nil, fmt.Errorf("%w: %q", engine.ErrModelNotFound, name)
	}
	tok, err := s.tok.find(ctx, s.c, name)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(texts))
	for i, t := range texts {
		if out[i], err = tok.count(t); err != nil {
			return nil, fmt.Errorf("counting the tokens of %s: %w", name, err)
		}
	}
	return out, nil
}

func (t *tokenizers) find(ctx context.Context, c Client, name string) (tokenCounter, error) {
	if t.local {
		m, err := server.GetModel(name)
		if err != nil {
			return nil, fmt.Errorf("%w: %q", engine.ErrModelNotFound, name)
		}
		return t.keep(m.ModelPath, func() (tokenCounter, error) { return fileTokenizer(m.ModelPath) })
	}
	show, err := c.Show(ctx, &api.ShowRequest{Model: name})
	if err != nil {
		return nil, showError(err, name)
	}
	return t.keep(name+"@"+show.ModifiedAt.String(), func() (tokenCounter, error) {
		show, err := c.Show(ctx, &api.ShowRequest{Model: name, Verbose: true})
		if err != nil {
			return nil, showError(err, name)
		}
		return wordPieceOf(show.ModelInfo)
	})
}

// keep returns the tokenizer kept under key, making it first if need be. Making one
// reads a file or a vocabulary of tens of thousands of tokens: under the lock, so two
// first calls make it once.
func (t *tokenizers) keep(key string, make func() (tokenCounter, error)) (tokenCounter, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tok, ok := t.kept[key]; ok {
		return tok, nil
	}
	tok, err := make()
	if err != nil {
		return nil, err
	}
	t.kept[key] = tok
	return tok, nil
}

func showError(err error, name string) error {
	var se api.StatusError
	if errors.As(err, &se) && (se.StatusCode == http.StatusNotFound || se.StatusCode == http.StatusBadRequest) {
		return fmt.Errorf("%w: %q", engine.ErrModelNotFound, name)
	}
	return statusError(err)
}

// ollamaTokenizer is a tokenizer of Ollama's engine.
type ollamaTokenizer struct{ t tokenizer.Tokenizer }

func (o ollamaTokenizer) count(text string) (int, error) {
	ids, err := o.t.Encode(text, false)
	return len(ids), err
}

// llamaVocab is llama.cpp's tokenizer of a model's vocabulary; llama.cpp's model is
// not safe for concurrent use (Ollama locks it too).
type llamaVocab struct {
	mu sync.Mutex
	m  *llama.Model
}

func (l *llamaVocab) count(text string) (int, error) {
	if n := longestRun(text); n > maxInProcessRun {
		return 0, fmt.Errorf("%w: a run of %d bytes of one kind of character, which llama.cpp's tokenizer is not given in hearth's own process", engine.ErrNoTokenizer, n)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// parseSpecial as the runtime's llama.cpp server tokenizes.
	ids, err := l.m.Tokenize(text, false, true)
	return len(ids), err
}

// maxInProcessRun is the longest run of bytes of one class (engine.ByteClass) that
// hearth hands llama.cpp's tokenizer in its own process. llama.cpp pre-tokenizes most
// vocabularies with std::regex, which recurses once per character of a run (about 300
// bytes of stack each): some 27,000 characters overflow the 8 MiB stack of the thread
// that makes the call, and the crash would take hearth down with every response in
// flight. A text with a longer run is not counted here: the caller estimates (as for a
// runtime that counts no tokens), and the runner, whose stack is raised
// (runnerstack.go), tokenizes it if it must.
const maxInProcessRun = 8 << 10

// longestRun is the length of text's longest run of bytes of one engine.ByteClass.
func longestRun(text string) int {
	most := 0
	for i := 0; i < len(text); {
		c := engine.ByteClass(text[i])
		j := i + 1
		for j < len(text) && engine.ByteClass(text[j]) == c {
			j++
		}
		most = max(most, j-i)
		i = j
	}
	return most
}

// fileTokenizer is the tokenizer of the model file at path, as the runtime would
// choose it.
func fileTokenizer(path string) (tokenCounter, error) {
	if t, err := ollamamodel.NewTextProcessor(path); err == nil {
		return ollamaTokenizer{t}, nil
	}
	m, err := llama.LoadModelFromFile(path, llama.ModelParams{VocabOnly: true})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", engine.ErrNoTokenizer, err)
	}
	return &llamaVocab{m: m}, nil
}

// wordPieceOf is the WordPiece tokenizer of a model's /api/show model info, as
// Ollama's bert and nomic-bert models build theirs; another kind is ErrNoTokenizer.
func wordPieceOf(info map[string]any) (tokenCounter, error) {
	if kind, _ := info["tokenizer.ggml.model"].(string); kind != "bert" {
		return nil, fmt.Errorf("%w: an external runtime's %q tokenizer (only WordPiece vocabularies are built from the runtime's model info)", engine.ErrNoTokenizer, kind)
	}
	raw, _ := info["tokenizer.ggml.tokens"].([]any)
	values := make([]string, len(raw))
	for i, v := range raw {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%w: the model info's vocabulary is not strings", engine.ErrNoTokenizer)
		}
		values[i] = s
	}
	if len(values) == 0 {
		return nil, fmt.Errorf("%w: the runtime's model info has no vocabulary", engine.ErrNoTokenizer)
	}
	return ollamaTokenizer{tokenizer.NewWordPiece(&tokenizer.Vocabulary{Values: values}, true)}, nil
}
