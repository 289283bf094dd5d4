package scriptmodel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"unicode"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/convert"
	"github.com/ollama/ollama/fs/ggml"
)

// EmbedModel is the catalogue's embedding model (Embedder): a text's vector is a
// function of the words it holds, exactly, so search results in tests are exact.
const EmbedModel = "hearth-script-embed:latest"

// Embedder is a deterministic embedding model: a BERT-architecture GGUF (which the
// runtime's own engine runs, with mean pooling) whose token embeddings are one-hot rows
// and whose other weights are zero, with one layer (llama.cpp, which Ollama 0.30 and
// later run models in, refuses a model of none). The runtime then computes, for a text
// of n tokens with counts c over a width of d,
//
//	LayerNorm(one-hot(t)) = s·(e_t − 1/d)   for every token t (the same s for all),
//	the layer              = the same rows   (its attention and MLP add zero, and each
//	                                          LayerNorm meets rows already normalised),
//	mean over the tokens   = s·(c/n − 1/d),
//	normalised             = (c/n − 1/d) / ‖c/n − 1/d‖,
//
// which Embed computes in Go. Its vocabulary is Words as whole words (so texts made
// of them embed as bags of words) and every printable ASCII character, at a word's
// start and inside it (so any other ASCII word is a bag of characters); the runtime's
// WordPiece tokenizer lowercases and splits off punctuation.
type Embedder struct {
	// Words are the whole-word tokens, lowercase.
	Words []string
	// ContextLength is the longest input in tokens (default 2048).
	ContextLength int

	vocab []string
	ids   map[string]int
	width int
}

// wordStart marks a piece that starts a word in a GGML WordPiece vocabulary.
const wordStart = "▁"

// The special tokens, at ids 0-3.
var embedSpecials = []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]"}

// NewEmbedder lays out the vocabulary of an embedding model knowing words.
func NewEmbedder(words []string) *Embedder {
	e := &Embedder{Words: words, ContextLength: 2048, ids: map[string]int{}}
	add := func(tok string) {
		if _, ok := e.ids[tok]; !ok {
			e.ids[tok] = len(e.vocab)
			e.vocab = append(e.vocab, tok)
		}
	}
	for _, s := range embedSpecials {
		add(s)
	}
	for c := byte('!'); c <= '~'; c++ {
		if c >= 'A' && c <= 'Z' {
			continue // lowercased before lookup
		}
		add(wordStart + string(c))
		add(string(c))
	}
	for _, w := range words {
		add(wordStart + strings.ToLower(w))
	}
	e.width = roundUp(len(e.vocab), 64)
	return e
}

// DefaultEmbedWords are EmbedModel's whole words: common English ones and those of
// the tests' documents.
var DefaultEmbedWords = strings.Fields(`the a an and or of to in on at for with by from is are was were be it this that
	what which who when where how why do does did not no yes can will would should may might must have has had
	i you he she we they my your our their me us them all any some more most many much few one two three four five
	day days week weeks month year years time today tomorrow monday tuesday wednesday thursday friday saturday sunday
	ship ships shipped shipping kettle kettles price prices cost costs euro euros dollar dollars
	leave holiday holidays new hire hires hired employee employees team teams manager office remote work
	policy policies handbook rule rules document documents file files page pages report reports
	release releases notes note version server servers model models search question answer
	red green blue cat cats dog dogs tea coffee water paris london berlin`)

// Vocabulary returns the model's tokens in id order.
func (e *Embedder) Vocabulary() []string { return slices.Clone(e.vocab) }

// Width is the vectors' dimension.
func (e *Embedder) Width() int { return e.width }

// Tokenize is the ids the runtime's WordPiece tokenizer gives text (ASCII text; other
// characters make their word [UNK]), without the special tokens, which the model
// does not add.
func (e *Embedder) Tokenize(text string) []int {
	var ids []int
	for _, field := range strings.FieldsFunc(text, unicode.IsSpace) {
		// Punctuation splits a word and is a word of its own, one byte at a time.
		for start := 0; start < len(field); {
			end := strings.IndexFunc(field[start:], unicode.IsPunct)
			switch {
			case end < 0:
				end = len(field) - start
			case end == 0:
				end = 1
			}
			ids = append(ids, e.pieces(field[start:start+end])...)
			start += end
		}
	}
	return ids
}

// pieces is WordPiece's greedy longest match of one word.
func (e *Embedder) pieces(word string) []int {
	var out []int
	for start := 0; start < len(word); {
		end, id := len(word), -1
		for ; start < end; end-- {
			sub := strings.ToLower(word[start:end])
			if start == 0 {
				sub = wordStart + sub
			}
			if i, ok := e.ids[sub]; ok {
				id = i
				break
			}
		}
		if id < 0 {
			return []int{e.ids["[UNK]"]}
		}
		out = append(out, id)
		start = end
	}
	return out
}

// Embed is the vector the runtime gives text (see Embedder).
func (e *Embedder) Embed(text string) []float32 {
	return e.embed(e.Tokenize(text))
}

// EmbedFramed is the vector a runtime gives text when it puts [CLS] before the text's
// tokens and [SEP] after them, as llama.cpp's server does with every text it embeds
// (Ollama 0.30 and later), whatever the model's add_bos_token says.
func (e *Embedder) EmbedFramed(text string) []float32 {
	ids := append([]int{e.ids["[CLS]"]}, e.Tokenize(text)...)
	return e.embed(append(ids, e.ids["[SEP]"]))
}

// embed is the model's vector of the tokens ids.
func (e *Embedder) embed(ids []int) []float32 {
	v := make([]float64, e.width)
	if len(ids) == 0 {
		return make([]float32, e.width)
	}
	n, d := float64(len(ids)), float64(e.width)
	for i := range v {
		v[i] = -1 / d
	}
	for _, id := range ids {
		v[id] += 1 / n
	}
	var norm float64
	for _, x := range v {
		norm += x * x
	}
	out := make([]float32, e.width)
	for i, x := range v {
		out[i] = float32(x / math.Sqrt(norm))
	}
	return out
}

// WriteGGUF writes the model as a GGUF file of architecture bert.
func (e *Embedder) WriteGGUF(f *os.File) error {
	V, d, ctx := len(e.vocab), e.width, e.ContextLength
	types := make([]int32, V)
	for i := range types {
		types[i] = tokenNormal
	}
	for i := range embedSpecials {
		types[i] = tokenControl
	}
	kv := convert.KV{
		"general.architecture":         "bert",
		"general.name":                 "hearth script embedding model",
		"general.file_type":            uint32(ggml.FileTypeF32),
		"general.parameter_count":      uint64(V*d + 2*d + ctx*d + 2*d + embedLayerParams(d)),
		"context_length":               uint32(ctx),
		"embedding_length":             uint32(d),
		"block_count":                  uint32(1),
		"feed_forward_length":          uint32(d),
		"attention.head_count":         uint32(d / 64),
		"attention.layer_norm_epsilon": float32(1e-12),
		"attention.causal":             false,
		"pooling_type":                 uint32(1), // mean
		"tokenizer.ggml.model":         "bert",
		"tokenizer.ggml.tokens":        e.vocab,
		"tokenizer.ggml.token_type":    types,
		// For llama.cpp, which Ollama 0.30 and later run models in: the rows of
		// token_types.weight (it requires the count), and its [CLS], which its server
		// puts before every text to embed (EmbedFramed), is bos_token_id.
		"tokenizer.ggml.token_type_count":   uint32(2),
		"tokenizer.ggml.bos_token_id":       uint32(2),
		"tokenizer.ggml.add_bos_token":      false,
		"tokenizer.ggml.add_eos_token":      false,
		"tokenizer.ggml.unknown_token_id":   uint32(1),
		"tokenizer.ggml.cls_token_id":       uint32(2),
		"tokenizer.ggml.seperator_token_id": uint32(3),
		"tokenizer.ggml.padding_token_id":   uint32(0),
	}
	embd := make([]float32, V*d)
	for t := 0; t < V; t++ {
		embd[t*d+t] = 1
	}
	ones := make([]float32, d)
	for i := range ones {
		ones[i] = 1
	}
	tensors := []*ggml.Tensor{
		f32("token_embd.weight", embd, uint64(d), uint64(V)),
		f32("token_types.weight", make([]float32, 2*d), uint64(d), 2),
		f32("position_embd.weight", make([]float32, ctx*d), uint64(d), uint64(ctx)),
		f32("token_embd_norm.weight", ones, uint64(d)),
		f32("token_embd_norm.bias", make([]float32, d), uint64(d)),
	}
	// The layer: every projection zero (with the biases llama.cpp requires), every
	// LayerNorm the identity's weights.
	for _, name := range []string{"attn_q", "attn_k", "attn_v", "attn_output", "ffn_up", "ffn_down"} {
		tensors = append(tensors,
			f32("blk.0."+name+".weight", make([]float32, d*d), uint64(d), uint64(d)),
			f32("blk.0."+name+".bias", make([]float32, d), uint64(d)))
	}
	for _, name := range []string{"attn_output_norm", "layer_output_norm"} {
		tensors = append(tensors,
			f32("blk.0."+name+".weight", ones, uint64(d)),
			f32("blk.0."+name+".bias", make([]float32, d), uint64(d)))
	}
	return ggml.WriteGGUF(f, kv, tensors)
}

// embedLayerParams counts the layer's weights: six d×d projections with their biases,
// and two LayerNorms.
func embedLayerParams(d int) int { return 6*(d*d+d) + 2*2*d }

// CreateEmbedder writes e and creates it in the runtime under name, as Create does for
// a generation model.
func CreateEmbedder(ctx context.Context, client *api.Client, name string, e *Embedder) error {
	f, err := os.CreateTemp("", "scriptmodel-embed-*.gguf")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := e.WriteGGUF(f); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	digest := "sha256:" + hex.EncodeToString(h.Sum(nil))
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if err := client.CreateBlob(ctx, digest, f); err != nil {
		return fmt.Errorf("upload %s: %w", name, err)
	}
	return client.Create(ctx, &api.CreateRequest{Model: name, Files: map[string]string{"model.gguf": digest},
		Parameters: map[string]any{"num_ctx": e.ContextLength}}, func(api.ProgressResponse) error { return nil })
}
