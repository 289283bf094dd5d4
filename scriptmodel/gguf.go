package scriptmodel

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/ollama/ollama/convert"
	"github.com/ollama/ollama/fs/ggml"
)

const headDim = 64

// WriteGGUF writes the model as a GGUF file of architecture llama (or Spec.Architecture)
// with a gpt2 tokenizer.
func (m *Model) WriteGGUF(f *os.File) error {
	V, d := len(m.vocab.tokens), m.width
	heads := d / headDim
	if m.Heads > 0 {
		heads = m.Heads
	}
	kvHeads := max(1, heads/4)
	q := heads * headDim
	ffn := m.FFN
	if ffn == 0 {
		ffn = d
	}
	ffn = roundUp(ffn, 256)
	zeroKind, fileType := ggml.TensorTypeF16, ggml.FileTypeF16
	if m.Quantized {
		zeroKind, fileType = ggml.TensorTypeQ4_0, ggml.FileType(2) // LLAMA_FTYPE_MOSTLY_Q4_0; unexported in ggml
	}

	kv := convert.KV{
		"general.architecture":             "llama",
		"general.name":                     "hearth script model",
		"general.file_type":                uint32(fileType),
		"general.parameter_count":          uint64(m.parameterCount(ffn, heads, kvHeads)),
		"context_length":                   uint32(m.ContextLength),
		"embedding_length":                 uint32(d),
		"block_count":                      uint32(m.Layers),
		"feed_forward_length":              uint32(ffn),
		"attention.head_count":             uint32(heads),
		"attention.head_count_kv":          uint32(kvHeads),
		"attention.key_length":             uint32(headDim),
		"attention.value_length":           uint32(headDim),
		"attention.layer_norm_rms_epsilon": float32(1e-6),
		"rope.dimension_count":             uint32(headDim),
		"rope.freq_base":                   float32(10000),
		"vocab_size":                       uint32(V),
		"tokenizer.ggml.model":             "gpt2",
		"tokenizer.ggml.pre":               "default",
		"tokenizer.ggml.tokens":            m.vocab.tokens,
		"tokenizer.ggml.token_type":        m.vocab.types,
		"tokenizer.ggml.merges":            []string{},
		"tokenizer.ggml.bos_token_id":      uint32(bosID),
		"tokenizer.ggml.eos_token_id":      uint32(eosID),
		"tokenizer.ggml.add_bos_token":     m.AddBOS,
		"tokenizer.ggml.add_eos_token":     false,
		"tokenizer.ggml.padding_token_id":  uint32(eosID),
	}

	if m.ChatTemplate != "" {
		kv["tokenizer.chat_template"] = m.ChatTemplate
	}
	if m.Vision != nil {
		visionKV(kv)
	}
	if m.Architecture != "" {
		kv["general.architecture"] = m.Architecture
	}

	embd := make([]float32, V*d)
	for t := 0; t < V; t++ {
		embd[t*d+t] = 1
	}
	out := m.outputHead()
	ones := make([]float32, d)
	for i := range ones {
		ones[i] = 1
	}
	zero := func(name string, shape ...uint64) *ggml.Tensor {
		t := &ggml.Tensor{Name: name, Kind: uint32(zeroKind), Shape: shape}
		t.WriterTo = zeros(t.Size())
		return t
	}
	ts := []*ggml.Tensor{
		f32("token_embd.weight", embd, uint64(d), uint64(V)),
		f32("output_norm.weight", ones, uint64(d)),
		f32("output.weight", out, uint64(d), uint64(V)),
	}
	if m.Vision != nil {
		aq, ak, av, ao := m.visionAttention()
		return ggml.WriteGGUF(f, kv, append(append(ts,
			f32("blk.0.attn_norm.weight", ones, uint64(d)),
			f32("blk.0.ffn_norm.weight", ones, uint64(d)),
			f32("blk.0.attn_q.weight", aq, uint64(d), uint64(q)),
			f32("blk.0.attn_k.weight", ak, uint64(d), uint64(kvHeads*headDim)),
			f32("blk.0.attn_v.weight", av, uint64(d), uint64(kvHeads*headDim)),
			f32("blk.0.attn_output.weight", ao, uint64(q), uint64(d)),
			zero("blk.0.ffn_gate.weight", uint64(d), uint64(ffn)),
			zero("blk.0.ffn_up.weight", uint64(d), uint64(ffn)),
			zero("blk.0.ffn_down.weight", uint64(ffn), uint64(d)),
		), m.visionTensors()...))
	}
	for l := 0; l < m.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		ts = append(ts,
			f32(p+"attn_norm.weight", ones, uint64(d)),
			f32(p+"ffn_norm.weight", ones, uint64(d)),
			zero(p+"attn_q.weight", uint64(d), uint64(q)),
			zero(p+"attn_k.weight", uint64(d), uint64(kvHeads*headDim)),
			zero(p+"attn_v.weight", uint64(d), uint64(kvHeads*headDim)),
			zero(p+"attn_output.weight", uint64(q), uint64(d)),
			zero(p+"ffn_gate.weight", uint64(d), uint64(ffn)),
			zero(p+"ffn_up.weight", uint64(d), uint64(ffn)),
			zero(p+"ffn_down.weight", uint64(ffn), uint64(d)),
		)
	}
	return ggml.WriteGGUF(f, kv, ts)
}

// outputHead is the [V][d] matrix whose column i holds the logits after token i: the
// successor's weight dominates, the preference ranking breaks ties under a grammar.
func (m *Model) outputHead() []float32 {
	V, d := len(m.vocab.tokens), m.width
	pref := m.preferenceRow()
	out := make([]float32, V*d)
	for next := 0; next < V; next++ {
		row := out[next*d : next*d+V]
		for cur := range row {
			row[cur] = pref[next]
		}
	}
	for cur, next := range m.next {
		if next >= 0 {
			out[next*d+cur] = successorWeight
		}
	}
	if m.Vision != nil {
		m.visionHead(out)
	}
	return out
}

func (m *Model) parameterCount(ffn, heads, kvHeads int) int {
	V, d := len(m.vocab.tokens), m.width
	perLayer := 2*d + 2*d*heads*headDim + 2*d*kvHeads*headDim + 3*d*ffn
	return 2*V*d + d + m.Layers*perLayer
}

func f32(name string, data []float32, shape ...uint64) *ggml.Tensor {
	return &ggml.Tensor{Name: name, Kind: uint32(ggml.TensorTypeF32), Shape: shape, WriterTo: float32s(data)}
}

type float32s []float32

func (xs float32s) WriteTo(w io.Writer) (int64, error) {
	buf := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
	}
	n, err := w.Write(buf)
	return int64(n), err
}

// zeros writes n zero bytes: zero in F16 and in Q4_0 (a zero scale) alike.
type zeros uint64

func (z zeros) WriteTo(w io.Writer) (int64, error) {
	chunk := make([]byte, min(uint64(z), 1<<20))
	var total int64
	for left := uint64(z); left > 0; {
		n, err := w.Write(chunk[:min(left, uint64(len(chunk)))])
		total += int64(n)
		if err != nil {
			return total, err
		}
		left -= uint64(n)
	}
	return total, nil
}
