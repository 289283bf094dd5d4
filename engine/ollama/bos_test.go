package ollama

import (
	"testing"

	"github.com/ollama/ollama/api"

	"hearth/engine"
)

// TestDuplicateBOS: a prompt loses the BOS text its renderer writes only when the
// model's tokenizer adds a BOS token itself, as Ollama v0.32.15's chat decides.
func TestDuplicateBOS(t *testing.T) {
	adds := map[string]any{"tokenizer.ggml.add_bos_token": true}
	for _, c := range []struct {
		name, renderer string
		info           map[string]any
		want           string
	}{
		{"poolside-v1, the tokenizer adds BOS", "poolside-v1", adds, "〈|EOS|〉"},
		{"poolside-v1, the rendered BOS is the only one", "poolside-v1", map[string]any{"tokenizer.ggml.add_bos_token": false}, ""},
		{"poolside-v1, no flag", "poolside-v1", map[string]any{}, ""},
		{"laguna (the module's renderer)", "laguna", adds, "〈|EOS|〉"},
		{"gemma4-large", "gemma4-large", adds, "<bos>"},
		{"gemma4's tokenizer adds BOS whatever its flag", "gemma4-small", map[string]any{"tokenizer.ggml.pre": "gemma4", "tokenizer.ggml.add_bos_token": false}, "<bos>"},
		{"lfm2's tokenizer too", "lfm2", map[string]any{"tokenizer.ggml.pre": "lfm2"}, "<|startoftext|>"},
		{"a renderer without BOS text", "qwen3.8", adds, "<bos>"},
		{"a template model", "", adds, "<bos>"},
	} {
		if got := duplicateBOS(&api.ShowResponse{ModelInfo: c.info}, c.renderer); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestPromptBOSTrim: the text comes off the start of the model's prompts only, and the
// caller's request is not changed.
func TestPromptBOSTrim(t *testing.T) {
	b := &promptBOS{}
	b.set("m", "〈|EOS|〉")
	b.set("other", "")
	req := &engine.GenerateRequest{Model: "m", Prompt: "〈|EOS|〉<system>hi〈|EOS|〉"}
	if got := b.trim(req); got.Prompt != "<system>hi〈|EOS|〉" || req.Prompt != "〈|EOS|〉<system>hi〈|EOS|〉" {
		t.Errorf("trimmed %q, request now %q", got.Prompt, req.Prompt)
	}
	for _, r := range []*engine.GenerateRequest{
		{Model: "m", Prompt: "<system>〈|EOS|〉"},
		{Model: "other", Prompt: "〈|EOS|〉x"},
		{Model: "unknown", Prompt: "〈|EOS|〉x"},
	} {
		if got := b.trim(r); got != r {
			t.Errorf("%s: %q changed to %q", r.Model, r.Prompt, got.Prompt)
		}
	}
	b.set("m", "")
	if got := b.trim(req); got != req {
		t.Errorf("after the model lost its BOS text: %q", got.Prompt)
	}
	var none *promptBOS
	if got := none.trim(req); got != req {
		t.Error("a seam without a promptBOS changed the prompt")
	}
}
