package ollama

import (
	"testing"

	"github.com/ollama/ollama/api"
)

// TestRendererBOS: the BOS text left out of a model's prompts is the tokenizer's BOS
// text (from the GGUF) that its Jinja template writes, only where the tokenizer adds the
// token itself; a module renderer's fixed BOS text likewise; template models and models
// whose file names no BOS keep their prompts whole.
func TestRendererBOS(t *testing.T) {
	info := func(add any, bos string) map[string]any {
		m := map[string]any{"general.architecture": "llama"}
		if add != nil {
			m["tokenizer.ggml.add_bos_token"] = add
		}
		if bos != "" {
			m[bosTextKey] = bos
		}
		return m
	}
	for _, c := range []struct {
		renderer, template string
		info               map[string]any
		want               string
	}{
		{"glimmer", "", info(true, "<|begin_of_text|>"), "<|begin_of_text|>"},
		{"glimmer", "", info(false, "<|begin_of_text|>"), ""},
		{"glimmer", "", info(nil, "<|begin_of_text|>"), ""},
		{"cohere", "", info(true, "<BOS_TOKEN>"), "<BOS_TOKEN>"},
		{"gemma4-large", "", info(true, "<bos>"), "<bos>"},
		{"gemma4-large", "", info(true, ""), ""},
		// No format names the renderer: the module's renderer, whose BOS text is fixed.
		{"cogito", "", info(true, ""), "<｜begin▁of▁sentence｜>"},
		{"", "{{ .Prompt }}", info(true, "<s>"), ""},
	} {
		show := &api.ShowResponse{Renderer: c.renderer, Template: c.template, ModelInfo: c.info}
		if got := RendererBOS(show); got != c.want {
			t.Errorf("%q, %v: %q, want %q", c.renderer, c.info, got, c.want)
		}
	}
	show := &api.ShowResponse{Renderer: "glimmer", ModelInfo: info(true, "<|begin_of_text|>")}
	if got := withoutRendererBOS(show, "<|begin_of_text|><|start|>system"); got != "<|start|>system" {
		t.Errorf("glimmer: %q", got)
	}
	if got := withoutRendererBOS(show, "<|start|>system"); got != "<|start|>system" {
		t.Errorf("a prompt without the BOS text is kept whole: %q", got)
	}
}
