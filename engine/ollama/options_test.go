package ollama

import (
	"reflect"
	"slices"
	"testing"

	"hearth/engine"
)

// TestAPIOptions: every sampling option set reaches the runtime by Ollama's name, and
// an unset one is left out (the model's own parameter applies).
func TestAPIOptions(t *testing.T) {
	temp, topP, k := 0.5, 0.9, 40
	got := apiOptions(engine.Options{ContextWindow: 4096, MaxTokens: 16, Temperature: &temp, TopP: &topP, TopK: &k})
	want := map[string]any{"num_ctx": 4096, "num_predict": 16, "temperature": 0.5, "top_p": 0.9, "top_k": 40}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("options %v, want %v", got, want)
	}
	if got := apiOptions(engine.Options{}); len(got) != 0 {
		t.Errorf("empty options %v", got)
	}
}

// TestAPIRequestSeedAndStop: a request's seed and stop strings reach the runtime's
// options; without a seed none is sent, so the runtime's own applies.
func TestAPIRequestSeedAndStop(t *testing.T) {
	seed := 42
	g := APIRequest(&engine.GenerateRequest{Options: engine.Options{Seed: &seed}, Stop: []string{"<|end|>", "END"}})
	if g.Options["seed"] != 42 || !slices.Equal(g.Options["stop"].([]string), []string{"<|end|>", "END"}) {
		t.Errorf("options %v, want seed 42 and both stops", g.Options)
	}
	if _, ok := APIRequest(&engine.GenerateRequest{}).Options["seed"]; ok {
		t.Error("a seed was sent for a request without one")
	}
}
