package ollama

import (
	"strings"

	"github.com/ollama/ollama/api"
)

// One beginning-of-sequence token. Some templates write the model's BOS token as text
// at the start of every prompt ({{ bos_token }}: Gemma's <bos>, LFM2's <|startoftext|>,
// Cohere's <BOS_TOKEN>), and most models' tokenizers also put the BOS token in front of
// every prompt they encode (tokenizer.ggml.add_bos_token). A prompt with both starts
// with two BOS tokens: raw generation, which hearth uses, sends the prompt as it is, and
// neither the embedded runtime (v0.24.0: its runners add the token and only warn when
// the text has it too) nor a newer external Ollama (v0.32's raw path) removes one.
// Ollama's own chat since v0.32 leaves the renderer's BOS text out when the tokenizer
// adds the token, so the model reads one BOS, as it was trained; hearth does the same
// with its prompts (renderer.RenderPrompt), the text kept where the tokenizer adds
// nothing, so the text is then the prompt's one BOS.
//
// The BOS text is the tokenizer's own (the GGUF's bos token, which a Jinja template
// writes as bos_token). The module's built-in renderers, which render where no Jinja
// template does, write a fixed text: moduleLeadingBOS.

// moduleLeadingBOS is the BOS text the module's (Ollama v0.24.0) built-in renderers
// write at the start of every prompt; renderers not listed write none.
var moduleLeadingBOS = map[string]string{
	"cogito":        "<｜begin▁of▁sentence｜>",
	"deepseek3.1":   "<｜begin▁of▁sentence｜>",
	"functiongemma": "<bos>",
}

// RendererBOS is the BOS text the template (or renderer) of show writes at the start of
// a prompt when the model's tokenizer also adds its BOS token, so the prompts hearth
// sends leave it out; "" when it writes none or the tokenizer adds none.
func RendererBOS(show *api.ShowResponse) string {
	if !tokenizerAddsBOS(show.ModelInfo) {
		return ""
	}
	sources, err := TemplateSources(show)
	if err != nil || len(sources) == 0 {
		return ""
	}
	switch s := sources[0]; s.Kind {
	case SourceGGUF, SourceFormat:
		return s.BOS
	case SourceRenderer:
		return moduleLeadingBOS[s.Name]
	}
	return ""
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
