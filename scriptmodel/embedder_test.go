package scriptmodel

import (
	"math"
	"slices"
	"testing"

	"github.com/ollama/ollama/tokenizer"
)

// The Embedder's tokenizer is the runtime's WordPiece, id for id.
func TestEmbedderTokenizeMatchesWordPiece(t *testing.T) {
	e := NewEmbedder(DefaultEmbedWords)
	wp := tokenizer.NewWordPiece(&tokenizer.Vocabulary{Values: e.Vocabulary()}, true)
	for _, text := range []string{
		"The kettle ships on Tuesday.",
		"New hires get 25 days of leave!",
		"KETTLES, kettle's; (kettle)",
		"zygote xylophone quux",
		"naïve café",
		"  tabs\tand\nnewlines  ",
		"",
	} {
		want, err := wp.Encode(text, false)
		if err != nil {
			t.Fatal(err)
		}
		got := e.Tokenize(text)
		w := make([]int, len(want))
		for i, id := range want {
			w[i] = int(id)
		}
		if !slices.Equal(got, w) {
			t.Errorf("%q: %v, WordPiece gives %v", text, got, w)
		}
	}
}

func TestEmbedderVectors(t *testing.T) {
	e := NewEmbedder(DefaultEmbedWords)
	v := e.Embed("kettle kettle tea")
	var norm float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	if len(v) != e.Width() || math.Abs(norm-1) > 1e-5 {
		t.Fatalf("%d dims, norm² %v", len(v), norm)
	}
	kettle, tea := e.ids[wordStart+"kettle"], e.ids[wordStart+"tea"]
	if !(v[kettle] > v[tea] && v[tea] > v[0]) {
		t.Errorf("kettle %v, tea %v, pad %v: want the counts' order", v[kettle], v[tea], v[0])
	}
}
