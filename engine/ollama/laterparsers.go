package ollama

import (
	"slices"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/model/parsers"
	"github.com/ollama/ollama/types/model"
)

// withParserCapabilities returns show with the capabilities its models.json format gives
// a model whose parser the runtime does not know: a parser the module's release lacks
// (ornith, poolside-v1, ...) leaves the embedded runtime listing neither "tools" nor
// "thinking" for the model, where the release that added the parser lists both. hearth
// reads such a model's output with the format's grammar, so the format says: "tools"
// when it has a tools grammar, "thinking" when it has reasoning delimiters. Without them
// the model would not think when asked to (RenderPrompt renders think only for a
// thinking model). show itself is not changed: a changed model is a copy.
func withParserCapabilities(show *api.ShowResponse) (*api.ShowResponse, error) {
	renderer, parser, err := ModelRenderer(show)
	if err != nil {
		return nil, err
	}
	if parser == "" || moduleKnowsParser(parser) {
		return show, nil
	}
	f := formatOfRenderer(renderer, parser)
	if f == nil {
		return show, nil
	}
	var want []model.Capability
	if f.Tools.Kind != "" {
		want = append(want, model.CapabilityTools)
	}
	if f.Reasoning != nil {
		want = append(want, model.CapabilityThinking)
	}
	var missing []model.Capability
	for _, c := range want {
		if !slices.Contains(show.Capabilities, c) {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return show, nil
	}
	changed := *show
	changed.Capabilities = append(slices.Clone(show.Capabilities), missing...)
	return &changed, nil
}

// moduleKnowsParser reports whether the runtime module has an output parser of that
// name (built in or registered): the runtime then judges the model's capabilities by it.
func moduleKnowsParser(name string) bool { return parsers.ParserForName(name) != nil }
