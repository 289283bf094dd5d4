package ollama

import (
	"slices"
	"testing"

	"hearth/engine"
)

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
