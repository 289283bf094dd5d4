package ollama

import (
	"slices"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/types/model"
)

// TestWithParserCapabilities: a model on a parser the module lacks is listed as a
// tools and thinking model, as the Ollama release that added the parser lists it, and a
// parser that a format lists as not thinking adds tools alone; other models, and a
// runtime that lists them already, are left as they are.
func TestWithParserCapabilities(t *testing.T) {
	completion := []model.Capability{model.CapabilityCompletion}
	for _, c := range []struct {
		name string
		show *api.ShowResponse
		want []model.Capability
	}{
		{"ornith on v0.24.0", &api.ShowResponse{Parser: "ornith", Capabilities: completion},
			[]model.Capability{"completion", "tools", "thinking"}},
		{"poolside-v1 read from the Modelfile", &api.ShowResponse{Modelfile: "FROM x\nRENDERER poolside-v1\nPARSER poolside-v1\n", Capabilities: completion},
			[]model.Capability{"completion", "tools", "thinking"}},
		{"gemma4 told not to think", &api.ShowResponse{Renderer: "gemma4", Parser: "gemma4-no-thinking", Capabilities: completion},
			[]model.Capability{"completion", "tools"}},
		{"lfm2", &api.ShowResponse{Renderer: "lfm2", Parser: "lfm2", Capabilities: completion},
			[]model.Capability{"completion", "tools"}},
		{"lfm2-thinking", &api.ShowResponse{Renderer: "lfm2-thinking", Parser: "lfm2-thinking", Capabilities: completion},
			[]model.Capability{"completion", "tools", "thinking"}},
		{"a later runtime lists them", &api.ShowResponse{Parser: "nemotron-3.5-nano", Capabilities: []model.Capability{"completion", "thinking", "tools"}},
			[]model.Capability{"completion", "thinking", "tools"}},
		{"a parser the module has", &api.ShowResponse{Renderer: "qwen3.8", Parser: "qwen3.5", Capabilities: completion},
			[]model.Capability{"completion"}},
		{"no parser", &api.ShowResponse{Capabilities: completion}, []model.Capability{"completion"}},
	} {
		before := slices.Clone(c.show.Capabilities)
		got, err := withParserCapabilities(c.show)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Capabilities, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got.Capabilities, c.want)
		}
		if !slices.Equal(c.show.Capabilities, before) {
			t.Errorf("%s: the given show was changed", c.name)
		}
	}
}
