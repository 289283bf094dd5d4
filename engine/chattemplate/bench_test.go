package chattemplate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// benchConversation is a conversation of about n messages (n when n-2 is a multiple of
// four) as an agent loop makes it: a system
// message, then turns of a question, a tool call, its result and an answer with reasoning.
func benchConversation(n int) Inputs {
	str := func(s string) *string { return &s }
	msgs := []Message{{Role: "system", Content: Content{Text: "You are a careful assistant. Answer briefly."}}}
	for i := range (n - 2) / 4 {
		msgs = append(msgs, Message{Role: "user", Content: Content{Text: fmt.Sprintf("Question %d: what is the weather in Paris today?", i)}})
		call := ToolCall{ID: fmt.Sprintf("call_%d", i), Type: "function"}
		call.Function.Name = "get_weather"
		call.Function.Arguments = json.RawMessage(`{"city": "Paris", "unit": "celsius"}`)
		msgs = append(msgs,
			Message{Role: "assistant", ToolCalls: []ToolCall{call}},
			Message{Role: "tool", ToolCallID: call.ID, Name: "get_weather", Content: Content{Text: `{"temperature": 21, "sky": "clear"}`}},
			Message{Role: "assistant", Content: Content{Text: "It is 21 °C and clear."}, ReasoningContent: str("The tool said 21.")})
	}
	// End on a user turn: the prompt every turn renders.
	msgs = append(msgs, Message{Role: "user", Content: Content{Text: "And tomorrow?"}})
	tool := Tool{Type: "function"}
	tool.Function.Name = "get_weather"
	tool.Function.Description = "Current weather for a city."
	tool.Function.Parameters = json.RawMessage(`{"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}`)
	return Inputs{Messages: msgs, Tools: []Tool{tool}, AddGenerationPrompt: true, BOSToken: "<s>", EOSToken: "</s>",
		Now: time.Date(2026, 7, 4, 9, 30, 0, 0, time.UTC)}
}

// BenchmarkRender is the time to render one turn's prompt per family, at turn 1 (two
// messages) and at turn 250 of an agent loop (a 1,002-message conversation); the template is compiled
// once, as a model's is.
func BenchmarkRender(b *testing.B) {
	paths, _ := filepath.Glob(filepath.Join("templates", "*.jinja"))
	for _, n := range []int{2, 1002} {
		in := benchConversation(n)
		for _, path := range paths {
			family := strings.TrimSuffix(filepath.Base(path), ".jinja")
			src, err := os.ReadFile(path)
			if err != nil {
				b.Fatal(err)
			}
			tmpl, err := Compile(string(src))
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("messages=%d/%s", n, family), func(b *testing.B) {
				if _, err := tmpl.Render(in); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := tmpl.Render(in); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkCompile is the cost Compile's cache saves on every turn after the first.
func BenchmarkCompile(b *testing.B) {
	src, err := os.ReadFile(filepath.Join("templates", "qwen3.jinja"))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("uncached", func(b *testing.B) {
		for b.Loop() {
			if _, err := compile(string(src)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			if _, err := Compile(string(src)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
