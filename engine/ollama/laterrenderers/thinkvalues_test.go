package laterrenderers

import "github.com/ollama/ollama/api"

// thinkTrue and thinkFalse are defined in Ollama v0.32.15's gemma4_reference_test.go,
// which this package does not carry (gemma4 is the module's own renderer); the
// Nemotron reference tests use them.

func thinkTrue() *api.ThinkValue {
	return &api.ThinkValue{Value: true}
}

func thinkFalse() *api.ThinkValue {
	return &api.ThinkValue{Value: false}
}
