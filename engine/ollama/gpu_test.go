package ollama

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ollama/ollama/ml"
)

// TestConfigureGPU: Ollama (v0.17.4 to v0.24.0) skips its Vulkan backend unless OLLAMA_VULKAN is set,
// so hearth sets it, leaves a user's own choice alone, and forces it off for --gpu=false.
func TestConfigureGPU(t *testing.T) {
	for _, tc := range []struct {
		name  string
		user  string // "" means unset
		noGPU bool
		want  string
	}{
		{"default on", "", false, "1"},
		{"user's choice kept", "0", false, "0"},
		{"--gpu=false wins", "1", true, "0"},
		{"--gpu=false unset", "", true, "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("OLLAMA_VULKAN", tc.user)
			if tc.user == "" {
				os.Unsetenv("OLLAMA_VULKAN")
			}
			configureGPU(tc.noGPU)
			if got := os.Getenv("OLLAMA_VULKAN"); got != tc.want {
				t.Errorf("OLLAMA_VULKAN = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestGPUBackends: a backend is a subdirectory of the runtime's library directory that
// holds a ggml library, as the runtime's discovery sees it; libggml-base.so beside them
// is not one.
func TestGPUBackends(t *testing.T) {
	dir := t.TempDir()
	prev := ml.LibOllamaPath
	ml.LibOllamaPath = dir
	t.Cleanup(func() { ml.LibOllamaPath = prev })

	if got := GPUBackends(); len(got) != 0 {
		t.Fatalf("empty lib dir: backends %v", got)
	}
	for _, f := range []string{"libggml-base.so", "vulkan/libggml-vulkan.so", "cuda_v12/libggml-cuda.so", "empty/readme.txt"} {
		p := filepath.Join(dir, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := GPUBackends(), []string{"cuda_v12", "vulkan"}; !slices.Equal(got, want) {
		t.Errorf("backends %v, want %v", got, want)
	}
}
