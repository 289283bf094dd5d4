package ollama_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"hearth/engine"
	"hearth/engine/ollama"
	"hearth/engine/ollama/testenv"
	"hearth/internal/textchunk"
	"hearth/scriptmodel"
)

// TestCountTokensE2E: the seam counts the script embedding model's tokens as its
// tokenizer makes them (scriptmodel.Embedder.Tokenize, itself checked against Ollama's
// WordPiece), through the runtime's own tokenizer of the model file (the embedded
// runtime's seam) and through one built from /api/show's vocabulary (the seam of a
// runtime hearth does not host, here over the same runtime).
func TestCountTokensE2E(t *testing.T) {
	rt := testenv.Runtime(t)
	e := testenv.Embedder(t)
	texts := []string{"", "kettle", "The kettle ships on Tuesday.", " xyzzy", "Ünïcode, naïve: 42 + 7 = 49!", "kettle-ship's\n\tnote"}
	seams := map[string]engine.Runtime{"runtime's": rt.Seam(), "over /api/show": ollama.DrainingSeam(rt.Client)}
	for name, s := range seams {
		tok, ok := s.(engine.Tokenizer)
		if !ok {
			t.Fatalf("%s seam counts no tokens", name)
		}
		got, err := tok.CountTokens(context.Background(), scriptmodel.EmbedModel, texts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i, text := range texts {
			if want := len(e.Tokenize(text)); got[i] != want {
				t.Errorf("%s: %q counts %d tokens, want %d", name, text, got[i], want)
			}
		}
		if _, err := tok.CountTokens(context.Background(), "no-such-model", texts); !errors.Is(err, engine.ErrModelNotFound) {
			t.Errorf("%s: an unknown model: %v", name, err)
		}
	}
	// A tokenizer the show path cannot build (a generation model's byte-pair
	// vocabulary) is ErrNoTokenizer, for the caller to estimate.
	testenv.Model(t, scriptmodel.PlainModel)
	over := ollama.DrainingSeam(rt.Client).(engine.Tokenizer)
	if _, err := over.CountTokens(context.Background(), scriptmodel.PlainModel, texts); !errors.Is(err, engine.ErrNoTokenizer) {
		t.Errorf("a byte-pair vocabulary over /api/show: %v, want ErrNoTokenizer", err)
	}
}

// TestChunkPiecesAddUpE2E: textchunk's pieces are the words the runtime's WordPiece
// tokenizer splits a text into, so their counts add up to the text's count exactly,
// on texts of words, punctuation, symbols, digits, accents, CJK and mixed whitespace.
// Split shows it: at a maximum of the text's own count W it makes one chunk (the
// pieces sum to at most W), and at W-1 it cuts without recounting (two counting
// calls: so the pieces sum to more than W-1, each chunk's count being its sum).
func TestChunkPiecesAddUpE2E(t *testing.T) {
	rt := testenv.Runtime(t)
	testenv.Embedder(t)
	tok := rt.Seam().(engine.Tokenizer)
	ctx := context.Background()
	words := []string{"kettle", "ships", "xyzzy", "Tuesday", "naïve", "café", "42", "3.14", "a+b", "$5", "€20",
		"don't", "e-mail", "日本語", "東京", "(note)", "end.", "x_y", "#tag", "@bob", "Ünïcode", "~", "...",
		"«quote»", "“smart”", "a—b", "「東京」", "end。", "«(»"}
	seps := []string{" ", "  ", "\n", "\t", ", ", "\n\n", " - "}
	r := rand.New(rand.NewPCG(11, 12))
	for trial := range 40 {
		var b strings.Builder
		for i := range 10 + r.IntN(60) {
			if i > 0 {
				b.WriteString(seps[r.IntN(len(seps))])
			}
			b.WriteString(words[r.IntN(len(words))])
		}
		text := b.String()
		whole, err := tok.CountTokens(ctx, scriptmodel.EmbedModel, []string{text})
		if err != nil {
			t.Fatal(err)
		}
		w := whole[0]
		calls := 0
		count := func(texts []string) ([]int, error) {
			calls++
			return tok.CountTokens(ctx, scriptmodel.EmbedModel, texts)
		}
		if chunks, err := textchunk.Split(text, w, 0, count); err != nil || len(chunks) != 1 {
			t.Fatalf("trial %d: %q (%d tokens) at max %d: %d chunks, %v", trial, text, w, w, len(chunks), err)
		}
		calls = 0
		if _, err := textchunk.Split(text, w-1, 0, count); err != nil || calls != 2 {
			t.Fatalf("trial %d: %q (%d tokens) at max %d: %d counting calls, %v", trial, text, w, w-1, calls, err)
		}
	}
}

// TestLongWordE2E: a word of 8,000 characters counts as one token, the [UNK] BERT's
// WordPiece makes of a word over 100 characters, through both seams' tokenizers, and
// the runtime embeds it as that [UNK]: hearth hands the runtime's tokenizer, whose time
// is cubic in a word's length, no such word.
func TestLongWordE2E(t *testing.T) {
	rt := testenv.Runtime(t)
	e := testenv.Embedder(t)
	word := strings.Repeat("xyzzy", 1600)
	texts := []string{word, "the kettle " + word + " ships."}
	seams := map[string]engine.Runtime{"runtime's": rt.Seam(), "over /api/show": ollama.DrainingSeam(rt.Client)}
	for name, s := range seams {
		got, err := s.(engine.Tokenizer).CountTokens(context.Background(), scriptmodel.EmbedModel, texts)
		if err != nil || got[0] != 1 || got[1] != 5 {
			t.Errorf("%s: counts %v (%v), want [1 5]", name, got, err)
		}
		res, err := s.(engine.Embedder).Embed(context.Background(), &engine.EmbedRequest{Model: scriptmodel.EmbedModel, Input: texts})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		embed, framing := e.Embed, 0
		if testenv.RunsLlamaServer(t) {
			embed, framing = e.EmbedFramed, 2
		}
		if res.PromptTokens != 6+2*framing {
			t.Errorf("%s: embedded %d tokens, want %d", name, res.PromptTokens, 6+2*framing)
		}
		for i, text := range texts {
			want := embed(strings.ReplaceAll(text, word, "\U00010330"))
			for j := range want {
				if d := res.Vectors[i][j] - want[j]; d > 1e-4 || d < -1e-4 {
					t.Errorf("%s: input %d is not embedded with the long word as [UNK]", name, i)
					break
				}
			}
		}
	}
}
