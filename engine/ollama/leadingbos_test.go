package ollama

import (
	"testing"

	"github.com/ollama/ollama/api"
)

// TestRendererBOS: the BOS text left out of a model's prompts is its renderer's, only
// where the tokenizer adds the token itself; template models and renderers that write
// none keep their prompts whole.
func TestRendererBOS(t *testing.T) {
	adds := map[string]any{"general.architecture": "llama", "tokenizer.ggml.add_bos_token": true}
	none := map[string]any{"general.architecture": "llama", "tokenizer.ggml.add_bos_token": false}
	for _, c := range []struct {
		renderer string
		info     map[string]any
		want     string
	}{
		{"glimmer", adds, "<|begin_of_text|>"},
		{"glimmer", none, ""},
		{"glimmer", map[string]any{}, ""},
		{"cohere", adds, "<BOS_TOKEN>"},
		{"laguna", adds, "〈|EOS|〉"},
		{"gemma4-large", adds, "<bos>"},
		{"qwen3.5", adds, ""},
		{"", adds, ""},
	} {
		show := &api.ShowResponse{Renderer: c.renderer, ModelInfo: c.info}
		if got := RendererBOS(show); got != c.want {
			t.Errorf("%q, %v: %q, want %q", c.renderer, c.info, got, c.want)
		}
	}
	show := &api.ShowResponse{Renderer: "glimmer", ModelInfo: adds}
	if got := withoutRendererBOS(show, "<|begin_of_text|><|start|>system"); got != "<|start|>system" {
		t.Errorf("glimmer: %q", got)
	}
	show.Renderer = "cohere"
	if got := withoutRendererBOS(show, "<|START_OF_TURN_TOKEN|>"); got != "<|START_OF_TURN_TOKEN|>" {
		t.Errorf("cohere writes no BOS text: %q", got)
	}
}
