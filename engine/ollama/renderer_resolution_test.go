package ollama_test

import (
	"testing"

	"github.com/ollama/ollama/api"

	"hearth/engine/ollama"
)

// TestResolveRenderer: gemma4 is resolved as v0.24.0's server/renderer_resolution.go
// does (name first, then parameter size); other renderers and the given show stay.
func TestResolveRenderer(t *testing.T) {
	cases := []struct {
		name, renderer, size, want string
	}{
		{"gemma4:e4b", "gemma4", "8.0B", "gemma4-small"},
		{"gemma4:31b", "gemma4", "", "gemma4-large"},
		{"hf.co/someone/gemma-4-26B-A4B-it-GGUF:Q4_K_M", "gemma4", "", "gemma4-large"},
		{"gemma4:latest", "gemma4", "30.7B", "gemma4-large"},
		{"gemma4:latest", "gemma4", "16B", "gemma4-large"},
		{"gemma4:latest", "gemma4", "15.9B", "gemma4-small"},
		{"gemma4:latest", "gemma4", "270M", "gemma4-small"},
		{"mygemma:latest", "gemma4", "", "gemma4-small"},
		// The name wins over the size.
		{"gemma4-e2b-big:latest", "gemma4", "31B", "gemma4-small"},
		// An explicit size variant and other renderers are kept.
		{"gemma4:31b", "gemma4-small", "", "gemma4-small"},
		{"qwen3.5:27b", "qwen3.5", "27B", "qwen3.5"},
	}
	for _, c := range cases {
		show := &api.ShowResponse{Renderer: c.renderer, Parser: "p", Details: api.ModelDetails{ParameterSize: c.size}}
		got, err := ollama.ResolveRenderer(c.name, show)
		if err != nil {
			t.Fatal(err)
		}
		if got.Renderer != c.want || got.Parser != "p" {
			t.Errorf("%s (%s, %s): renderer %q parser %q, want %q", c.name, c.renderer, c.size, got.Renderer, got.Parser, c.want)
		}
		if show.Renderer != c.renderer {
			t.Errorf("%s: the given show was changed", c.name)
		}
	}
	// A Modelfile's RENDERER line (how /api/show carries it) is resolved too.
	show := &api.ShowResponse{Modelfile: "FROM x\nRENDERER gemma4\nPARSER gemma4\n"}
	got, err := ollama.ResolveRenderer("gemma4:26b", show)
	if err != nil || got.Renderer != "gemma4-large" || got.Parser != "gemma4" {
		t.Fatalf("from the Modelfile: %+v %v", got, err)
	}
}
