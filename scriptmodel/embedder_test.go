package scriptmodel

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ollama/ollama/fs/ggml"
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

// EmbedFramed is Embed of the text with [CLS] before it and [SEP] after it.
func TestEmbedderFramed(t *testing.T) {
	e := NewEmbedder(DefaultEmbedWords)
	v, framed := e.Embed("kettle"), e.EmbedFramed("kettle")
	cls, sep, kettle := e.ids["[CLS]"], e.ids["[SEP]"], e.ids[wordStart+"kettle"]
	if !(framed[cls] == framed[sep] && framed[sep] == framed[kettle] && framed[kettle] > framed[0]) {
		t.Errorf("framed: [CLS] %v, [SEP] %v, kettle %v, [PAD] %v: want the three tokens alike above the rest", framed[cls], framed[sep], framed[kettle], framed[0])
	}
	if v[cls] != v[0] || v[kettle] <= v[0] {
		t.Errorf("unframed: [CLS] %v, kettle %v, [PAD] %v", v[cls], v[kettle], v[0])
	}
}

// The GGUF has the one layer llama.cpp requires, each of its tensors with the bias
// llama.cpp requires, and its parameter_count is what its tensors hold.
func TestEmbedderGGUF(t *testing.T) {
	e := NewEmbedder(DefaultEmbedWords)
	f, err := os.Create(filepath.Join(t.TempDir(), "e.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := e.WriteGGUF(f); err != nil {
		t.Fatal(err)
	}
	f.Seek(0, 0)
	g, err := ggml.Decode(f, -1)
	if err != nil {
		t.Fatal(err)
	}
	kv := g.KV()
	if kv.BlockCount() != 1 || kv.Uint("tokenizer.ggml.token_type_count") != 2 {
		t.Errorf("block_count %d, token_type_count %d; want 1 and 2", kv.BlockCount(), kv.Uint("tokenizer.ggml.token_type_count"))
	}
	var params uint64
	names := map[string]bool{}
	for _, tn := range g.Tensors().Items() {
		params += tn.Elements()
		names[tn.Name] = true
	}
	for _, name := range []string{"attn_q", "attn_k", "attn_v", "attn_output", "attn_output_norm", "ffn_up", "ffn_down", "layer_output_norm"} {
		if !names["blk.0."+name+".weight"] || !names["blk.0."+name+".bias"] {
			t.Errorf("no blk.0.%s weight and bias", name)
		}
	}
	if got := kv.ParameterCount(); got != params {
		t.Errorf("parameter_count %d, tensors hold %d", got, params)
	}
}
