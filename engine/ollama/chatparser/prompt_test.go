package chatparser_test

import (
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/model/renderers"

	"hearth"
	// The renderers hearth renders these families with, registered with the runtime's
	// registry as the embedded runtime's chat finds them.
	_ "hearth/engine/ollama"
	"hearth/toolgrammar"
)

// TestStartInReasoningAfterMatchesPrompts: what models.json says of each chat_parsers
// family's template (prompt_opens, prompt_opens_after) is what its prompts do. For
// every renderer the format matches and every parser name it reads, with thinking on
// and off (unset for a parser without thinking), after a user message, a tool result
// and an assistant message to continue, the renderer the runtime's chat uses renders
// the prompt, and the adapter's decision without the prompt
// (Format.StartInReasoningAfter) must be the engine's from it (Format.StartInReasoning).
func TestStartInReasoningAfterMatchesPrompts(t *testing.T) {
	r, err := toolgrammar.LoadFormats(hearth.ModelsJSON)
	if err != nil {
		t.Fatal(err)
	}
	props := api.NewToolPropertiesMap()
	props.Set("city", api.ToolProperty{Type: api.PropertyType{"string"}})
	tools := []api.Tool{{Type: "function", Function: api.ToolFunction{Name: "get_weather",
		Parameters: api.ToolFunctionParameters{Type: "object", Properties: props, Required: []string{"city"}}}}}
	args := api.NewToolCallFunctionArguments()
	args.Set("city", "Paris")
	user := api.Message{Role: "user", Content: "Weather in Paris?"}
	conversations := []struct {
		last string
		msgs []api.Message
	}{
		{"user", []api.Message{user}},
		{"tool", []api.Message{user,
			{Role: "assistant", Content: "Let me check.", ToolCalls: []api.ToolCall{{Function: api.ToolCallFunction{Name: "get_weather", Arguments: args}}}},
			{Role: "tool", Content: "sunny, 21C", ToolName: "get_weather"}}},
		{"assistant", []api.Message{user, {Role: "assistant", Content: "It is"}}},
	}
	checked := 0
	missing := map[string]bool{}
	for _, f := range r.Formats() {
		for _, cp := range f.ChatParsers {
			thinks := []*api.ThinkValue{nil}
			if cp.Thinking {
				// The runtime's chat sets an unset think to true for a thinking model.
				thinks = []*api.ThinkValue{{Value: true}, {Value: false}}
			}
			for _, renderer := range f.Match.Renderers {
				for _, think := range thinks {
					for _, c := range conversations {
						prompt, err := renderers.RenderWithRenderer(renderer, c.msgs, tools, think)
						if err != nil {
							if strings.Contains(err.Error(), "unknown renderer") {
								// Its models cannot chat on this runtime at all.
								if !missing[renderer] {
									missing[renderer] = true
									t.Logf("%s: the runtime has no renderer %q", f.ID, renderer)
								}
								continue
							}
							t.Errorf("%s: renderer %s, parser %s, think %v, after %s: %v", f.ID, renderer, cp.Name, thinkValue(think), c.last, err)
							continue
						}
						requested := cp.Thinking && think.Bool()
						got, want := f.StartInReasoningAfter(c.last, requested), f.StartInReasoning(prompt, requested)
						if got != want {
							t.Errorf("%s: renderer %s, parser %s, think %v, after %s: starts in reasoning %v, the prompt says %v; it ends %q",
								f.ID, renderer, cp.Name, thinkValue(think), c.last, got, want, prompt[max(0, len(prompt)-60):])
						}
						checked++
					}
				}
			}
		}
	}
	t.Logf("%d prompts checked", checked)
}

func thinkValue(v *api.ThinkValue) any {
	if v == nil {
		return "unset"
	}
	return v.Value
}
