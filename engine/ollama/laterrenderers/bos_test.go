package laterrenderers

import (
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/model/renderers"
)

// TestLeadingBOSIsWhatTheRendererWrites: the module's renderers (v0.24.0's, without a
// LeadingBOS of their own) start a prompt with the text bos.go gives for them, as do
// the renderers of this package that write one, the overrides included. (Not every renderer writes its
// LeadingBOS: v0.32.15's cohere renderer names "<BOS_TOKEN>" and writes none; a
// runtime takes the text off only where the prompt starts with it.)
func TestLeadingBOSIsWhatTheRendererWrites(t *testing.T) {
	msgs := []api.Message{{Role: "user", Content: "Hello"}}
	names := []string{"qwen3.8", "ornith", "nemotron-3.5-nano", "poolside-v1"}
	names = append(names, Overrides()...)
	for name := range moduleLeadingBOS {
		names = append(names, name)
	}
	for _, name := range names {
		prompt, err := renderers.RenderWithRenderer(name, msgs, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		bos := LeadingBOS(name)
		if !strings.HasPrefix(prompt, bos) {
			t.Errorf("%s: the prompt starts %q, not with its LeadingBOS %q", name, prompt[:min(len(prompt), 40)], bos)
		}
	}
	for _, name := range []string{"poolside-v1", "laguna", "gemma4", "gemma4-small", "gemma4-large", "lfm2", "lfm2-thinking", "functiongemma", "cohere"} {
		if LeadingBOS(name) == "" {
			t.Errorf("%s: no LeadingBOS", name)
		}
	}
	for _, name := range []string{"qwen3.8", "qwen3.5", "no-such-renderer"} {
		if bos := LeadingBOS(name); bos != "" {
			t.Errorf("%s: LeadingBOS %q, want none", name, bos)
		}
	}
}
