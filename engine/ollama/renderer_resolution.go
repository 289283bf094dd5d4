package ollama

import (
	"strconv"
	"strings"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/types/model"
)

// The runtime does not always render a model with the renderer its Modelfile names:
// since v0.24.0 (server/renderer_resolution.go) the renderer "gemma4" is rendered as
// "gemma4-small" (the e2b/e4b models) or "gemma4-large" (26b/31b), whose prompt ends
// with an empty thought block when the model is not asked to think. The choice needs
// the model's name, which /api/show does not carry, so it is made where the name is
// known (the seam's Model) and the rest of the package renders the resolved name.

// gemma4LargeMinParameters is where the runtime takes a Gemma 4 model for a large one
// when its name does not say.
const gemma4LargeMinParameters = 16_000_000_000

// ResolveRenderer returns show with its renderer as the runtime resolves it for the
// model called name before rendering: "gemma4" becomes "gemma4-small" or
// "gemma4-large", by the name (e2b/e4b small, 26b/31b large: the short name first,
// then the full one), then by the parameter size (>= 16B large), else small. Any other
// renderer (and an explicit gemma4-small or gemma4-large) is kept. show itself is not
// changed: a changed model is a copy.
func ResolveRenderer(name string, show *api.ShowResponse) (*api.ShowResponse, error) {
	renderer, parser, err := ModelRenderer(show)
	if err != nil || renderer != "gemma4" {
		return show, err
	}
	resolved := *show
	resolved.Renderer, resolved.Parser = resolveGemma4(name, show.Details.ParameterSize), parser
	return &resolved, nil
}

// gemma4Sizes are the size tags in Gemma 4 model names and the renderer each means, in
// the order they are looked for (the small ones first).
var gemma4Sizes = []struct{ tag, renderer string }{
	{"e2b", "gemma4-small"}, {"e4b", "gemma4-small"},
	{"26b", "gemma4-large"}, {"31b", "gemma4-large"},
}

func resolveGemma4(name, parameterSize string) string {
	n := model.ParseName(name)
	for _, s := range []string{n.DisplayShortest(), n.String(), name} {
		lower := strings.ToLower(s)
		for _, size := range gemma4Sizes {
			if strings.Contains(lower, size.tag) {
				return size.renderer
			}
		}
	}
	if n, ok := humanParameterCount(parameterSize); ok && n >= gemma4LargeMinParameters {
		return "gemma4-large"
	}
	return "gemma4-small"
}

// humanParameterCount reads a parameter size as the runtime writes it ("31.3B",
// "270M", "900K").
func humanParameterCount(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	var mult float64
	switch strings.ToUpper(s[len(s)-1:]) {
	case "B":
		mult = 1e9
	case "M":
		mult = 1e6
	case "K":
		mult = 1e3
	default:
		return 0, false
	}
	v, err := strconv.ParseFloat(s[:len(s)-1], 64)
	if err != nil {
		return 0, false
	}
	return uint64(v * mult), true
}
