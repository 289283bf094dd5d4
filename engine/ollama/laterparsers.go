package ollama

import (
	"slices"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/types/model"

	"hearth/engine/ollama/laterrenderers"
)

// withParserCapabilities returns show with the capabilities a later Ollama release
// gives the model for its parser: a parser the module's release does not know (ornith,
// poolside-v1, ...) leaves the embedded runtime listing neither "tools" nor "thinking"
// for the model, where the release that added the parser lists both. Without them the
// model would not think when asked to (RenderPrompt renders think only for a thinking
// model) and would answer differently from the embedded runtime and from an external
// runtime of that release. show itself is not changed: a changed model is a copy.
func withParserCapabilities(show *api.ShowResponse) (*api.ShowResponse, error) {
	_, parser, err := ModelRenderer(show)
	if err != nil {
		return nil, err
	}
	var missing []model.Capability
	for _, c := range laterrenderers.ParserCapabilities(parser) {
		if !slices.Contains(show.Capabilities, model.Capability(c)) {
			missing = append(missing, model.Capability(c))
		}
	}
	if len(missing) == 0 {
		return show, nil
	}
	changed := *show
	changed.Capabilities = append(slices.Clone(show.Capabilities), missing...)
	return &changed, nil
}
