package ollama

import (
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
	modeltypes "github.com/ollama/ollama/types/model"

	"hearth"
	"hearth/engine"
	"hearth/scriptmodel"
)

// prefixTurns is a conversation as hearth would replay it: each turn's
// history is the previous turns' input and output items. Turn 1 asks, the
// model answers with reasoning and two parallel calls (what the tools
// script model writes), turn 2 sends the results, the model answers, turn 3
// asks again.
func prefixTurns() (history [][]hearth.Item, input [][]hearth.Item) {
	ask := []hearth.Item{itUser("Weather and time in Paris?")}
	calls := []hearth.Item{
		itReasoning("I need the weather and the local time."),
		itCall("call_1", "get_weather", `{"city": "Paris"}`),
		itCall("call_2", "get_time", `{"timezone": "Europe/Paris"}`),
	}
	results := []hearth.Item{itOutput("call_1", "sunny"), itOutput("call_2", "noon")}
	answer := []hearth.Item{itAssistant(scriptmodel.ToolsAnswerText)}
	follow := []hearth.Item{itUser("And tomorrow?")}

	cat := func(parts ...[]hearth.Item) []hearth.Item {
		var out []hearth.Item
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	history = [][]hearth.Item{nil, cat(ask, calls), cat(ask, calls, results, answer)}
	input = [][]hearth.Item{ask, results, follow}
	return history, input
}

// TestRenderPromptPrefixStable: the prompt of turn N without its generation
// prompt (the text the template adds for the model's next turn) must be a
// prefix of the prompt of turn N+1, or the runtime's KV cache cannot reuse
// it. For the script template this holds on every turn. Where it breaks for
// the qwen3 template, the test pins the place and says why.
func TestRenderPromptPrefixStable(t *testing.T) {
	tools := []hearth.Tool{
		testFunctionTool("get_weather", `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
		testFunctionTool("get_time", `{"type":"object","properties":{"timezone":{"type":"string"}},"required":["timezone"]}`),
	}
	thinking := []modeltypes.Capability{modeltypes.CapabilityCompletion, modeltypes.CapabilityTools, modeltypes.CapabilityThinking}
	tests := []struct {
		name string
		show *api.ShowResponse
		// generation prompts the template ends a prompt with
		gen []string
		// breaks[i] is a text that must appear in turn i+1's prompt where it
		// stops being a prefix of turn i+2's ("" means stable).
		breaks []string
	}{
		{
			name:   "script template",
			show:   &api.ShowResponse{Template: scriptmodel.Template, Capabilities: thinking},
			gen:    []string{scriptmodel.EntryAssistant, scriptmodel.EntryAnswer},
			breaks: []string{"", ""},
		},
		{
			// Turn 1 -> 2 is stable. Turn 2 -> 3 breaks inside the FIRST user
			// message: with think set (a thinking model always has it set),
			// the template appends " /think" to the last user message only,
			// so it moves when a new user message comes. (Past that, it would
			// also drop the <think> of assistant turns before the last user
			// message.) Everything after the first question is evaluated
			// again on each new user turn.
			name:   "qwen3 template",
			show:   &api.ShowResponse{Template: qwen3ParityTemplate, Capabilities: thinking},
			gen:    []string{"<|im_start|>assistant\n"},
			breaks: []string{"", "Weather and time in Paris? /think<|im_end|>"},
		},
	}
	history, input := prefixTurns()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var prompts []string
			for i := range input {
				conv, err := engine.BuildConversation("", history[i], input[i], tools, NewRenderer(tt.show))
				if err != nil {
					t.Fatal(err)
				}
				p, err := RenderPrompt(tt.show, conv, nil)
				if err != nil {
					t.Fatal(err)
				}
				prompts = append(prompts, p)
			}
			for i := 0; i+1 < len(prompts); i++ {
				cur, next := prompts[i], prompts[i+1]
				stem := cur
				for _, g := range tt.gen {
					if s, ok := strings.CutSuffix(cur, g); ok {
						stem = s
						break
					}
				}
				if stem == cur {
					t.Fatalf("turn %d: prompt ends in none of the generation prompts %q:\n%s", i+1, tt.gen, cur)
				}
				n := commonPrefix(stem, next)
				if want := tt.breaks[i]; want == "" {
					if n != len(stem) {
						t.Errorf("turn %d -> %d: not a prefix; diverges after %q\n--- turn %d\n%s\n--- turn %d\n%s", i+1, i+2, tail(stem[:n], 40), i+1, cur, i+2, next)
					}
				} else {
					at := strings.Index(stem, want)
					if n == len(stem) || at < 0 || n < at || n >= at+len(want) {
						t.Errorf("turn %d -> %d: expected the break inside %q, diverges after %q", i+1, i+2, want, tail(stem[:n], 40))
					}
					t.Logf("turn %d -> %d: %d of %d bytes reusable; diverges after %q", i+1, i+2, n, len(stem), tail(stem[:n], 40))
				}
			}
		})
	}
}

// TestRenderPromptReplaysOutputExactly documents how far a rendered
// assistant turn matches what the model generated: the KV cache holds the
// generated tokens, and the next prompt renders them back from items. The
// script template renders reasoning and calls back exactly except for the
// arguments JSON: the template layer re-serialises arguments with Go's
// encoding/json (keys sorted, no spaces, <>& escaped), so a model that
// writes {"city": "Paris"} sees {"city":"Paris"} next turn, and the cache
// stops at the first call's arguments.
func TestRenderPromptReplaysOutputExactly(t *testing.T) {
	show := &api.ShowResponse{Template: scriptmodel.Template, Capabilities: []modeltypes.Capability{modeltypes.CapabilityCompletion, modeltypes.CapabilityTools, modeltypes.CapabilityThinking}}
	history, input := prefixTurns()
	render := func(i int) string {
		conv, err := engine.BuildConversation("", history[i], input[i], nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		p, err := RenderPrompt(show, conv, nil)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// What the runtime holds after turn 1: the prompt plus the generated text.
	cached := render(0) + scriptmodel.ToolsText
	next := render(1)
	n := commonPrefix(cached, next)
	const breakAfter = `{"name": "get_weather", "arguments": {"city":`
	if !strings.HasSuffix(cached[:n], breakAfter) {
		t.Errorf("replayed turn diverges after %q; expected right after %q\n--- cached\n%s\n--- next\n%s", tail(cached[:n], 60), breakAfter, cached, next)
	}
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
