package ollama

import (
	"strings"

	"github.com/ollama/ollama/api"

	"hearth/engine/ollama/laterrenderers"
)

// One beginning-of-sequence token. Some renderers write the model's BOS token as text
// at the start of every prompt (Glimmer's <|begin_of_text|>, Laguna's 〈|EOS|〉), and
// most models' tokenizers also put the BOS token in front of every prompt they encode
// (tokenizer.ggml.add_bos_token). A prompt with both starts with two BOS tokens: raw
// generation, which hearth uses, sends the prompt as it is, and neither the embedded
// runtime (v0.24.0: its runners add the token and only warn when the text has it too)
// nor a newer external Ollama (v0.32's raw path) removes one. Ollama's own chat since
// v0.32 (llm/llama_server.go completionPrompt) leaves the renderer's BOS text out when
// the tokenizer adds the token, so the model reads one BOS, as it was trained; hearth
// does the same with its prompts (renderer.RenderPrompt), the text kept where the
// tokenizer adds nothing, so the text is then the prompt's one BOS.
//
// A renderer's BOS text is its Ollama v0.32.15 LeadingBOS (laterrenderers.LeadingBOS:
// the later renderers' own, and for the module's renderers the values v0.32.15 gives
// the same renderers, which v0.24.0's write at the same place). Cohere's renderer names
// <BOS_TOKEN> but does not write it: its prompts start without one, and the tokenizer's
// is their only BOS.

// RendererBOS is the BOS text the renderer of show writes at the start of a prompt
// when the model's tokenizer also adds its BOS token, so the prompts hearth sends
// leave it out; "" when the renderer writes none (or the model has a template) or the
// tokenizer adds none.
func RendererBOS(show *api.ShowResponse) string {
	name, _, err := ModelRenderer(show)
	if err != nil || name == "" {
		return ""
	}
	bos := laterrenderers.LeadingBOS(name)
	if bos == "" || !tokenizerAddsBOS(show.ModelInfo) {
		return ""
	}
	return bos
}

// tokenizerAddsBOS reads the GGUF's tokenizer.ggml.add_bos_token from /api/show's
// model_info (a scalar, so the short show has it). Absent means no, as Ollama v0.32
// reads it. (llama.cpp builds of Ollama v0.30 and later also force BOS for Gemma 4
// and LFM2 tokenizers whatever the key says; v0.24.0's runners, which hearth embeds,
// do not, so that is left to the key here.)
func tokenizerAddsBOS(info map[string]any) bool {
	add, _ := info["tokenizer.ggml.add_bos_token"].(bool)
	return add
}

// withoutRendererBOS is prompt without the BOS text RendererBOS names for show.
func withoutRendererBOS(show *api.ShowResponse, prompt string) string {
	if bos := RendererBOS(show); bos != "" {
		return strings.TrimPrefix(prompt, bos)
	}
	return prompt
}
