package scriptmodel

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/fs/ggml"
)

func TestSplitPieces(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"Hello there, friend.", []string{"Hello", " there,", " friend."}},
		{"<think>I see.</think>Ok", []string{"<think>", "I see.", "</think>", "Ok"}},
		{"<tool_call>\n{\"a\": 1}\n</tool_call>", []string{"<tool_call>", "\n{\"a\":", " 1}", "\n</tool_call>"}},
		{"a b", []string{"a b"}},
	}
	for _, tt := range tests {
		if got := splitPieces(tt.text); strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("splitPieces(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

// StepsTemplate is Template with the get_weather situation added; a change to
// Template's ending must not silently leave it without one.
func TestStepsTemplate(t *testing.T) {
	if !strings.Contains(StepsTemplate, `(eq .ToolName "get_weather") }}`+EntryNextStep) || StepsTemplate == Template {
		t.Fatalf("StepsTemplate has no %s situation:\n%s", EntryNextStep, StepsTemplate)
	}
}

// Every catalogue model must reproduce its text exactly and give every token at most one
// successor: that is what makes it deterministic.
func TestCatalogBuilds(t *testing.T) {
	for name, spec := range Catalog() {
		m, err := Build(spec)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if Describe(name) == "" {
			t.Errorf("%s: no description for hearth script-models", name)
		}
		for _, s := range spec.Scripts {
			if got := m.Text(s.Entry); got != s.Text {
				t.Errorf("%s after %s: text %q, want %q", name, s.Entry, got, s.Text)
			}
			if got, want := strings.Join(m.Pieces(s.Entry), ""), s.Text; got != want {
				t.Errorf("%s: pieces join to %q", name, got)
			}
			if m.EvalCount(s.Entry) != len(m.Pieces(s.Entry))+1 {
				t.Errorf("%s: EvalCount must count EOS", name)
			}
		}
		seen := map[string]bool{}
		for _, tok := range m.vocab.tokens {
			if seen[tok] {
				t.Errorf("%s: token %q appears twice", name, tok)
			}
			seen[tok] = true
		}
		if m.Width() < m.VocabSize() {
			t.Errorf("%s: width %d below vocabulary %d: embeddings cannot be one-hot", name, m.Width(), m.VocabSize())
		}
	}
	long, _ := Build(Catalog()[LongModel])
	if n := len(long.Pieces(EntryAssistant)); n < 40 {
		t.Errorf("long script has %d tokens, want at least 40 for budget tests", n)
	}
}

func TestRepeatedPiecesStayUnique(t *testing.T) {
	m, err := Build(Spec{Scripts: []Script{
		{Entry: "<|a|>", Text: "<tool_call>x</tool_call><tool_call>y</tool_call>"},
		{Entry: "<|b|>", Text: "<tool_call>z</tool_call>"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []string{"<|a|>", "<|b|>"} {
		if m.Text(e) == "" {
			t.Errorf("no text after %s", e)
		}
	}
	if _, err := Build(Spec{Scripts: []Script{{Entry: "<|a|>", Text: "x"}, {Entry: "<|a|>", Text: "y"}}}); err == nil {
		t.Error("a repeated entry token must be an error")
	}
}

func TestCountTokens(t *testing.T) {
	m, err := Build(Catalog()[PlainModel])
	if err != nil {
		t.Fatal(err)
	}
	for text, want := range map[string]int{
		"":                    0,
		"hi":                  2,
		EntryAssistant:        1,
		"ab" + EntryAssistant: 3,
		"Hello":               1, // the script's first piece is a user-defined token
		"Hello!":              2,
	} {
		if got := m.CountTokens(text); got != want {
			t.Errorf("CountTokens(%q) = %d, want %d", text, got, want)
		}
	}
}

// The written file must decode with the runtime's own GGUF reader, with the shapes and
// metadata llama.cpp needs.
func TestWriteGGUF(t *testing.T) {
	for _, quantized := range []bool{false, true} {
		spec := Catalog()[ToolsModel]
		spec.Quantized = quantized
		m, g := writeAndDecode(t, spec)
		kv := g.KV()
		if kv.Architecture() != "llama" || kv.BlockCount() != 1 || int(kv.Uint("embedding_length")) != m.Width() {
			t.Errorf("metadata: arch %s blocks %d width %d", kv.Architecture(), kv.BlockCount(), kv.Uint("embedding_length"))
		}
		if toks := kv.Strings("tokenizer.ggml.tokens"); len(toks) != m.VocabSize() || toks[eosID] != EOS {
			t.Errorf("tokens: %d, eos %q", len(toks), toks[eosID])
		}
		if n := len(g.Tensors().Items()); n != 3+9 {
			t.Errorf("%d tensors, want 12", n)
		}
	}
}

// Heads narrows attention: the query and output projections take heads*64 dimensions
// of the (wider) embedding, and the parameter count says so.
func TestWriteGGUFHeads(t *testing.T) {
	for _, heads := range []int{0, 1, 2} {
		spec := Catalog()[CodexModel]
		spec.Heads = heads
		m, g := writeAndDecode(t, spec)
		want := heads
		if want == 0 {
			want = m.Width() / 64
		}
		kv := g.KV()
		if got := int(kv.Uint("attention.head_count")); got != want {
			t.Errorf("Heads %d: head_count %d, want %d", heads, got, want)
		}
		if got := int(kv.Uint("attention.key_length")); got != 64 {
			t.Errorf("Heads %d: key_length %d, want 64", heads, got)
		}
		var params uint64
		shapes := map[string][]uint64{}
		for _, tn := range g.Tensors().Items() {
			params += tn.Elements()
			shapes[tn.Name] = tn.Shape
		}
		d := uint64(m.Width())
		if q, o := shapes["blk.0.attn_q.weight"], shapes["blk.0.attn_output.weight"]; !slices.Equal(q, []uint64{d, uint64(want * 64)}) ||
			!slices.Equal(o, []uint64{uint64(want * 64), d}) {
			t.Errorf("Heads %d: attn_q %v, attn_output %v", heads, q, o)
		}
		if got := kv.ParameterCount(); got != params {
			t.Errorf("Heads %d: parameter_count %d, tensors hold %d", heads, got, params)
		}
	}
}

// The output head encodes the successor table: for each scripted token, its successor
// has the largest weight in that token's column.
func TestOutputHeadFollowsScript(t *testing.T) {
	m, err := Build(Catalog()[ReasoningModel])
	if err != nil {
		t.Fatal(err)
	}
	out, d, V := m.outputHead(), m.width, m.VocabSize()
	argmax := func(cur int) int {
		best := 0
		for next := 1; next < V; next++ {
			if out[next*d+cur] > out[best*d+cur] {
				best = next
			}
		}
		return best
	}
	cur := m.vocab.ids[EntryAssistant]
	var got strings.Builder
	for steps := 0; cur != eosID && steps < 1000; steps++ {
		cur = argmax(cur)
		if cur != eosID {
			got.WriteString(m.vocab.tokens[cur])
		}
	}
	if got.String() != ReasoningText {
		t.Errorf("greedy walk of the output head = %q, want %q", got.String(), ReasoningText)
	}
	// A byte token has no successor: it ends generation, EOS ranking first.
	if next := argmax(byteBase + 'x'); next != eosID {
		t.Errorf("after a byte token the model prefers %q, want EOS", m.vocab.tokens[next])
	}
}

// A custom tool call is a hermes call whose JSON decodes to the input.
func TestCustomCall(t *testing.T) {
	input := "*** Begin Patch\n+\"quoted\" \\ tab\t\n"
	text := CustomCall("apply_patch", input)
	body, ok := strings.CutPrefix(text, "<tool_call>")
	if body, ok = strings.CutSuffix(body, "</tool_call>"); !ok {
		t.Fatalf("%q is not one <tool_call> block", text)
	}
	var call struct {
		Name      string
		Arguments struct{ Input string }
	}
	if err := json.Unmarshal([]byte(body), &call); err != nil {
		t.Fatalf("%q: %v", body, err)
	}
	if call.Name != "apply_patch" || call.Arguments.Input != input {
		t.Errorf("decoded %+v", call)
	}
	if want := `{"name": "apply_patch", "arguments": {"input": "*** Begin Patch\n+\"quoted\" \\ tab\t\n"}}`; body != want {
		t.Errorf("call JSON %s, want %s", body, want)
	}
}

// writeAndDecode builds spec, writes its GGUF and reads it back with the runtime's own
// decoder.
func writeAndDecode(t *testing.T, spec Spec) (*Model, *ggml.GGML) {
	t.Helper()
	m, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "m.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := m.WriteGGUF(f); err != nil {
		t.Fatal(err)
	}
	f.Seek(0, 0)
	g, err := ggml.Decode(f, -1)
	if err != nil {
		t.Fatal(err)
	}
	return m, g
}

// The vision model's geometry mirrors mistral3's image processor: scaled down (never
// up) to fit 32 pixels, patches of 8, one token per patch and one per row. The e2e
// tests check these counts against the runtime.
func TestImageTokens(t *testing.T) {
	for _, tc := range []struct{ w, h, want int }{
		{32, 32, 4*4 + 4},
		{64, 64, 4*4 + 4},    // scaled to 32x32
		{40, 24, 4*3 + 3},    // scaled to 32x19
		{9, 17, 2*3 + 3},     // not scaled up: 2x3 patches
		{8, 8, 1 + 1},        // one patch
		{100, 10, 4*1 + 1},   // scaled to 32x3
		{1000, 999, 4*4 + 4}, // scaled to 32x31
	} {
		if got := ImageTokens(tc.w, tc.h); got != tc.want {
			t.Errorf("ImageTokens(%d, %d) = %d, want %d", tc.w, tc.h, got, tc.want)
		}
	}
}

// Each colour has its own answer, sharing VisionText, and a vision spec must name
// script entries as its options.
func TestVisionAnswers(t *testing.T) {
	m, err := Build(VisionSpec())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for c, opt := range []string{VisionNone, VisionRed, VisionGreen, VisionBlue} {
		text, n := m.Answer(Colour(c))
		if !strings.HasPrefix(text, VisionText+opt) || seen[text] {
			t.Errorf("Answer(%d) = %q: want a distinct text starting %q", c, text, VisionText+opt)
		}
		seen[text] = true
		if want := len(m.Pieces(EntryAssistant)) + 1 + len(m.Pieces(opt)) + 1; n != want {
			t.Errorf("Answer(%d) counts %d tokens, want %d", c, n, want)
		}
	}
	if m.Width() < m.VocabSize()+4 {
		t.Errorf("width %d leaves no room for the image's 4 dimensions beyond %d tokens", m.Width(), m.VocabSize())
	}
	bad := VisionSpec()
	bad.Vision = &Vision{After: EntryAssistant, Options: [4]string{VisionNone, VisionRed, VisionGreen, "<|nope|>"}}
	if _, err := Build(bad); err == nil {
		t.Error("Build accepted a vision option that is no script entry")
	}
}
