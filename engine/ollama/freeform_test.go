package ollama

import (
	"math"
	"testing"

	"github.com/ollama/ollama/llama"

	"hearth/engine"
	"hearth/toolgrammar"
)

// llamaAccepts runs text through the grammar llama.cpp makes of schema (the runtime's
// json-schema-to-grammar and grammar sampler, over a vocabulary of single bytes) and
// reports whether the grammar takes every byte and then allows the end; at is the
// offset of the first byte it refuses.
func llamaAccepts(t *testing.T, schema []byte, text string) (ok bool, at int) {
	t.Helper()
	g := llama.SchemaToGrammar(schema)
	if g == nil {
		t.Fatalf("llama.cpp cannot convert the schema: %s", schema)
	}
	const eos = 0
	ids := make([]uint32, 257)
	pieces := make([]string, 257)
	for i := range 256 {
		ids[i+1] = uint32(i + 1)
		pieces[i+1] = string([]byte{byte(i)})
	}
	gr := llama.NewGrammar(string(g), ids, pieces, []int32{eos})
	if gr == nil {
		t.Fatalf("llama.cpp cannot load the grammar of %s:\n%s", schema, g)
	}
	defer gr.Free()
	allowed := func(id int32) bool {
		tds := make([]llama.TokenData, len(ids))
		for i := range tds {
			tds[i] = llama.TokenData{ID: int32(i), Logit: 1}
		}
		gr.Apply(tds)
		return !math.IsInf(float64(tds[id].Logit), -1)
	}
	for i := 0; i < len(text); i++ {
		id := int32(text[i]) + 1
		if !allowed(id) {
			return false, i
		}
		gr.Accept(id)
	}
	return allowed(eos), len(text)
}

// patchLark is a small regular grammar in the style of agents' patch tools.
const patchLark = `start: "BEGIN" LF op+ "END" LF?
op: "add " path LF ("+" /[^\n]*/ LF)* | "delete " path LF
path: /[^\n]+/
%import common.LF
`

// The constraint hearth sends for a call of a custom tool, as llama.cpp reads it,
// accepts exactly the calls whose input the format accepts. This is the runtime's own
// grammar code (the schema goes through it unchanged), so what passes here is what the
// runtime enforces.
func TestFreeformConstraintInLlamaCpp(t *testing.T) {
	hermes := engine.DefaultFormats().Lookup("hermes")
	cases := []struct {
		syntax, def string
		inputs      []string
	}{
		{"", "", []string{"", "raw \"text\"\n\\ with\ttabs \x01 é😀"}},
		{"regex", `[0-9]+(\.[0-9]+)?`, []string{"12", "12.50", "1.", "a1", ""}},
		{"regex", `(?i)yes|no`, []string{"YES", "no", "nope"}},
		{"regex", `"[^"\\]*"`, []string{`"quoted"`, `""`, `"a\b"`, `"a"b"`}},
		{"regex", `.+\n.*`, []string{"line\n", "a\"\\\nb", "no newline", "\n"}},
		{"lark", patchLark, []string{
			"BEGIN\nadd a.txt\n+hello \"world\"\n+\tC:\\dir\nEND\n",
			"BEGIN\ndelete x\nadd y\nEND",
			"BEGIN\nadd a.txt\nhello\nEND\n",
			"BEGIN\nEND\n",
		}},
	}
	for _, tc := range cases {
		f, err := toolgrammar.CompileFreeform(tc.syntax, tc.def)
		if err != nil {
			t.Fatal(err)
		}
		if tc.syntax != "" && f.Pattern == "" {
			t.Fatalf("%s %q: no pattern (%s)", tc.syntax, tc.def, f.Unconstrained)
		}
		tool := toolgrammar.Tool{Name: "edit", Parameters: f.InputSchema()}
		schema, err := toolgrammar.CallSchema(hermes, []toolgrammar.Tool{tool}, false)
		if err != nil {
			t.Fatal(err)
		}
		accepted := 0
		for _, in := range tc.inputs {
			want := f.Check(in) == nil
			call := `{"name":"edit","arguments":{"input":"` + toolgrammar.JSONStringSpelling(in) + `"}}`
			got, at := llamaAccepts(t, schema, call)
			if got != want {
				t.Errorf("%s %q, input %q: the format says %v, llama.cpp's grammar %v (stops at %d: %q)", tc.syntax, tc.def, in, want, got, at, call[:at])
			}
			if got {
				accepted++
			}
		}
		if accepted == 0 {
			t.Errorf("%s %q: no input accepted; the case tests nothing", tc.syntax, tc.def)
		}
	}
}
