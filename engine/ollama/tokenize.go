package ollama

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync"

	"github.com/ollama/ollama/api"
	fsggml "github.com/ollama/ollama/fs/ggml"
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
	// bound is text as the tokenizer, and the runtime's tokenizer of the same
	// model, may be given it: for a WordPiece tokenizer, without words longer than
	// MaxWordChars (see boundWords).
	bound(text string) string
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
		// A client that left, or an ingestion stopped, counts no further.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
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
	// Asked on every embedding (see bounded), /api/show is asked once per model
	// version for a tokenizer too: one the runtime's model info cannot give is kept
	// as that answer.
	show, err := c.Show(ctx, &api.ShowRequest{Model: name})
	if err != nil {
		return nil, showError(err, name)
	}
	return t.keep(name+"@"+show.ModifiedAt.String(), func() (tokenCounter, error) {
		show, err := c.Show(ctx, &api.ShowRequest{Model: name, Verbose: true})
		if err != nil {
			return nil, showError(err, name)
		}
		tok, err := wordPieceOf(show.ModelInfo)
		if errors.Is(err, engine.ErrNoTokenizer) {
			return noTokenizer{err}, nil
		}
		return tok, err
	})
}

// bounded is texts as the runtime may be given them to embed for model name: bound
// by the model's tokenizer (the same texts when none needs it, or none is known).
func (t *tokenizers) bounded(ctx context.Context, c Client, name string, texts []string) []string {
	tok, err := t.find(ctx, c, name)
	if err != nil {
		return texts
	}
	var out []string
	for i, s := range texts {
		if b := tok.bound(s); b != s || out != nil {
			if out == nil {
				out = slices.Clone(texts[:i])
			}
			out = append(out, b)
		}
	}
	if out == nil {
		return texts
	}
	return out
}

// noTokenizer is a model whose tokens the runtime cannot count (err wraps
// engine.ErrNoTokenizer).
type noTokenizer struct{ err error }

func (n noTokenizer) count(string) (int, error) { return 0, n.err }
func (n noTokenizer) bound(text string) string  { return text }

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
type ollamaTokenizer struct {
	t tokenizer.Tokenizer
	// wordPiece: t is a WordPiece tokenizer, given no word over MaxWordChars; those
	// are unknown, a word t reads as [UNK] ("" for none: they are cut).
	wordPiece bool
	unknown   string
}

func newOllamaTokenizer(t tokenizer.Tokenizer, wordPiece bool) ollamaTokenizer {
	o := ollamaTokenizer{t: t, wordPiece: wordPiece}
	if wordPiece {
		o.unknown = unknownWordOf(t)
	}
	return o
}

func (o ollamaTokenizer) count(text string) (int, error) {
	ids, err := o.t.Encode(o.bound(text), false)
	return len(ids), err
}

func (o ollamaTokenizer) bound(text string) string {
	if !o.wordPiece {
		return text
	}
	return boundWords(text, o.unknown)
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

// bound gives llama.cpp's tokenizers any text: its WordPiece looks up no piece longer
// than the vocabulary's longest token, which keeps a long word's time linear.
func (l *llamaVocab) bound(text string) string { return text }

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
		return newOllamaTokenizer(t, fileTokenizerModel(path) == "bert"), nil
	}
	m, err := llama.LoadModelFromFile(path, llama.ModelParams{VocabOnly: true})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", engine.ErrNoTokenizer, err)
	}
	return &llamaVocab{m: m}, nil
}

// fileTokenizerModel is the model file's tokenizer.ggml.model ("bert" for WordPiece),
// "" when it cannot be read.
func fileTokenizerModel(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	meta, err := fsggml.Decode(f, 0)
	if err != nil {
		return ""
	}
	return meta.KV().String("tokenizer.ggml.model")
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
	return newOllamaTokenizer(tokenizer.NewWordPiece(&tokenizer.Vocabulary{Values: values}, true), true), nil
}
