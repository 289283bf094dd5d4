package ollama

import (
	"reflect"
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
