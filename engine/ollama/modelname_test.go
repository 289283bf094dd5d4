package ollama

import (
	"cmp"
	"strings"
	"testing"

	"github.com/ollama/ollama/types/model"

	"hearth/engine"
)

// modelNameCases are names as clients send them: tags given and left out, namespaces,
// hosts with ports and schemes, and the malformed and oversized ones the server refuses
// before asking the runtime.
var modelNameCases = []string{
	"qwen3", "qwen3:8b", "qwen3:latest", "library/qwen3:8b", "org/model", "org/model:q4_K_M",
	"hf.co/unsloth/Qwen3-8B-GGUF:Q4_K_M", "registry.ollama.ai/library/llama3.2:3b",
	"localhost:5000/team/model:v1", "https://host.example/ns/m:t", "http://h:1/ns/m",
	"hearth-script-plain:latest", "m.v2:1.5", "_x:_y", "A-B_c",
	"", ":", "m:", ":t", "/m", "ns/", "a//b", "a/b/c/d", "h//m", "https:///ns/m",
	"-m", "m:-t", ".m", "ns.dot/m", "m:t:u", "m/t:u/v", "mödel", "m t", "m\x00",
	strings.Repeat("m", 80), strings.Repeat("m", 81), "m:" + strings.Repeat("t", 81),
	strings.Repeat("h", 350) + "/ns/m", strings.Repeat("h", 351) + "/ns/m",
	strings.Repeat("a", 5000),
}

// sameAsOllama fails t when engine.ParseModelName judges or splits name otherwise than
// the model names of the Ollama the runtime links (types/model.ParseName).
func sameAsOllama(t *testing.T, name string) {
	t.Helper()
	got, want := engine.ParseModelName(name), model.ParseName(name)
	if got.Valid() != want.IsValid() {
		t.Fatalf("%q: Valid() = %v, Ollama's IsValid() = %v", name, got.Valid(), want.IsValid())
	}
	if !want.IsValid() {
		return
	}
	def := model.DefaultName()
	parts := [][2]string{{cmp.Or(got.Host, def.Host), want.Host}, {cmp.Or(got.Namespace, def.Namespace), want.Namespace},
		{got.Model, want.Model}, {got.Tag, want.Tag}}
	for _, p := range parts {
		if p[0] != p[1] {
			t.Fatalf("%q: parsed as %+v, Ollama as %+v", name, got, want)
		}
	}
}

// TestModelNameMatchesOllama: hearth's own model names (engine.ParseModelName, which the
// server checks requests with) agree with Ollama's on validity and on every part,
// defaults included.
func TestModelNameMatchesOllama(t *testing.T) {
	for _, name := range modelNameCases {
		sameAsOllama(t, name)
	}
}

// FuzzModelNameMatchesOllama searches for a name the two judge differently.
func FuzzModelNameMatchesOllama(f *testing.F) {
	for _, name := range modelNameCases {
		f.Add(name)
	}
	f.Fuzz(sameAsOllama)
}
