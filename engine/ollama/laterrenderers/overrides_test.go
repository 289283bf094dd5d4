package laterrenderers

import (
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/model/renderers"
)

// TestOverridesReplaceTheModulesRenderer: rendering one of Overrides through the
// module's registry (what hearth and the embedded server call) gives v0.32.15's
// prompt, in a conversation where v0.24.0's renderer of that name writes another one.
// Each case names what v0.32.15 corrected; with the override not registered, v0.24.0's
// renderer answers and the case fails.
func TestOverridesReplaceTheModulesRenderer(t *testing.T) {
	weather := []api.Tool{{Type: "function", Function: api.ToolFunction{
		Name: "get_weather", Description: "Get weather",
		Parameters: api.ToolFunctionParameters{Type: "object", Required: []string{"city"},
			Properties: propsMap(`{"city":{"type":"string","description":"City"}}`)},
	}}}
	call := api.ToolCall{ID: "call_1", Function: api.ToolCallFunction{Name: "get_weather", Arguments: args(`{"city":"Paris"}`)}}
	loop := []api.Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "Weather in Paris?"},
		{Role: "assistant", Thinking: "I should call the tool.", ToolCalls: []api.ToolCall{call}},
		{Role: "tool", Content: "sunny", ToolName: "get_weather", ToolCallID: "call_1"},
	}
	answered := append(append([]api.Message(nil), loop...),
		api.Message{Role: "assistant", Thinking: "Got it.", Content: "Sunny."},
		api.Message{Role: "user", Content: "Thanks"})
	on, off := &api.ThinkValue{Value: true}, &api.ThinkValue{Value: false}

	cases := []struct {
		renderer string
		msgs     []api.Message
		think    *api.ThinkValue
		check    func(prompt string) bool
		what     string
	}{
		{"laguna", answered, off, func(p string) bool {
			return strings.Contains(p, "<arg_key>argument-key</arg_key>") && !strings.Contains(p, `{"name": <function-name>`) &&
				strings.HasSuffix(p, "<assistant>\n</think>")
		}, "the system block describes the <arg_key> call syntax, and the generation prompt closes the reasoning when not thinking"},
		{"laguna", answered, on, func(p string) bool {
			return strings.Contains(p, "<think>\nI should call the tool.\n</think>\n") && strings.HasSuffix(p, "<assistant>\n<think>")
		}, "past reasoning on lines of its own, and the generation prompt opens the reasoning when thinking"},
		{"nemotron-3-nano", answered, on, func(p string) bool {
			return strings.HasPrefix(p, "<|im_start|>system\n")
		}, "no blank lines before the system turn"},
		{"lfm2-thinking", answered, on, func(p string) bool {
			return strings.Contains(p, "<think>Got it.</think>Sunny.<|im_end|>")
		}, "the last assistant turn's reasoning rendered in its <think> block"},
		{"lfm2", answered, on, func(p string) bool {
			return !strings.Contains(p, "<think>")
		}, "the non-thinking variant never writes <think>"},
		{"gemma4", loop, on, func(p string) bool {
			return strings.HasSuffix(p, "<|channel>thought\n")
		}, "after a tool result, a thinking prompt opens the thought channel"},
		{"gemma4-small", loop, on, func(p string) bool {
			return strings.HasSuffix(p, "<|channel>thought\n")
		}, "after a tool result, a thinking prompt opens the thought channel"},
		{"gemma4-large", loop, on, func(p string) bool {
			return strings.HasSuffix(p, "<|channel>thought\n")
		}, "after a tool result, a thinking prompt opens the thought channel"},
		{"qwen3.5", []api.Message{{Role: "user", Content: "Hi"}}, &api.ThinkValue{}, func(p string) bool {
			return strings.HasSuffix(p, "<|im_start|>assistant\n<think>\n")
		}, "a think value without a value is the renderer's default (thinking), not off"},
	}
	for _, c := range cases {
		got, err := renderers.RenderWithRenderer(c.renderer, c.msgs, weather, c.think)
		if err != nil {
			t.Fatalf("%s: %v", c.renderer, err)
		}
		if !c.check(got) {
			t.Errorf("%s: not v0.32.15's prompt (%s):\n%s", c.renderer, c.what, got)
		}
		want, err := build(c.renderer)().Render(c.msgs, weather, c.think)
		if err != nil {
			t.Fatalf("%s: %v", c.renderer, err)
		}
		if got != want {
			t.Errorf("%s: the registry's prompt is not this package's renderer's:\n%s\n--- want\n%s", c.renderer, got, want)
		}
	}
	// A name is new or an override, never both.
	for _, name := range Overrides() {
		if _, ok := later[name]; ok {
			t.Errorf("%s: both a new name and an override", name)
		}
	}
}
