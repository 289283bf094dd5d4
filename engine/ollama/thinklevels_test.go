package ollama

import (
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/types/model"

	"hearth"
	"hearth/engine"
)

// TestThinkLevelsReachTheRenderer: reasoning.effort, through the format's thinking
// levels, renders what the families' templates write for the think value: Qwen 3.8's
// effort sentence in the system turn and Nemotron 3.5's efficient mode, with none
// rendering no reasoning.
func TestThinkLevelsReachTheRenderer(t *testing.T) {
	const (
		low   = "Think briefly before answering."
		xhigh = "Think thoroughly before answering."
	)
	conv, err := engine.BuildConversation("", nil, []hearth.Item{itUser("Hello")}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		renderer, parser, effort string
		has, hasNot              []string
		end                      string
	}{
		{"qwen3.8", "qwen3.5", "", nil, []string{low, xhigh}, "<think>\n"},
		{"qwen3.8", "qwen3.5", "none", nil, []string{low, xhigh}, "<think>\n\n</think>\n\n"},
		{"qwen3.8", "qwen3.5", "minimal", []string{low}, []string{xhigh}, "<think>\n"},
		{"qwen3.8", "qwen3.5", "low", []string{low}, []string{xhigh}, "<think>\n"},
		{"qwen3.8", "qwen3.5", "medium", nil, []string{low, xhigh}, "<think>\n"},
		{"qwen3.8", "qwen3.5", "high", []string{xhigh}, []string{low}, "<think>\n"},
		{"qwen3.8", "qwen3.5", "max", []string{xhigh}, []string{low}, "<think>\n"},
		{"nemotron-3.5-nano", "nemotron-3.5-nano", "", nil, []string{"efficient"}, "<think>\n"},
		{"nemotron-3.5-nano", "nemotron-3.5-nano", "medium", []string{"Hello {reasoning effort: efficient}"}, nil, "<think>\n"},
		{"nemotron-3.5-nano", "nemotron-3.5-nano", "high", nil, []string{"efficient"}, "<think>\n"},
		{"nemotron-3.5-nano", "nemotron-3.5-nano", "none", nil, []string{"efficient"}, "<think></think>"},
	} {
		format := engine.DefaultFormats().Lookup(c.renderer)
		setting := format.Thinking.ForEffort(c.effort)
		// The engine's choice of think value (engine/thinking.go): the level, else the bool.
		var think *api.ThinkValue
		switch {
		case setting.Level != "":
			think = &api.ThinkValue{Value: setting.Level}
		case setting.Think != nil:
			think = &api.ThinkValue{Value: *setting.Think}
		}
		show := &api.ShowResponse{Renderer: c.renderer, Parser: c.parser,
			Capabilities: []model.Capability{model.CapabilityCompletion, model.CapabilityThinking}}
		prompt, err := RenderPrompt(show, conv, think)
		if err != nil {
			t.Fatalf("%s %q: %v", c.renderer, c.effort, err)
		}
		for _, s := range c.has {
			if !strings.Contains(prompt, s) {
				t.Errorf("%s %q: no %q in %q", c.renderer, c.effort, s, prompt)
			}
		}
		for _, s := range c.hasNot {
			if strings.Contains(prompt, s) {
				t.Errorf("%s %q: %q in %q", c.renderer, c.effort, s, prompt)
			}
		}
		if !strings.HasSuffix(prompt, c.end) {
			t.Errorf("%s %q: the prompt ends %q, want %q", c.renderer, c.effort, prompt[max(0, len(prompt)-30):], c.end)
		}
	}
}
