package laterrenderers

// laterParsers are the output parsers Ollama v0.32.15 knows and v0.24.0 does not
// (model/parsers/parsers.go). Each reads tool calls and thinking (HasToolSupport and
// HasThinkingSupport are true for all of them), so v0.32.15's server lists a model
// that names one as capable of "tools" and "thinking" (server/images.go,
// Capabilities), where v0.24.0's, which finds no such parser, lists neither.
var laterParsers = map[string]bool{
	"ornith":            true, // Qwen35Parser
	"nemotron-3.5-nano": true, // Nemotron3NanoParser
	"poolside-v1":       true, // LagunaV8Parser
	"cohere":            true, // CohereParser
	"glimmer":           true, // GlimmerParser
}

// ParserCapabilities returns the capabilities Ollama v0.32.15 gives a model for its
// parser when that parser is one v0.24.0 lacks ("tools" and "thinking"), nil for any
// other name (the module's own parsers are judged by the module).
func ParserCapabilities(parser string) []string {
	if laterParsers[parser] {
		return []string{"tools", "thinking"}
	}
	return nil
}
