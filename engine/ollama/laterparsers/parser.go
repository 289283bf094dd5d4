// Package laterparsers carries Ollama v0.32.15's output parsers for the families whose
// v0.32.15 renderer hearth takes over the module's (v0.24.0's; see
// engine/ollama/laterrenderers, Overrides) and whose parser v0.32.15 changed with it:
// laguna (its prompt now opens or closes the reasoning), lfm2 and lfm2-thinking (optional
// thinking: reasoning only after a written <think>) and gemma4 (the answer after a tool
// result starts in the thought channel the prompt opened).
//
// hearth reads model output with its own formats (models.json, toolgrammar), not with
// these. They are for the embedded runtime's own chat (/api/chat, reached through
// hearth's /api passthrough): importing the package registers each with the module's
// parser registry (parsers.Register), which the module consults before its built-in
// parsers, so that chat reads what v0.32.15's prompts make the model write, as Ollama
// v0.32.15 does. Without them v0.24.0's parsers would meet prompts they were not
// written for (a laguna prompt ending in <think>, a direct lfm2 answer read as
// reasoning, gemma4 reasoning after a tool result read as text).
//
// The copies keep Ollama's code as it is apart from the package name; helpers.go
// holds the few functions they share with the rest of Ollama's package.
// LICENSE.ollama is Ollama's licence, under which they are copied. The nemotron-3-nano
// and qwen3.5 parsers changed between the releases only in how they trim whitespace
// around tags, so the module's are kept.
package laterparsers

import (
	"sort"

	"github.com/ollama/ollama/model/parsers"
)

// overrides maps each parser name this package replaces to its v0.32.15 constructor,
// as v0.32.15's ParserForName builds it.
var overrides = map[string]func() parsers.Parser{
	"laguna":             func() parsers.Parser { return &LagunaParser{} },
	"lfm2":               func() parsers.Parser { return &LFM2Parser{hasThinkingSupport: false} },
	"lfm2-thinking":      func() parsers.Parser { return &LFM2Parser{hasThinkingSupport: true} },
	"gemma4":             func() parsers.Parser { return &Gemma4Parser{hasThinkingSupport: true} },
	"gemma4-no-thinking": func() parsers.Parser { return &Gemma4Parser{hasThinkingSupport: false} },
}

func init() {
	for name, build := range overrides {
		parsers.Register(name, build)
	}
}

// Overrides lists the module's parser names this package replaces, sorted.
func Overrides() []string {
	names := make([]string, 0, len(overrides))
	for name := range overrides {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
