package ollama_test

import (
	"context"
	"errors"
	"testing"

	"hearth/engine"
	"hearth/engine/ollama"
	"hearth/engine/ollama/testenv"
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
