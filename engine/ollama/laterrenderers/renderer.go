// Package laterrenderers carries prompt renderers of Ollama v0.32.15 that the release
// hearth embeds (the github.com/ollama/ollama module, v0.24.0) lacks or renders
// differently, so that hearth renders those models' prompts as Ollama's newest release
// and the models' own chat templates do, whether the embedded runtime or an external
// one of any release serves them.
//
// Two kinds of names are registered (see Names and Overrides):
//   - new names: renderers Ollama added after v0.24.0 (qwen3.8, ornith, ...), which
//     the module does not know at all;
//   - overrides: renderers the module has whose output v0.32.15 corrected to match the
//     model's chat template (laguna, nemotron-3-nano, gemma4, lfm2, qwen3.5: Ollama's
//     *_reference_test.go files check them against the Jinja templates). The module's
//     registry is consulted before its built-in switch, so registering one of these
//     names replaces v0.24.0's renderer for hearth and for the embedded server's
//     /api/chat alike.
//
// Renderers whose code changed between the two releases only by gaining a LeadingBOS
// method render the same prompt and are left to the module (bos.go has their BOS).
//
// The renderers are Ollama v0.32.15's model/renderers code (the newest release; v0.33's
// release candidates have the same renderers), copied because one Go module cannot be
// required at two versions: the embedded runtime needs v0.24.0, the last release that
// runs models in-process. LICENSE.ollama is Ollama's licence, under which they are
// copied. The copies keep Ollama's code as it is, apart from the package name, the
// image-tag flag (the module's renderers.RenderImgTags, which its server sets) and this
// file, which replaces Ollama's registry: importing the package registers each renderer
// below with the module's own registry (renderers.Register), under the name the model's
// RENDERER line gives, so renderers.RenderWithRenderer (what hearth and the embedded
// server call) finds them.
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

// overrides maps renderer names the module (v0.24.0) has too to v0.32.15's renderer
// of that name, as v0.32.15's rendererForName builds it: these replace the module's
// older renderer, whose prompts differ from the models' chat templates (laguna's system
// block described hermes JSON calls where the model writes XML <arg_key> calls;
// nemotron-3-nano had blank lines the template lacks; gemma4 closed turns and dropped
// thinking where the template does not; lfm2-thinking lost a turn's reasoning; qwen3.5
// mishandled non-leading system messages and developer instructions).
var overrides = map[string]func() Renderer{
	"laguna":          func() Renderer { return &LagunaRenderer{} },
	"nemotron-3-nano": func() Renderer { return &Nemotron3NanoRenderer{} },
	"gemma4":          func() Renderer { return &Gemma4Renderer{useImgTags: renderers.RenderImgTags} },
	"gemma4-small":    func() Renderer { return &Gemma4Renderer{useImgTags: renderers.RenderImgTags} },
	"gemma4-large": func() Renderer {
		return &Gemma4Renderer{useImgTags: renderers.RenderImgTags, emptyBlockOnNothink: true}
	},
	"lfm2":          func() Renderer { return &LFM2Renderer{IsThinking: false, useImgTags: renderers.RenderImgTags} },
	"lfm2-thinking": func() Renderer { return &LFM2Renderer{IsThinking: true, useImgTags: renderers.RenderImgTags} },
	"qwen3.5": func() Renderer {
		return &Qwen35Renderer{isThinking: true, emitEmptyThinkOnNoThink: true, useImgTags: renderers.RenderImgTags}
	},
}

func init() {
	for _, m := range []map[string]func() Renderer{later, overrides} {
		for name, build := range m {
			renderers.Register(name, func() renderers.Renderer { return build() })
		}
	}
}

// Names lists the renderers this package adds (names the module does not know), sorted.
func Names() []string { return sortedNames(later) }

// Overrides lists the module's renderer names this package replaces with v0.32.15's
// renderer of that name, sorted.
func Overrides() []string { return sortedNames(overrides) }

func sortedNames(m map[string]func() Renderer) []string {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// build is the constructor of the renderer this package registers under name, nil
// when it registers none.
func build(name string) func() Renderer {
	if b, ok := later[name]; ok {
		return b
	}
	return overrides[name]
}

// LeadingBOS is the beginning-of-sequence text the named renderer starts its prompts
// with, as Ollama v0.32.15's renderer of that name says (for this package's renderers
// and for the module's alike, see bos.go), "" where it writes none or the name is no
// renderer's.
func LeadingBOS(name string) string {
	if b := build(name); b != nil {
		return b().LeadingBOS()
	}
	return moduleLeadingBOS[name]
}
