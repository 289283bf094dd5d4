package ollama

import (
	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/model/renderers"

	"hearth/engine/chattemplate"
)

// jinjaRegistered are the renderer names rendered by their models.json format's Jinja
// template for the embedded runtime's own /api/chat too (registered with the module's
// registry, which it consults before its built-in renderers):
//   - names the module (Ollama v0.24.0) does not know, which later Ollama releases
//     added for this year's families: qwen3.8, ornith, nemotron-3.5-nano, poolside-v1,
//     cohere, glimmer;
//   - names the module knows but renders otherwise than the families' chat templates:
//     laguna (its system block describes JSON calls where the model writes XML),
//     nemotron-3-nano, gemma4 and its two sizes, lfm2, lfm2-thinking, qwen3.5.
//
// One adapter renders them all (jinjaRenderer); no name has Go code of its own. The
// module's registry hands a renderer no model, so these renderers have no tokenizer
// BOS/EOS texts: bos_token and eos_token are empty there, which leaves the BOS token to
// the tokenizer (it adds its own). hearth's own renders have the GGUF's texts.
var jinjaRegistered = []string{
	"qwen3.8", "ornith", "nemotron-3.5-nano", "poolside-v1", "cohere", "glimmer",
	"laguna", "nemotron-3-nano", "gemma4", "gemma4-small", "gemma4-large", "lfm2", "lfm2-thinking", "qwen3.5",
}

func init() {
	for _, name := range jinjaRegistered {
		f := formatOfRenderer(name, "")
		if f == nil {
			panic("models.json: no format with a template names the renderer " + name)
		}
		text, ok := chattemplate.Builtin(f.Template)
		if !ok {
			panic("models.json: format " + f.ID + " names the missing template " + f.Template)
		}
		src := TemplateSource{Kind: SourceFormat, Name: f.ID, Text: text}
		renderers.Register(name, func() renderers.Renderer {
			r, err := jinjaFor(src)
			if err != nil {
				return failingRenderer{err}
			}
			return r
		})
	}
}

// failingRenderer answers every render with the error its template's compilation gave.
type failingRenderer struct{ err error }

func (f failingRenderer) Render([]api.Message, []api.Tool, *api.ThinkValue) (string, error) {
	return "", f.err
}
