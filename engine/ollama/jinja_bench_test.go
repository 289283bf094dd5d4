package ollama

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/model/renderers"

	"hearth/engine/chattemplate"
)

// benchFamily is a models.json format with hearth's template for it and the name of
// the renderer that renders that family's prompts today (the first of its
// match.renderers), looked up in the runtime module's registry by name so that the
// comparison holds whichever package registers it.
type benchFamily struct {
	id, renderer string
	tmpl         *chattemplate.Template
}

func benchFamilies(b *testing.B) []benchFamily {
	b.Helper()
	raw, err := os.ReadFile("../../models.json")
	if err != nil {
		b.Fatal(err)
	}
	var models struct {
		Formats []struct {
			ID    string `json:"id"`
			Match struct {
				Renderers []string `json:"renderers"`
			} `json:"match"`
		} `json:"formats"`
	}
	if err := json.Unmarshal(raw, &models); err != nil {
		b.Fatal(err)
	}
	var out []benchFamily
	for _, f := range models.Formats {
		// The family's template: embedded beside chattemplate, or (before they were
		// embedded) in its test data.
		src, err := os.ReadFile(filepath.Join("..", "chattemplate", "templates", f.ID+".jinja"))
		if os.IsNotExist(err) {
			src, err = os.ReadFile(filepath.Join("..", "chattemplate", "testdata", "templates", f.ID+".jinja"))
		}
		if os.IsNotExist(err) {
			continue // a format without a template (the emulated one)
		} else if err != nil {
			b.Fatal(err)
		}
		tmpl, err := chattemplate.Compile(string(src))
		if err != nil {
			b.Fatalf("%s: %v", f.ID, err)
		}
		fam := benchFamily{id: f.ID, tmpl: tmpl}
		if len(f.Match.Renderers) > 0 {
			fam.renderer = f.Match.Renderers[0]
		}
		out = append(out, fam)
	}
	return out
}

// benchTurn is the conversation an agent loop renders at turn n, in both shapes: a
// system message, n-1 finished turns (a question, a tool call, its result and an answer
// with reasoning), and the question of turn n.
func benchTurn(b *testing.B, n int) (chattemplate.Inputs, []api.Message, []api.Tool) {
	b.Helper()
	const args = `{"city": "Paris", "unit": "celsius"}`
	const params = `{"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}`
	reasoning := "The tool said 21."
	in := chattemplate.Inputs{AddGenerationPrompt: true, BOSToken: "<s>", EOSToken: "</s>",
		Now: time.Date(2026, 7, 4, 9, 30, 0, 0, time.UTC)}
	sys := "You are a careful assistant. Answer briefly."
	in.Messages = append(in.Messages, chattemplate.Message{Role: "system", Content: chattemplate.Content{Text: sys}})
	msgs := []api.Message{{Role: "system", Content: sys}}
	var callArgs api.ToolCallFunctionArguments
	if err := json.Unmarshal([]byte(args), &callArgs); err != nil {
		b.Fatal(err)
	}
	for i := range n - 1 {
		q := fmt.Sprintf("Question %d: what is the weather in Paris today?", i)
		id := fmt.Sprintf("call_%d", i)
		call := chattemplate.ToolCall{ID: id, Type: "function"}
		call.Function.Name, call.Function.Arguments = "get_weather", json.RawMessage(args)
		in.Messages = append(in.Messages,
			chattemplate.Message{Role: "user", Content: chattemplate.Content{Text: q}},
			chattemplate.Message{Role: "assistant", ToolCalls: []chattemplate.ToolCall{call}},
			chattemplate.Message{Role: "tool", ToolCallID: id, Name: "get_weather", Content: chattemplate.Content{Text: `{"temperature": 21, "sky": "clear"}`}},
			chattemplate.Message{Role: "assistant", Content: chattemplate.Content{Text: "It is 21 °C and clear."}, ReasoningContent: &reasoning})
		msgs = append(msgs,
			api.Message{Role: "user", Content: q},
			api.Message{Role: "assistant", ToolCalls: []api.ToolCall{{ID: id, Function: api.ToolCallFunction{Name: "get_weather", Arguments: callArgs}}}},
			api.Message{Role: "tool", ToolCallID: id, ToolName: "get_weather", Content: `{"temperature": 21, "sky": "clear"}`},
			api.Message{Role: "assistant", Content: "It is 21 °C and clear.", Thinking: reasoning})
	}
	in.Messages = append(in.Messages, chattemplate.Message{Role: "user", Content: chattemplate.Content{Text: "And tomorrow?"}})
	msgs = append(msgs, api.Message{Role: "user", Content: "And tomorrow?"})
	tool := chattemplate.Tool{Type: "function"}
	tool.Function.Name, tool.Function.Description = "get_weather", "Current weather for a city."
	tool.Function.Parameters = json.RawMessage(params)
	in.Tools = []chattemplate.Tool{tool}
	var apiTool api.Tool
	if err := json.Unmarshal([]byte(`{"type": "function", "function": {"name": "get_weather", "description": "Current weather for a city.", "parameters": `+params+`}}`), &apiTool); err != nil {
		b.Fatal(err)
	}
	return in, msgs, []api.Tool{apiTool}
}

// BenchmarkFamilyRender is the time to render one turn's whole prompt per family at
// turn 1, turn 2 and turn 1,000 of an agent loop (4,002 messages), by the family's Jinja
// template (engine/chattemplate) and by the renderer that renders it today, the one
// the runtime module's registry has under the family's renderer name (a family without
// one, or a name the registry no longer knows, has only the Jinja side). Turn 2 (six
// messages) is about the size of each of the two reduced conversations the incremental
// renderer (incremental.go) renders at any later turn instead of the whole one, so twice
// its time is what a spliced turn 1,000 pays for rendering.
//
//	go test ./engine/ollama -run '^$' -bench FamilyRender -benchtime 20x
func BenchmarkFamilyRender(b *testing.B) {
	families := benchFamilies(b)
	for _, turn := range []int{1, 2, 1000} {
		in, msgs, tools := benchTurn(b, turn)
		for _, f := range families {
			b.Run(fmt.Sprintf("turn=%d/%s/jinja", turn, f.id), func(b *testing.B) {
				if _, err := f.tmpl.Render(in); err != nil {
					b.Skipf("the template does not render this conversation: %v", err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := f.tmpl.Render(in); err != nil {
						b.Fatal(err)
					}
				}
			})
			if f.renderer == "" {
				continue
			}
			b.Run(fmt.Sprintf("turn=%d/%s/renderer", turn, f.id), func(b *testing.B) {
				if _, err := renderers.RenderWithRenderer(f.renderer, msgs, tools, nil); err != nil {
					b.Skipf("renderer %q: %v", f.renderer, err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := renderers.RenderWithRenderer(f.renderer, msgs, tools, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
