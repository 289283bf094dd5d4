package ollama

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ollama/ollama/fs/ggml"
	"github.com/ollama/ollama/llama"
	ollamamodel "github.com/ollama/ollama/model"

	"hearth/engine"
	"hearth/scriptmodel"
)

// The tokenizer path with untrusted text: long runs of one character class (letters,
// digits, spaces, punctuation, symbols, CJK, emoji, control characters, invalid
// UTF-8), which is what crashed llama.cpp's pre-tokenizer (std::regex recursing once
// per character) and killed whatever process tokenized them. FuzzTokenizeRuns builds
// text as prefix + piece repeated, counts it with both tokenizers hearth counts with
// in its own process (llama.cpp's vocabulary and Ollama's own, for a script model of
// the default pre-tokenizer, the one of the crashes), and checks that the process
// survives and that the vocabulary's token bound (engine.TokenBound, which decides
// what reaches a tokenizer at all) never exceeds the real count.
//
// The seeds in testdata/fuzz/FuzzTokenizeRuns, replayed by every `go test`, are runs of
// 20,000 to 256 KiB of each class (and of mixed punctuation).

type fuzzVocab struct {
	llama *llamaVocab
	own   tokenCounter
	bound *engine.TokenBound
}

var (
	fuzzVocabOnce sync.Once
	fuzzVocabVal  fuzzVocab
	fuzzVocabErr  error
)

func scriptVocab(t testing.TB) fuzzVocab {
	fuzzVocabOnce.Do(func() {
		fuzzVocabErr = func() error {
			m, err := scriptmodel.Build(scriptmodel.Catalog()[scriptmodel.ToolsModel])
			if err != nil {
				return err
			}
			dir, err := os.MkdirTemp("", "hearth-fuzz-vocab-")
			if err != nil {
				return err
			}
			path := filepath.Join(dir, "model.gguf")
			f, err := os.Create(path)
			if err != nil {
				return err
			}
			defer f.Close()
			if err := m.WriteGGUF(f); err != nil {
				return err
			}
			if _, err := f.Seek(0, 0); err != nil {
				return err
			}
			g, err := ggml.Decode(f, -1)
			if err != nil {
				return err
			}
			kv := g.KV()
			var tokens []any
			for _, s := range kv.Strings("tokenizer.ggml.tokens") {
				tokens = append(tokens, s)
			}
			fuzzVocabVal.bound = vocabularyBound(map[string]any{
				"tokenizer.ggml.model":  kv.String("tokenizer.ggml.model"),
				"tokenizer.ggml.tokens": tokens,
			})
			lm, err := llama.LoadModelFromFile(path, llama.ModelParams{VocabOnly: true})
			if err != nil {
				return err
			}
			fuzzVocabVal.llama = &llamaVocab{m: lm}
			tp, err := ollamamodel.NewTextProcessor(path)
			if err != nil {
				return err
			}
			fuzzVocabVal.own = ollamaTokenizer{t: tp}
			return nil
		}()
	})
	if fuzzVocabErr != nil {
		t.Fatal(fuzzVocabErr)
	}
	return fuzzVocabVal
}

// maxFuzzText bounds a fuzzed text: runs far past the 8 MiB stack's ~27,000
// characters, short enough for a fuzz iteration.
const maxFuzzText = 256 << 10

func FuzzTokenizeRuns(f *testing.F) {
	f.Fuzz(func(t *testing.T, prefix, piece string, repeat uint32) {
		if piece == "" {
			return
		}
		n := min(int(repeat), (maxFuzzText-len(prefix))/len(piece))
		if n < 0 {
			return
		}
		text := prefix + strings.Repeat(piece, n)
		v := scriptVocab(t)
		lower := v.bound.Min(text)
		got, err := v.llama.count(text)
		switch {
		case errors.Is(err, engine.ErrNoTokenizer):
			// Refused before llama.cpp saw it: the caller estimates instead.
		case err != nil:
			t.Fatalf("llama.cpp's vocabulary, %d bytes: %v", len(text), err)
		case got < lower:
			t.Fatalf("llama.cpp counts %d tokens of %d bytes (%q...), below the bound %d", got, len(text), text[:min(len(text), 20)], lower)
		}
		own, err := v.own.count(text)
		if err != nil {
			t.Fatalf("Ollama's tokenizer, %d bytes: %v", len(text), err)
		}
		if own < lower {
			t.Fatalf("Ollama's tokenizer counts %d tokens of %d bytes (%q...), below the bound %d", own, len(text), text[:min(len(text), 20)], lower)
		}
	})
}
