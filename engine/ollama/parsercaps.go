package ollama

import (
	"slices"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/model/parsers"
	"github.com/ollama/ollama/types/model"

	"hearth/toolgrammar"
)

// withParserCapabilities returns show with the capabilities its models.json format gives
// a model whose output hearth reads with the format: a parser the module's release lacks
// (ornith, poolside-v1, ...) leaves a runtime of that release listing neither "tools"
// nor "thinking" for the model, where the release that added the parser lists both.
// "tools" when the format has a tools grammar; "thinking" as the format's chat_parsers
// entry for the parser says (lfm2 and gemma4-no-thinking do not think), else when the
// format has reasoning delimiters. Without them the model would not think when asked to
// (RenderPrompt renders think only for a thinking model). A parser the module has and no
// format lists is the runtime's to judge. Capabilities are only added, and show itself
// is not changed: a changed model is a copy.
func withParserCapabilities(show *api.ShowResponse) (*api.ShowResponse, error) {
	renderer, parser, err := ModelRenderer(show)
	if err != nil {
		return nil, err
	}
	if parser == "" {
		return show, nil
	}
	f := formatOfRenderer(renderer, parser)
	if f == nil {
		return show, nil
	}
	thinking := f.Reasoning != nil
	if i := slices.IndexFunc(f.ChatParsers, func(cp toolgrammar.ChatParser) bool { return cp.Name == parser }); i >= 0 {
		thinking = f.ChatParsers[i].Thinking
	} else if moduleKnowsParser(parser) {
		return show, nil
	}
	var want []model.Capability
	if f.Tools.Kind != "" {
		want = append(want, model.CapabilityTools)
	}
	if thinking {
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
