package ollama

import (
	"strings"
	"sync"

	"github.com/ollama/ollama/api"

	"hearth/engine"
	"hearth/engine/ollama/laterrenderers"
)

// One beginning-of-sequence token per prompt. Some renderers write the model's BOS as
// text at the start of the prompt (laguna's and poolside-v1's 〈|EOS|〉, gemma4's
// <bos>, ...), and a runtime's tokenizer may put a BOS token before every prompt too
// (the model's tokenizer.ggml.add_bos_token). Ollama v0.24.0 (and the runners of every
// release hearth embeds) tokenizes the prompt with its special tokens and adds the
// tokenizer's BOS regardless, so such a model sees two. Ollama's own chat fixed that
// after v0.24.0 (v0.32.15 llm/llama_server.go, completionPrompt): when the tokenizer
// adds BOS, a prompt that starts with the renderer's LeadingBOS text, or with "<bos>",
// loses that text. Raw generation, which hearth uses, passes no LeadingBOS there, so
// hearth does the same itself before sending a prompt, over any runtime: the model sees
// the one BOS its own chat would give it.

// duplicateBOS returns the text to take off the start of the model's prompts: "" when
// its tokenizer adds no BOS (the rendered one is the only one), else the renderer's
// LeadingBOS, or "<bos>" when the renderer names none (template models whose template
// writes it), as v0.32.15's completionPrompt.
func duplicateBOS(show *api.ShowResponse, renderer string) string {
	if !tokenizerAddsBOS(show.ModelInfo) {
		return ""
	}
	if bos := laterrenderers.LeadingBOS(renderer); bos != "" {
		return bos
	}
	return "<bos>"
}

// tokenizerAddsBOS is v0.32.15's llamaServerRunner.tokenizerAddsBOS over /api/show's
// model info: the tokenizer.ggml.add_bos_token flag, and always for lfm2's and Gemma 4's
// tokenizers (llama.cpp adds BOS for Gemma 4 whatever its flag says).
func tokenizerAddsBOS(info map[string]any) bool {
	pre, _ := info["tokenizer.ggml.pre"].(string)
	tokModel, _ := info["tokenizer.ggml.model"].(string)
	if pre == "lfm2" || pre == "gemma4" || tokModel == "gemma4" {
		return true
	}
	add, _ := info["tokenizer.ggml.add_bos_token"].(bool)
	return add
}

// promptBOS keeps each model's duplicateBOS from its last Model, for Generate.
type promptBOS struct{ m sync.Map } // model name -> string

func (b *promptBOS) set(name, bos string) {
	if b == nil {
		return
	}
	if bos == "" {
		b.m.Delete(name)
		return
	}
	b.m.Store(name, bos)
}

// trim returns req with its prompt's duplicate BOS text taken off (req itself when
// there is none to take).
func (b *promptBOS) trim(req *engine.GenerateRequest) *engine.GenerateRequest {
	if b == nil {
		return req
	}
	v, ok := b.m.Load(req.Model)
	if !ok || !strings.HasPrefix(req.Prompt, v.(string)) {
		return req
	}
	trimmed := *req
	trimmed.Prompt = strings.TrimPrefix(req.Prompt, v.(string))
	return &trimmed
}
