package ollama

import (
	"fmt"
	"slices"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/model/renderers"

	"hearth/engine/chattemplate"
	"hearth/toolgrammar"
)

// jinjaRegistered are the renderer names rendered by their models.json format's Jinja
// template, for the embedded runtime's own /api/chat too (registered with the module's
// registry, which it consults before its built-in renderers): the names of every format
// marked replaces_renderer. Those are names the module (Ollama v0.24.0) does not know,
// which later Ollama releases added for this year's families (qwen3.8, ornith, ...), and
// names it knows but renders otherwise than the families' chat templates (laguna's
// system block describes JSON calls where the model writes XML; gemma4, lfm2, qwen3.5,
// ...). A new family is a template and a format: no name is listed in Go.
//
// One adapter renders them all (jinjaRenderer); no name has Go code of its own. The
// module's registry hands a renderer no model, so these renderers have no tokenizer
// BOS/EOS texts: bos_token and eos_token are empty there, which leaves the BOS token to
// the tokenizer (it adds its own). hearth's own renders have the GGUF's texts.
var jinjaRegistered []string

// replacedRenderers returns the renderer names formats mark replaces_renderer, each
// once, and fails on a marked format that has no template or names no renderer.
func replacedRenderers(formats []*toolgrammar.Format) ([]string, error) {
	var names []string
	for _, f := range formats {
		if !f.ReplacesRenderer {
			continue
		}
		if f.Template == "" || len(f.Match.Renderers) == 0 {
			return nil, fmt.Errorf("models.json: format %s replaces renderers but has no template or names no renderer in match.renderers", f.ID)
		}
		if _, ok := chattemplate.Builtin(f.Template); !ok {
			return nil, fmt.Errorf("models.json: format %s names the missing template %s", f.ID, f.Template)
		}
		for _, r := range f.Match.Renderers {
			if !slices.Contains(names, r) {
				names = append(names, r)
			}
		}
	}
	return names, nil
}

func init() {
	names, err := replacedRenderers(builtinFormats().Formats())
	if err != nil {
		panic(err)
	}
	jinjaRegistered = names
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
