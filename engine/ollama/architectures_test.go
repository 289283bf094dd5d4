package ollama

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
)

// TestEmbeddedArchitecturesMatchModule: the two lists architectures.go keeps are the
// module's own: the names model/models registers with the Ollama engine, and llama.cpp's
// LLM_ARCH_NAMES. A module upgrade that adds or drops an architecture fails here until
// the lists are copied again.
func TestEmbeddedArchitecturesMatchModule(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/ollama/ollama").Output()
	if err != nil {
		t.Fatalf("find the ollama module: %v", err)
	}
	dir := strings.TrimSpace(string(out))

	var registered []string
	register := regexp.MustCompile(`model\.Register\("([^"]+)"`)
	files, _ := filepath.Glob(filepath.Join(dir, "model", "models", "*", "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range register.FindAllSubmatch(text, -1) {
			registered = append(registered, string(m[1]))
		}
	}
	same(t, "model.Register names (model/models)", registered, ollamaEngineModels)

	src, err := os.ReadFile(filepath.Join(dir, "llama", "llama.cpp", "src", "llama-arch.cpp"))
	if err != nil {
		t.Fatal(err)
	}
	table := string(src)
	start := strings.Index(table, "LLM_ARCH_NAMES = {")
	end := strings.Index(table[start:], "};")
	if start < 0 || end < 0 {
		t.Fatal("llama-arch.cpp has no LLM_ARCH_NAMES table")
	}
	var names []string
	for _, m := range regexp.MustCompile(`\{\s*LLM_ARCH_[A-Z0-9_]+,\s*"([^"]+)"`).FindAllStringSubmatch(table[start:start+end], -1) {
		if m[1] != "clip" && m[1] != "(unknown)" {
			names = append(names, m[1])
		}
	}
	same(t, "llama.cpp's LLM_ARCH_NAMES (llama/llama.cpp/src/llama-arch.cpp)", names, llamaCppArchitectures)
}

func same(t *testing.T, what string, module, ours []string) {
	t.Helper()
	module, ours = slices.Sorted(slices.Values(module)), slices.Sorted(slices.Values(ours))
	if len(module) < 20 || !slices.Equal(module, ours) {
		var missing, extra []string
		for _, n := range module {
			if !slices.Contains(ours, n) {
				missing = append(missing, n)
			}
		}
		for _, n := range ours {
			if !slices.Contains(module, n) {
				extra = append(extra, n)
			}
		}
		t.Errorf("%s: the module has %d, architectures.go %d; missing %q, not in the module %q", what, len(module), len(ours), missing, extra)
	}
}

// TestEmbeddedRuns follows the runtime's choice of engine: its own engine for the
// architectures that require it (an embedding model by "<arch>_embed"), llama.cpp for
// the rest and as the fallback.
func TestEmbeddedRuns(t *testing.T) {
	for _, tc := range []struct {
		arch         string
		pools, split bool
		want         bool
	}{
		{arch: "llama", want: true},
		{arch: "qwen35", want: true},  // the Ollama engine only
		{arch: "gemma4", want: true},  // the Ollama engine only
		{arch: "cohere2", want: true}, // llama.cpp only
		{arch: "bert", pools: true, want: true},
		{arch: "glmocr", pools: true, want: false}, // no glmocr_embed, and llama.cpp has no glmocr
		{arch: "qwen35", split: true, want: false}, // a separate projector: llama.cpp, which has no qwen35
		{arch: "qwen3", split: true, want: true},   // ... but has qwen3
		{arch: "hearthtestarch", want: false},      // nobody's
		{arch: "clip", want: false},                // a projector, not a model
	} {
		if got := EmbeddedRuns(tc.arch, tc.pools, tc.split); got != tc.want {
			t.Errorf("EmbeddedRuns(%q, pools %v, split %v) = %v, want %v", tc.arch, tc.pools, tc.split, got, tc.want)
		}
	}
}

// TestUnsupportedArchitecture reads /api/show as the client decodes it (JSON numbers
// are float64) and judges only GGUF models of this machine.
func TestUnsupportedArchitecture(t *testing.T) {
	for _, tc := range []struct {
		name string
		show api.ShowResponse
		want string
	}{
		{"unknown", api.ShowResponse{ModelInfo: map[string]any{"general.architecture": "hearthtestarch"}}, "hearthtestarch"},
		{"known", api.ShowResponse{ModelInfo: map[string]any{"general.architecture": "qwen3"}}, ""},
		{"pooled without an engine", api.ShowResponse{ModelInfo: map[string]any{"general.architecture": "glmocr", "glmocr.pooling_type": float64(1)}}, "glmocr"},
		{"not pooled", api.ShowResponse{ModelInfo: map[string]any{"general.architecture": "glmocr", "glmocr.pooling_type": float64(0)}}, ""},
		{"split projector", api.ShowResponse{ModelInfo: map[string]any{"general.architecture": "gemma4"}, ProjectorInfo: map[string]any{"general.architecture": "clip"}}, "gemma4"},
		{"not said", api.ShowResponse{}, ""},
		{"not a GGUF", api.ShowResponse{ModelInfo: map[string]any{"general.architecture": "hearthtestarch"}, Details: api.ModelDetails{Format: "safetensors"}}, ""},
		{"remote", api.ShowResponse{ModelInfo: map[string]any{"general.architecture": "hearthtestarch"}, RemoteHost: "https://ollama.com"}, ""},
	} {
		if got := unsupportedArchitecture(&tc.show); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
