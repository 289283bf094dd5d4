// Package laterrenderers carries the prompt renderers that Ollama added after the
// release hearth embeds (the github.com/ollama/ollama module, v0.24.0), so that hearth
// renders those models' prompts itself, as it renders every other model's, when an
// external runtime of a newer release serves them.
//
// The renderers are Ollama v0.32.15's model/renderers code (the newest release; v0.33's
// release candidates have the same renderers), copied because one Go module cannot be
// required at two versions: the embedded runtime needs v0.24.0, the last release that
// runs models in-process. LICENSE.ollama is Ollama's licence, under which they are
// copied. The copies keep Ollama's code as it is, apart from the package name, the image-tag flag
// (the module's renderers.RenderImgTags, which its server sets) and this
// file, which replaces Ollama's registry: importing the package registers each renderer
// below with the module's own registry (renderers.Register), under the name the model's
// RENDERER line gives, so renderers.RenderWithRenderer (what hearth and the embedded
// server call) finds them. Only names the module does not know are registered; the
// renderers the module has keep its v0.24.0 behaviour.
package laterrenderers

import (
	"sort"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/model/renderers"
)

// Renderer is Ollama v0.32.15's renderer interface: Render as in v0.24.0, and the
// beginning-of-sequence text the renderer writes at the start of a prompt (which a
// runtime that adds its own must not add twice).
type Renderer interface {
	Render(messages []api.Message, tools []api.Tool, think *api.ThinkValue) (string, error)
	LeadingBOS() string
}

// later maps each renderer name Ollama v0.32.15 knows and v0.24.0 does not to its
// constructor, as v0.32.15's rendererForName builds it.
var later = map[string]func() Renderer{
	"qwen3.8":           func() Renderer { return newQwen38Renderer() },
	"ornith":            newOrnithRenderer,
	"nemotron-3.5-nano": func() Renderer { return &Nemotron3NanoRenderer{v35: true} },
	"poolside-v1":       func() Renderer { return &LagunaV8Renderer{} },
	"cohere":            func() Renderer { return &CohereRenderer{} },
	"glimmer":           func() Renderer { return &GlimmerRenderer{useImgTags: renderers.RenderImgTags} },
}

func init() {
	for name, build := range later {
		renderers.Register(name, func() renderers.Renderer { return build() })
	}
}

// Names lists the renderers this package adds, sorted.
func Names() []string {
	names := make([]string, 0, len(later))
	for name := range later {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// LeadingBOS is the beginning-of-sequence text the named renderer starts its prompts
// with, as Ollama v0.32.15's renderer of that name says (for one of Names and for the
// module's renderers alike, see bos.go), "" where it writes none or the name is no
// renderer's.
func LeadingBOS(name string) string {
	if build, ok := later[name]; ok {
		return build().LeadingBOS()
	}
	return moduleLeadingBOS[name]
}
